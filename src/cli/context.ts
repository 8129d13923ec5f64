import { mkdirSync } from 'node:fs'
import { type Config, loadConfig } from '../config'
import { closeDatabase, type Db, openServiceDatabase, run } from '../db/client'
import type { User } from '../db/schema'
import { sessionTokens } from '../http/auth'
import { loadJwtSecret } from '../lib/secrets'
import { findUserByName, setUserFields } from '../modules/auth/repository'
import { type AuthService, createAuthService } from '../modules/auth/service'
import { type BlockService, createBlockService } from '../modules/blocks/service'
import type { Storage } from '../storage'
import { createConfiguredStorage } from '../storage/configured'

/** A refusal the command explains in its message: printed as one line, exit 1 (or `exitCode`). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message)
  }
}

/** What every command that works on the database is handed. */
export interface Context {
  config: Config
  db: Db
  auth: AuthService
  storage: () => Storage
  blocklist: () => BlockService
  /** The account named, or the command fails. */
  byName: (name: string) => Promise<User>
  /** Changes the account named and prints what changed. */
  update: (name: string, changes: Partial<User>) => Promise<User>
}

/** Opens the database and the services the commands share. */
async function openContext(config: Config): Promise<Context> {
  mkdirSync(config.paths.dataDir, { recursive: true })
  const db = await openServiceDatabase({ databaseUrl: config.database.url, sqlitePath: config.paths.sqliteFile })
  // The CLI creates accounts but neither mails nor signs in.
  const auth = createAuthService(
    db,
    { async sendVerification() {}, async sendPasswordReset() {} },
    {
      guesses: config.limits.guesses,
      registration: config.auth.registration,
      tokens: sessionTokens(loadJwtSecret(config)),
    },
  )
  const storage = () => createConfiguredStorage(config)
  const blocklist = () =>
    createBlockService({
      db,
      storage: storage(),
      maxDistance: config.blocks.hammingDistance,
      publicUrl: config.site.publicUrl,
    })
  const byName = async (name: string) => {
    const user = await run(findUserByName(db, name))
    if (!user) throw new CliError(`No account named ${name}`)
    return user
  }
  const update = async (name: string, changes: Partial<User>) => {
    const user = await byName(name)
    await run(setUserFields(db, user.id, changes))
    console.log(`${user.username}: ${JSON.stringify(changes)}`)
    return user
  }
  return { config, db, auth, storage, blocklist, byName, update }
}

/**
 * An action run with the database open, closed after it whatever happens. The configuration is read here, when the
 * command runs, so `--help` and usage errors need none.
 */
export const withContext =
  <A extends unknown[]>(action: (ctx: Context, ...args: A) => Promise<void>) =>
  async (...args: A) => {
    const ctx = await openContext(loadConfig())
    try {
      await action(ctx, ...args)
    } finally {
      await closeDatabase(ctx.db)
    }
  }
