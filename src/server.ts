import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { createApp, type AppDeps } from './app'
import type { Config } from './config'
import { closeDatabase, openDatabase } from './db/client'
import { loadJwtSecret } from './lib/secrets'
import { createMailer } from './modules/auth/mailer'

export type ServerOverrides = Partial<Omit<AppDeps, 'config' | 'db'>>

/** Opens the data directory and database, builds the app and listens; `stop` shuts everything down cleanly. */
export async function startServer(config: Config, overrides: ServerOverrides = {}) {
  mkdirSync(config.dataDir, { recursive: true })
  const db = openDatabase(join(config.dataDir, 'imghost.sqlite'))
  const deps: AppDeps = {
    config,
    db,
    mailer: overrides.mailer ?? createMailer({ smtpUrl: config.smtp.url, from: config.smtp.from, publicUrl: config.publicUrl, siteName: config.siteName }),
    jwtSecret: overrides.jwtSecret ?? loadJwtSecret(config),
  }
  const { app, services } = createApp(deps)
  await services.auth.ensureAdmin(config.admin)
  app.listen({ port: config.port, hostname: '0.0.0.0', maxRequestBodySize: Number.MAX_SAFE_INTEGER })

  return {
    app,
    services,
    db,
    port: app.server!.port,
    async stop() {
      // Stop accepting, let in-flight requests finish, then close the database.
      await app.stop(false)
      closeDatabase(db)
    },
  }
}
