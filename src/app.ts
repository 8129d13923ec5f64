import { Elysia } from 'elysia'
import type { Config } from './config'
import type { Db } from './db/client'
import { authGuard } from './http/auth'
import { clientIp } from './http/client-ip'
import { errorModel } from './http/errors'
import { apiDocs } from './http/openapi'
import { adminModule } from './modules/admin'
import { createAdminService } from './modules/admin/service'
import { authModule } from './modules/auth'
import type { Mailer } from './modules/auth/mailer'
import { createAuthService } from './modules/auth/service'
import { healthModule } from './modules/health'

export interface AppDeps {
  config: Config
  db: Db
  mailer: Mailer
  jwtSecret: string
}

/** Composes every feature into one Elysia app; tests build the app through this too. */
export function createApp(deps: AppDeps) {
  const auth = createAuthService(deps.db, deps.mailer)
  const guard = authGuard(auth, deps.jwtSecret)
  const services = { auth, admin: createAdminService(deps.db) }

  const app = new Elysia()
    .use(errorModel)
    .use(clientIp(deps.config.trustProxy))
    .use(apiDocs(deps.config.siteName))
    .use(healthModule(deps.db))
    .use(authModule(auth, guard))
    .use(adminModule(services.admin, guard))

  return { app, services }
}
