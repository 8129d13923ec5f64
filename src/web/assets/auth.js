// Log in (with a two-factor code step, a passkey, or through single sign-on), register, verify an email address,
// reset a forgotten password, log out. The JWT from login or register is kept in localStorage.
;(() => {
  'use strict'
  if (!window.imghost) return
  const { api, setToken, passkeys, formError } = window.imghost

  /**
   * Where to go after logging in: the page's `data-next`, the server's check of ?next= (src/http/next-path.ts: a path of
   * this site, never another host), else the dashboard. Prefixed with this origin, so even a path that began `//` could
   * not name another host.
   */
  function nextPath() {
    const next = document.querySelector('[data-next]')?.dataset.next || '/dashboard'
    return location.origin + next
  }

  function wire(form, submit) {
    const button = form.querySelector('button[type="submit"]')
    button.disabled = false
    const label = button.textContent
    form.addEventListener('submit', async (event) => {
      event.preventDefault()
      formError(form, '')
      button.disabled = true
      button.textContent = 'Please wait…'
      try {
        await submit(new FormData(form))
      } finally {
        button.disabled = false
        button.textContent = label
      }
    })
  }

  const login = document.querySelector('[data-auth-form="login"]')
  if (login) {
    const totpStep = login.querySelector('[data-totp-step]')
    // At the two-factor step, a passkey of the account in place of the code: the challenge comes with each 401 that
    // asks for the second factor (the server makes one only after the right password).
    const secondPasskey = document.getElementById('login-second-passkey')
    let passkeyOptions = null
    const answer = (res) => {
      if (res.ok) {
        setToken(res.data.token)
        return location.assign(nextPath())
      }
      if (res.data.twoFactor !== 'totp') return formError(login, res.data.error)
      // The password was right: the account asks for its second factor next.
      const asked = totpStep.hidden
      totpStep.hidden = false
      passkeyOptions = res.data.passkeyOptions || null
      secondPasskey.hidden = !(passkeyOptions && passkeys?.supported())
      login.elements.code.required = true
      login.elements.code.value = ''
      login.elements.code.focus()
      const prompt = `Enter the code from your authenticator app${secondPasskey.hidden ? '' : ', or use a passkey'}.`
      return formError(login, asked ? prompt : res.data.error)
    }
    const credentials = () => ({ username: login.elements.username.value, password: login.elements.password.value })
    wire(login, async (data) => {
      const body = credentials()
      const code = String(data.get('code') || '').trim()
      if (!totpStep.hidden && code) body.code = code
      answer(await api('/api/auth/login', { method: 'POST', auth: false, body }))
    })
    secondPasskey.addEventListener('click', async () => {
      formError(login, '')
      secondPasskey.disabled = true
      try {
        let passkey
        try {
          passkey = await passkeys.get(passkeyOptions)
        } catch (error) {
          return formError(login, passkeys.failure(error))
        }
        answer(await api('/api/auth/login', { method: 'POST', auth: false, body: { ...credentials(), passkey } }))
      } finally {
        secondPasskey.disabled = false
      }
    })
  }

  // Signing in with a passkey: no username, the browser offers the passkeys it holds for this site.
  const passkeyLogin = document.getElementById('passkey-login')
  if (login && passkeyLogin && passkeys?.supported()) {
    passkeyLogin.hidden = false
    const button = document.getElementById('passkey-button')
    button.addEventListener('click', async () => {
      formError(login, '')
      button.disabled = true
      try {
        const options = await api('/api/auth/passkeys/login/options', { method: 'POST', auth: false })
        if (!options.ok) return formError(login, options.data.error)
        let response
        try {
          response = await passkeys.get(options.data.options)
        } catch (error) {
          return formError(login, passkeys.failure(error))
        }
        const res = await api('/api/auth/passkeys/login', { method: 'POST', auth: false, body: { response } })
        if (!res.ok) return formError(login, res.data.error)
        setToken(res.data.token)
        location.assign(nextPath())
      } finally {
        button.disabled = false
      }
    })
  }

  // Single sign-on: the button keeps the checked next path (the server writes it into its link), and the provider's
  // sign-in comes back here with the session token (or why it was refused) in the fragment, which no server sees; it
  // leaves the address bar (and the history) at once.
  const sso = document.getElementById('sso-start')
  if (sso) {
    const handed = new URLSearchParams(location.hash.slice(1))
    if (handed.has('token') || handed.has('error')) {
      history.replaceState(null, '', location.pathname + location.search)
      if (handed.get('token')) {
        setToken(handed.get('token'))
        location.assign(nextPath())
      } else {
        const box = document.querySelector('[data-sso-error]')
        box.textContent = handed.get('error')
        box.hidden = false
      }
    }
  }

  const register = document.querySelector('[data-auth-form="register"]')
  if (register) {
    // REGISTRATION=invite: an invite's link carries its code.
    const inviteField = document.getElementById('register-invite')
    const code = new URLSearchParams(location.search).get('invite')
    if (inviteField && code) inviteField.value = code
    wire(register, async (data) => {
      const body = { username: data.get('username'), email: data.get('email'), password: data.get('password') }
      if (inviteField) body.invite = String(data.get('invite') || '').trim()
      const res = await api('/api/auth/register', { method: 'POST', auth: false, body })
      if (!res.ok) return formError(register, res.data.error)
      setToken(res.data.token)
      location.assign('/dashboard?welcome=1')
    })
  }

  const verify = document.querySelector('[data-auth-form="verify"]')
  if (verify) {
    const status = document.getElementById('verify-status')
    const next = document.getElementById('verify-next')
    const check = async (token) => {
      status.textContent = 'Checking your token…'
      const res = await api('/api/auth/verify-email', { method: 'POST', auth: false, body: { token } })
      if (res.ok) {
        status.textContent = 'Your email address is verified. Your account now has the verified storage limit.'
        verify.hidden = true
        next.hidden = false
        return true
      }
      status.textContent = 'This token did not work.'
      formError(
        verify,
        `${res.data.error}. It may be mistyped, used already, or older than 48 hours: request a new one from your dashboard.`,
      )
      return false
    }
    wire(verify, (data) => check(String(data.get('token') || '').trim()))
    const token = new URLSearchParams(location.search).get('token')
    if (token) {
      document.getElementById('verify-token').value = token
      // The token leaves the address bar (and so the history) once read.
      history.replaceState(null, '', location.pathname)
      check(token)
    }
  }

  const forgot = document.querySelector('[data-auth-form="forgot"]')
  if (forgot) {
    wire(forgot, async (data) => {
      const res = await api('/api/auth/forgot', { method: 'POST', auth: false, body: { email: data.get('email') } })
      if (!res.ok) return formError(forgot, res.data.error)
      forgot.hidden = true
      document.getElementById('forgot-sent').hidden = false
    })
  }

  const reset = document.querySelector('[data-auth-form="reset"]')
  if (reset) {
    const tokenField = document.getElementById('reset-token')
    const token = new URLSearchParams(location.search).get('token')
    if (token) {
      tokenField.value = token
      // The token leaves the address bar (and so the history) once read.
      history.replaceState(null, '', location.pathname)
    }
    wire(reset, async (data) => {
      const body = { token: String(data.get('token') || '').trim(), newPassword: data.get('newPassword') }
      const res = await api('/api/auth/reset', { method: 'POST', auth: false, body })
      if (!res.ok) {
        const hint = res.status === 400 && /token/i.test(res.data.error) ? ': ask for a new link' : ''
        return formError(reset, `${res.data.error}${hint}.`)
      }
      // Every session ended, this browser's too.
      setToken(null)
      reset.hidden = true
      document.getElementById('reset-done').hidden = false
    })
  }

  if (document.getElementById('logout')) {
    // Ends the session on the server too, so the token stops working wherever a copy of it is.
    if (window.imghost.token()) api('/api/auth/logout', { method: 'POST' })
    setToken(null)
    for (const link of document.querySelectorAll('.site-header [data-auth]'))
      link.hidden = link.getAttribute('data-auth') === 'in'
  }
})()
