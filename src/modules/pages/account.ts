import type { Config } from '../../config'
import { sameSitePath } from '../../http/next-path'
import { html, type SafeHtml } from '../../web/html'
import type { PageRenderer } from '../../web/page'
import { CODE_MAX, PASSWORD_LENGTH, USERNAME_LENGTH, USERNAME_PATTERN } from '../auth/model'

/**
 * The account pages: log in, register, email verification, log out (the dashboard is in dashboard.ts). They are
 * shells: the JSON API does the work from auth.js and dashboard.js (plus a script per tab), with the JWT kept in
 * localStorage. Submit buttons start disabled and are enabled by the script, so a form never posts credentials
 * anywhere without it.
 */

export const needsScript = html`<noscript><p class="error">This page needs JavaScript.</p></noscript>`

function authPage(
  renderer: PageRenderer,
  config: Config,
  title: string,
  body: SafeHtml,
  scripts = ['auth.js'],
): Response {
  return renderer.respond({
    title: `${title} · ${config.site.name}`,
    body,
    scripts,
    bodyClass: 'auth-page',
    noindex: true,
  })
}

/**
 * An account page that is one section, headed by the page's title; `next`: where auth.js goes after signing in.
 */
function sectionPage(
  renderer: PageRenderer,
  config: Config,
  section: { id: string; title: string; kind: 'auth-form card' | 'notice'; next?: string },
  content: SafeHtml,
): Response {
  const { id, title, kind, next } = section
  return authPage(
    renderer,
    config,
    title,
    html`<section class="${kind}" id="${id}"${next === undefined ? '' : html` data-next="${next}"`}>
<h1>${title}</h1>
${content}
</section>`,
  )
}

/**
 * The login page. `next` (its `?next=`) is checked here (sameSitePath) and handed on only as a path of this site: in
 * `data-next`, where auth.js goes after signing in, and in the single sign-on link, which brings it back.
 */
export function renderLogin(renderer: PageRenderer, config: Config, next: string | undefined): Response {
  const path = sameSitePath(next) ?? ''
  const start = `/api/auth/oidc/start${path ? `?next=${encodeURIComponent(path)}` : ''}`
  const sso =
    config.auth.oidc &&
    html`<p class="actions"><a class="button secondary" id="sso-start" href="${start}">Sign in with ${config.auth.oidc.name}</a></p>`
  // With OIDC_ONLY the provider is the only way in: no password form to fill in vain.
  if (config.auth.oidc?.only)
    return sectionPage(
      renderer,
      config,
      { id: 'login-sso', title: 'Log in', kind: 'auth-form card', next: path },
      html`<p class="error" data-sso-error role="alert" hidden></p>
${sso}`,
    )
  return authPage(
    renderer,
    config,
    'Log in',
    html`<form class="auth-form card" id="login-form" data-auth-form="login" data-next="${path}">
<h1>Log in</h1>
<label for="login-username">Username or email</label>
<input id="login-username" name="username" type="text" autocomplete="username" required autofocus>
<label for="login-password">Password</label>
<input id="login-password" name="password" type="password" autocomplete="current-password" required>
<div id="login-totp" data-totp-step hidden>
<label for="login-code">Two-factor code</label>
<input id="login-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="${CODE_MAX}" aria-describedby="login-code-hint">
<p class="muted small" id="login-code-hint">The 6-digit code from your authenticator app, or one of your recovery codes.</p>
<button type="button" class="secondary" id="login-second-passkey" hidden>Use a passkey instead</button>
</div>
<p class="error" data-form-error data-sso-error role="alert" hidden></p>
<button type="submit" disabled>Log in</button>
<div class="passkey-login" id="passkey-login" hidden>
<p class="muted">or, without a password:</p>
<button type="button" class="secondary" id="passkey-button">Sign in with a passkey</button>
</div>
${sso}
<p class="muted"><a href="/forgot">Forgot your password?</a></p>
${config.auth.registration === 'closed' ? '' : html`<p class="muted">No account yet? <a href="/register">Create one</a></p>`}
${needsScript}
</form>`,
    // The passkey button appears only where the browser can use one (auth.js asks passkeys.js).
    ['passkeys.js', 'auth.js'],
  )
}

const newPasswordHint = (id: string) =>
  html`<p class="muted small" id="${id}">At least ${PASSWORD_LENGTH.min} characters.</p>`

/** REGISTRATION=closed: no form, only where accounts come from. */
function renderRegistrationClosed(renderer: PageRenderer, config: Config): Response {
  return sectionPage(
    renderer,
    config,
    { id: 'registration-closed', title: 'Registration is closed', kind: 'notice' },
    html`<p class="muted">New accounts on ${config.site.name} are created by an administrator. Ask one for an account.</p>
<p class="actions center"><a class="button" href="/login">Log in</a> <a class="button secondary" href="/">Upload anonymously</a></p>`,
  )
}

/** OIDC_ONLY: the first sign-in with the provider makes the account; there is no form to fill in vain. */
function renderRegisterThroughProvider(renderer: PageRenderer, config: Config, provider: string): Response {
  return sectionPage(
    renderer,
    config,
    { id: 'registration-sso', title: 'Create an account', kind: 'notice' },
    html`<p class="muted">Accounts on ${config.site.name} are made by signing in with ${provider}: your first sign-in creates yours.</p>
<p class="actions center"><a class="button" href="/api/auth/oidc/start">Sign in with ${provider}</a></p>`,
  )
}

export function renderRegister(renderer: PageRenderer, config: Config): Response {
  if (config.auth.registration === 'closed') return renderRegistrationClosed(renderer, config)
  if (config.auth.oidc?.only) return renderRegisterThroughProvider(renderer, config, config.auth.oidc.name)
  // REGISTRATION=invite: the code field, filled in by auth.js from ?invite= (the link of an invite).
  const invite =
    config.auth.registration === 'invite'
      ? html`<label for="register-invite">Invite code</label>
<input id="register-invite" name="invite" type="text" autocomplete="off" required maxlength="128" aria-describedby="register-invite-hint">
<p class="muted small" id="register-invite-hint">Registration here is by invitation: paste the code an administrator gave you.</p>
`
      : ''
  return authPage(
    renderer,
    config,
    'Create an account',
    html`<form class="auth-form card" id="register-form" data-auth-form="register">
<h1>Create an account</h1>
${invite}<label for="register-username">Username</label>
<input id="register-username" name="username" type="text" autocomplete="username" required minlength="${USERNAME_LENGTH.min}" maxlength="${USERNAME_LENGTH.max}" pattern="${USERNAME_PATTERN}" aria-describedby="register-username-hint" autofocus>
<p class="muted small" id="register-username-hint">${USERNAME_LENGTH.min} to ${USERNAME_LENGTH.max} letters, digits, _ or -. Shown on your public profile.</p>
<label for="register-email">Email</label>
<input id="register-email" name="email" type="email" autocomplete="email" required>
<label for="register-password">Password</label>
<input id="register-password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_LENGTH.min}" maxlength="${PASSWORD_LENGTH.max}" aria-describedby="register-password-hint">
${newPasswordHint('register-password-hint')}
<p class="error" data-form-error role="alert" hidden></p>
<button type="submit" disabled>Create account</button>
<p class="muted">Already registered? <a href="/login">Log in</a></p>
${needsScript}
</form>`,
  )
}

export function renderVerify(renderer: PageRenderer, config: Config): Response {
  return sectionPage(
    renderer,
    config,
    { id: 'verify', title: 'Verify your email', kind: 'auth-form card' },
    html`<p id="verify-status" role="status" aria-live="polite">Paste the token from your verification email.</p>
<form id="verify-form" data-auth-form="verify">
<label for="verify-token">Verification token</label>
<input id="verify-token" name="token" type="text" autocomplete="off" required>
<p class="error" data-form-error role="alert" hidden></p>
<button type="submit" disabled>Verify</button>
</form>
<p id="verify-next" hidden><a class="button" href="/dashboard">Go to your dashboard</a></p>
${needsScript}`,
  )
}

export function renderForgot(renderer: PageRenderer, config: Config): Response {
  return sectionPage(
    renderer,
    config,
    { id: 'forgot', title: 'Forgot your password', kind: 'auth-form card' },
    html`<form id="forgot-form" data-auth-form="forgot">
<p class="muted">Enter the email address of your account: we send it a link to choose a new password. The link works once, for 1 hour.</p>
<label for="forgot-email">Email</label>
<input id="forgot-email" name="email" type="email" autocomplete="email" required maxlength="254" autofocus>
<p class="error" data-form-error role="alert" hidden></p>
<button type="submit" disabled>Send the link</button>
</form>
<p id="forgot-sent" role="status" aria-live="polite" hidden>If an account has this address, a link to reset its password is on its way. Check your inbox (and spam folder).</p>
<p class="muted"><a href="/login">Back to log in</a></p>
${needsScript}`,
  )
}

export function renderReset(renderer: PageRenderer, config: Config): Response {
  return sectionPage(
    renderer,
    config,
    { id: 'reset', title: 'Choose a new password', kind: 'auth-form card' },
    html`<form id="reset-form" data-auth-form="reset">
<label for="reset-token">Reset token</label>
<input id="reset-token" name="token" type="text" autocomplete="off" required maxlength="128">
<label for="reset-password">New password</label>
<input id="reset-password" name="newPassword" type="password" autocomplete="new-password" required minlength="${PASSWORD_LENGTH.min}" maxlength="${PASSWORD_LENGTH.max}" aria-describedby="reset-password-hint">
${newPasswordHint('reset-password-hint')}
<p class="error" data-form-error role="alert" hidden></p>
<button type="submit" disabled>Set the new password</button>
</form>
<p id="reset-done" role="status" aria-live="polite" hidden>Your password is changed, and every session of your account has ended. <a href="/login">Log in</a> with the new password.</p>
${needsScript}`,
  )
}

export function renderLogout(renderer: PageRenderer, config: Config): Response {
  return sectionPage(
    renderer,
    config,
    { id: 'logout', title: 'Logged out', kind: 'notice' },
    html`<p class="muted" role="status">You are logged out on this browser.</p>
<p class="actions center"><a class="button" href="/login">Log in again</a> <a class="button secondary" href="/">Upload anonymously</a></p>`,
  )
}
