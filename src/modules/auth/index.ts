import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { accountRoutes } from './account-routes'
import type { AccountExport } from './export'
import { keyRoutes } from './key-routes'
import type { AccountLeave } from './leave'
import { leaveRoutes } from './leave-routes'
import type { OidcService } from './oidc'
import { oidcRoutes } from './oidc-routes'
import { resetRoutes } from './reset-routes'
import type { AuthService } from './service'
import { sessionRoutes } from './session-routes'
import type { TotpService } from './totp'
import { totpRoutes } from './totp-routes'

/** `oidc`: single sign-on when configured; `oidcOnly`: password login refused (403), the provider is the only way in. */
export function authModule(
  auth: AuthService,
  guard: ReturnType<typeof authGuard>,
  opts: {
    totp: TotpService
    oidc: OidcService | null
    oidcOnly: boolean
    secureCookie: boolean
    /** The account's export and deletion. */
    leave: { exportData: AccountExport; leave: AccountLeave }
  },
) {
  const app = new Elysia({ name: 'module-auth' })
    .use(guard)
    .use(totpRoutes(opts.totp, guard))
    .use(sessionRoutes(auth, guard, opts))
    .use(resetRoutes(auth, guard))
    .use(accountRoutes(auth, guard))
    .use(keyRoutes(auth, guard))
    .use(leaveRoutes(opts.leave, guard))
  return opts.oidc ? app.use(oidcRoutes(opts.oidc, auth, guard, { secureCookie: opts.secureCookie })) : app
}
