import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { eq, sql } from 'drizzle-orm'
import { ConfigError, loadConfig } from './config'
import { closeDatabase, openDatabase } from './db/client'
import { users } from './db/schema'
import { HttpError } from './http/errors'
import { createMediaProcessor } from './media/processor'
import { createAuthService } from './modules/auth/service'
import { backup, restore } from './ops/backup'
import { checkIntegrity } from './ops/check'
import { createConfiguredStorage } from './storage/configured'

const USAGE = `Usage: bun run cli <command> [arguments]

  create-admin <username> <email> <password>   create an admin account (email already verified)
  set-role <username> <user|admin>              change an account's role
  ban <username> | unban <username>             ban or unban an account
  verify-email <username>                       mark an account's email as verified
  backup <directory | file.tar>                 consistent online copy of the database and image files
  restore <directory | file.tar>                restore a backup into DATA_DIR (stop the server first)
  check [--repair]                              every row has its files and every file a row;
                                                --repair remakes missing thumbnails, removes stray files

Reads the same environment as the server (DATA_DIR).`

function fail(message: string): never {
  console.error(message)
  process.exit(1)
}

async function main(argv: string[]) {
  const [command, ...args] = argv
  if (!command || command === 'help' || command === '--help') return console.log(USAGE)

  const config = loadConfig()
  if (command === 'restore') {
    if (!args[0]) fail(USAGE)
    await restore({ source: args[0], dataDir: config.dataDir })
    return console.log(`Restored ${args[0]} into ${config.dataDir}`)
  }
  mkdirSync(config.dataDir, { recursive: true })
  const db = openDatabase(join(config.dataDir, 'imghost.sqlite'))
  const auth = createAuthService(db, { async sendVerification() {} })
  const storage = () => createConfiguredStorage(config)
  const byName = (name: string | undefined) => {
    if (!name) fail(USAGE)
    return db.select().from(users).where(sql`lower(${users.username}) = lower(${name})`).get() ?? fail(`No account named ${name}`)
  }
  const update = (name: string | undefined, changes: Partial<typeof users.$inferInsert>) => {
    const user = byName(name)
    db.update(users).set(changes).where(eq(users.id, user.id)).run()
    console.log(`${user.username}: ${JSON.stringify(changes)}`)
  }

  try {
    switch (command) {
      case 'create-admin': {
        const [username, email, password] = args
        if (!username || !email || !password) fail(USAGE)
        const user = await auth.createUser({ username, email, password, role: 'admin', emailVerified: true })
        console.log(`Created admin ${user.username} (id ${user.id})`)
        break
      }
      case 'set-role': {
        const role = args[1]
        if (role !== 'user' && role !== 'admin') fail('Role must be "user" or "admin"')
        update(args[0], { role })
        break
      }
      case 'ban':
        update(args[0], { banned: true })
        break
      case 'unban':
        update(args[0], { banned: false })
        break
      case 'verify-email':
        update(args[0], { emailVerified: true })
        break
      case 'backup': {
        if (!args[0]) fail(USAGE)
        const result = await backup({ db, storage: storage(), dataDir: config.dataDir, target: args[0] })
        console.log(`Backed up ${result.images} images to ${args[0]}`)
        for (const key of result.missing) console.log(`missing (deleted during the backup?): ${key}`)
        break
      }
      case 'check': {
        const report = await checkIntegrity({ db, storage: storage(), media: createMediaProcessor({ maxPixels: config.limits.maxPixels }), repair: args.includes('--repair') })
        console.log(JSON.stringify(report, null, 2))
        const problems = report.missingOriginals.length + report.missingThumbnails.length - report.repairedThumbnails.length + report.strayFiles.length - report.removedStrayFiles.length
        if (problems > 0) process.exitCode = 2
        break
      }
      default:
        fail(`Unknown command: ${command}\n\n${USAGE}`)
    }
  } catch (error) {
    if (error instanceof HttpError) fail(error.message)
    throw error
  } finally {
    closeDatabase(db)
  }
}

try {
  await main(process.argv.slice(2))
} catch (error) {
  if (error instanceof ConfigError) fail(error.message)
  throw error
}
