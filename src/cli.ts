import { mkdirSync } from 'node:fs'
import { basename } from 'node:path'
import { parseArgs } from 'node:util'
import { Value } from '@sinclair/typebox/value'
import { type Config, ConfigError, loadConfig } from './config'
import { localChangeFeed } from './db/changes'
import { closeDatabase, type Db, openDatabase, openServiceDatabase, run } from './db/client'
import { copyDatabase } from './db/copy'
import { DataDirLockedError, lockDataDir } from './db/lock'
import { closePgDatabase, openPgDatabase } from './db/pg'
import type { User } from './db/schema'
import { DomainError } from './errors'
import { sessionTokens } from './http/auth'
import { sha256Hex } from './lib/crypto'
import { loadJwtSecret, loadVariantSecret } from './lib/secrets'
import { localMedia, MediaError } from './media'
import { createNsfwClassifier } from './moderation'
import { findUserByName, setUserFields } from './modules/auth/repository'
import { type AuthService, createAuthService } from './modules/auth/service'
import { type BlockService, createBlockService } from './modules/blocks/service'
import { isImageId } from './modules/images/model'
import { createPhashBackfill } from './modules/images/phash-backfill'
import { createImageService } from './modules/images/service'
import { createUploadPipeline } from './modules/images/upload'
import { createImporter, type ImportStep } from './modules/import/service'
import { VariantRequest } from './modules/variants/model'
import { signedVariantPath } from './modules/variants/signing'
import { backup, restore } from './ops/backup'
import { checkIntegrity } from './ops/check'
import { migrateToBucket } from './ops/migrate'
import { seed } from './ops/seed'
import type { Storage } from './storage'
import { createConfiguredStorage } from './storage/configured'
import { createS3Storage } from './storage/s3'
import { VERSION } from './version'
import { mediaOptionsOf, mediaPoolFor } from './workers/media-pool'

const USAGE = `Usage: bun run cli <command> [arguments]

  create-admin <username> <email> <password>   create an admin account (email already verified)
  create-user <username> <email> <password>    create an account (email already verified; any REGISTRATION)
  set-role <username> <user|admin>              change an account's role
  ban <username> | unban <username>             ban or unban an account (a ban ends its sessions)
  verify-email <username>                       mark an account's email as verified
  backup <directory | file.tar>                 consistent online copy of the database and image files
  restore <directory | file.tar>                restore a backup into DATA_DIR (stop the server first), or into
                                                DATABASE_URL's database when set (it must be empty)
  migrate-db [file.sqlite]                      copy DATA_DIR's SQLite database (or the file named) into
                                                DATABASE_URL's PostgreSQL database, which must be empty
  check [--repair]                              every row has its files, every file a row, and the image
                                                counts a recount of the rows; --repair remakes missing
                                                thumbnails, removes stray files, rewrites wrong counts
  import <dir> --user <username> [--album <title>] [--visibility public|private] [--dry-run] [--map <file.csv>]
                                                import every image under <dir> into the account (the server may
                                                be running); a JSON summary on stdout, exit 2 if any file failed
  migrate-storage                               copy every file of DATA_DIR/files into the bucket of the S3_*
                                                variables (resumable; sizes verified); then set STORAGE=s3
  block <file> [--reason <text>]                block the picture in <file> from being uploaded (its perceptual hash
                                                and SHA-256; the server picks it up at its next upload)
  import-blocklist <file>                       block the perceptual hashes in <file>, one 16-hex-digit hash a line
                                                (blank lines and # comments skipped; bad lines reported, exit 2)
  rehash                                        give a perceptual hash to every image stored without one (before
                                                version 0008's blocklist); the server also does it in the background
  sign-variant <id> --width <px> [--height <px>] [--fit inside|cover|contain|fill] --format webp|avif|jpg|png
                                                print a signed URL of the image resized (as POST
                                                /api/v1/image/:id/variants answers it)
  seed <rows> [--from <image id>] [--files link|none]
                                                FOR MEASURING ONLY: add <rows> made-up images cloned from one upload
                                                (default the newest with an owner, whose account owns half), with
                                                made-up accounts, albums and reports (bench/README.md)
  version (also --version)                      print the version

Reads the same environment as the server (DATA_DIR, STORAGE, S3_*).`

function fail(message: string): never {
  console.error(message)
  process.exit(1)
}

function parseOrFail<O extends Record<string, { type: 'string' | 'boolean' }>>(args: string[], options: O) {
  try {
    return parseArgs({ args, allowPositionals: true, options })
  } catch (error) {
    return fail(`${(error as Error).message}\n\n${USAGE}`)
  }
}

const importArgs = (args: string[]) =>
  parseOrFail(args, {
    user: { type: 'string' },
    album: { type: 'string' },
    visibility: { type: 'string' },
    'dry-run': { type: 'boolean' },
    map: { type: 'string' },
  })

/** What a dry run would do with a file, one line each. */
const planned = (step: ImportStep) =>
  step.action === 'import'
    ? `would import ${step.path}`
    : step.action === 'duplicate'
      ? `would skip ${step.path}: already imported${step.id ? ` as ${step.id}` : ' (same bytes as a file before it)'}`
      : `would skip ${step.path}: not an image`

/** The signed URL of `sign-variant`, checked against the endpoint's own schema. */
function signVariant(config: Config, args: string[]): string {
  let parsed: ReturnType<typeof parseArgs<{ allowPositionals: true; options: Record<string, { type: 'string' }> }>>
  try {
    const options = {
      width: { type: 'string' },
      height: { type: 'string' },
      fit: { type: 'string' },
      format: { type: 'string' },
    } as const
    parsed = parseArgs({ args, allowPositionals: true, options })
  } catch (error) {
    return fail(`${(error as Error).message}\n\n${USAGE}`)
  }
  const [id] = parsed.positionals
  const { width, height, fit, format } = parsed.values
  const body = {
    width: Number(width),
    ...(height === undefined ? {} : { height: Number(height) }),
    ...(fit === undefined ? {} : { fit }),
    format,
  }
  if (!id || !isImageId(id)) fail(`Not an image id: ${id ?? '(none)'}\n\n${USAGE}`)
  if (!Value.Check(VariantRequest, body))
    fail(`${[...Value.Errors(VariantRequest, body)][0]?.message ?? 'invalid'}\n\n${USAGE}`)
  const spec = { width: body.width, height: body.height, fit: body.fit ?? 'inside', format: body.format }
  return `${config.site.cdnUrl}${signedVariantPath(loadVariantSecret(config), id!, spec)}`
}

/** What every command that works on the database is handed. */
interface Context {
  config: Config
  db: Db
  auth: AuthService
  storage: () => Storage
  blocklist: () => BlockService
  /** The account named, or the command fails. */
  byName: (name: string | undefined) => Promise<User>
  /** Changes the account named and prints what changed. */
  update: (name: string | undefined, changes: Partial<User>) => Promise<User>
}

type Command = (ctx: Context, args: string[]) => Promise<void>

/** Runs without the service database open: a restore writes it. */
async function restoreCommand(config: Config, args: string[]) {
  if (!args[0]) fail(USAGE)
  const database = config.database.url ? await openPgDatabase(config.database.url) : undefined
  try {
    await restore({
      source: args[0],
      dataDir: config.paths.dataDir,
      storage: () => createConfiguredStorage(config),
      database,
    })
  } finally {
    if (database) await closePgDatabase(database)
  }
  console.log(`Restored ${args[0]} into ${config.database.url ? 'the PostgreSQL database' : config.paths.dataDir}`)
}

async function migrateDbCommand(config: Config, args: string[]) {
  // SQLite to PostgreSQL: the data directory's file (or the one named) into DATABASE_URL's database, which must be
  // empty. Every row, ids and counters as they are; the search index is built by PostgreSQL's triggers.
  if (!config.database.url) fail('migrate-db copies into PostgreSQL: set DATABASE_URL')
  if (args.length > 1) fail(USAGE)
  const source = args[0] ?? config.paths.sqliteFile
  if (!(await Bun.file(source).exists())) fail(`No such SQLite file: ${source}`)
  // The server must not run on it meanwhile: rows written during the copy would be left behind.
  const lock = args[0] ? null : lockDataDir(config.paths.dataDir, 'migrate-db refused')
  const from = openDatabase(source)
  const to = await openPgDatabase(config.database.url)
  try {
    const copied = await copyDatabase({ engine: 'sqlite', db: from }, { engine: 'pg', db: to })
    for (const [table, rows] of Object.entries(copied)) console.log(`${table}: ${rows} rows`)
    console.log(`Copied ${source} into PostgreSQL; run \`imghost check\` to compare the rows with the stored files.`)
  } finally {
    from.$client.close()
    await closePgDatabase(to)
    lock?.release()
  }
}

const createUser =
  (role: 'admin' | 'user'): Command =>
  async ({ auth }, args) => {
    const [username, email, password] = args
    if (!username || !email || !password) fail(USAGE)
    const user = await auth.createUser({ username, email, password, role, emailVerified: true })
    console.log(`Created ${role} ${user.username} (id ${user.id})`)
  }

async function setRole({ update }: Context, args: string[]) {
  const role = args[1]
  if (role !== 'user' && role !== 'admin') fail('Role must be "user" or "admin"')
  await update(args[0], { role })
}

async function backupCommand({ db, storage, config }: Context, args: string[]) {
  if (!args[0]) fail(USAGE)
  const result = await backup({ db, storage: storage(), dataDir: config.paths.dataDir, target: args[0] })
  console.log(`Backed up ${result.images} images to ${args[0]}`)
  for (const key of result.missing) console.log(`missing (deleted during the backup?): ${key}`)
}

async function checkCommand({ db, storage, config }: Context, args: string[]) {
  const report = await checkIntegrity({
    db,
    storage: storage(),
    media: localMedia(mediaOptionsOf(config)),
    repair: args.includes('--repair'),
  })
  console.log(JSON.stringify(report, null, 2))
  const problems =
    report.missingOriginals.length +
    report.missingThumbnails.length -
    report.repairedThumbnails.length +
    report.strayFiles.length -
    report.removedStrayFiles.length +
    report.wrongCountDays -
    report.repairedCountDays +
    report.wrongAlbumCounts -
    report.repairedAlbumCounts
  if (problems > 0) process.exitCode = 2
}

async function importCommand({ db, config, storage, blocklist, byName }: Context, args: string[]) {
  const { values, positionals } = importArgs(args)
  if (positionals.length !== 1) fail(USAGE)
  const user = await byName(values.user)
  const media = mediaPoolFor(config)
  const classifier = createNsfwClassifier({
    timeoutMs: config.nsfw.timeoutMs,
    maxQueue: config.nsfw.maxQueue,
    backend: config.nsfw.backend,
  })
  try {
    const store = storage()
    const images = createImageService({ db, config, storage: store, changes: localChangeFeed(db) })
    const pipeline = createUploadPipeline({
      db,
      config,
      storage: store,
      media,
      classifier,
      thresholds: config.nsfw.thresholds,
      blocks: blocklist(),
      images,
    })
    const importFolder = createImporter({ db, pipeline, tmpDir: config.paths.tmpDir })
    const tty = process.stderr.isTTY
    const summary = await importFolder(
      {
        dir: positionals[0]!,
        user,
        album: values.album,
        visibility: values.visibility,
        dryRun: values['dry-run'],
        mapFile: values.map,
      },
      (step, done, total, s) => {
        if (values['dry-run'] && step.action !== 'failed') console.error(planned(step))
        else if (tty)
          process.stderr.write(
            `\r\x1b[K${done}/${total} files: ${s.imported} imported, ${s.skipped} skipped, ${s.failed} failed`,
          )
      },
    )
    if (tty && !values['dry-run']) process.stderr.write('\n')
    console.error(
      summary.quotaIgnored
        ? `${user.username} is an admin: no storage quota, upload window or file size limit was applied.`
        : `${user.username}'s storage quota, upload window and file size limit applied; a file they refused failed.`,
    )
    console.log(JSON.stringify(summary, null, 2))
    if (summary.failed > 0) process.exitCode = 2
  } finally {
    await media.close()
    await classifier.close()
  }
}

async function blockCommand({ db, config, blocklist }: Context, args: string[]) {
  const { values, positionals } = parseOrFail(args, { reason: { type: 'string' } })
  const file = positionals[0]
  if (positionals.length !== 1 || !file) fail(USAGE)
  if (!(await Bun.file(file).exists())) fail(`No such file: ${file}`)
  let phash: string | null
  try {
    phash = await localMedia(mediaOptionsOf(config)).perceptualHash(file)
  } catch (error) {
    if (error instanceof MediaError) fail(`${file}: ${error.message}`)
    throw error
  }
  const sha256 = sha256Hex(await Bun.file(file).bytes())
  const id = await run(
    blocklist().record(db, {
      phash,
      sha256s: [sha256],
      reason: values.reason?.trim() || `cli block ${basename(file)}`,
      source: 'cli',
    }),
  )
  console.log(
    phash
      ? `Blocked ${file} as block ${id}: perceptual hash ${phash}, SHA-256 ${sha256}`
      : `Blocked ${file} as block ${id} by its SHA-256 ${sha256} only: the picture is too plain for a perceptual hash`,
  )
}

async function importBlocklist({ blocklist }: Context, args: string[]) {
  if (args.length !== 1) fail(USAGE)
  const file = Bun.file(args[0]!)
  if (!(await file.exists())) fail(`No such file: ${args[0]}`)
  const result = await blocklist().importHashes(await file.text(), `imported from ${basename(args[0]!)}`)
  for (const bad of result.bad) console.error(`line ${bad.line}: not a 16-hex-digit hash: ${bad.text}`)
  console.log(
    `${result.added} hashes blocked, ${result.alreadyBlocked} already blocked, ${result.bad.length} bad lines skipped`,
  )
  if (result.bad.length > 0) process.exitCode = 2
}

async function rehash({ db, config, storage }: Context, args: string[]) {
  if (args.length !== 0) fail(USAGE)
  const media = mediaPoolFor(config)
  try {
    const backfill = createPhashBackfill({ db, storage: storage(), media, tmpDir: config.paths.tmpDir })
    const counts = await backfill.runToEnd()
    console.log(`${counts.hashed} images hashed, ${counts.plain} too plain to hash, ${counts.failed} could not be read`)
    if (counts.failed > 0) process.exitCode = 2
  } finally {
    await media.close()
  }
}

async function migrateStorage({ config }: Context) {
  const s3 = config.storage.s3
  for (const [name, value] of [
    ['S3_BUCKET', s3.bucket],
    ['S3_ACCESS_KEY_ID', s3.accessKeyId],
    ['S3_SECRET_ACCESS_KEY', s3.secretAccessKey],
  ]) {
    if (!value) fail(`Missing value for ${name}: migrate-storage copies into the bucket the S3_* variables name`)
  }
  const target = createS3Storage(s3)
  const where = `${s3.endpoint || 'AWS S3'} bucket ${s3.bucket}${s3.prefix ? ` under ${s3.prefix}` : ''}`
  console.log(`Copying ${config.paths.filesDir} to ${where}`)
  const report = await migrateToBucket({
    filesDir: config.paths.filesDir,
    target,
    onProgress: (done, r) => {
      if (done % 500 === 0 || done === r.files)
        console.log(
          `${done}/${r.files} files (${r.copied} copied, ${r.skipped} already there, ${r.failed.length} failed)`,
        )
    },
  })
  for (const failure of report.failed) console.error(`failed: ${failure.key}: ${failure.error}`)
  console.log(
    `${report.files} files: ${report.copied} copied (${(report.bytesCopied / 1048576).toFixed(1)} MB), ${report.skipped} already in the bucket, ${report.failed.length} failed.`,
  )
  if (report.failed.length > 0) {
    console.log('Run migrate-storage again: it copies only what is missing.')
    process.exitCode = 2
  } else {
    console.log(
      'Next: stop the server, run migrate-storage once more (it copies only files uploaded since), then start it with STORAGE=s3 ' +
        'and the same S3_* variables. `bun run cli check` (with STORAGE=s3) verifies every image has its files in the bucket; ' +
        `${config.paths.filesDir} is no longer read and can be removed after that.`,
    )
  }
}

async function seedCommand({ db, storage }: Context, args: string[]) {
  const { values, positionals } = parseOrFail(args, { from: { type: 'string' }, files: { type: 'string' } })
  const rows = Number(positionals[0])
  if (positionals.length !== 1 || !Number.isSafeInteger(rows) || rows < 1) fail(USAGE)
  const files = values.files ?? 'link'
  if (files !== 'link' && files !== 'none') fail('--files must be link or none')
  if (values.from !== undefined && !isImageId(values.from)) fail(`Not an image id: ${values.from}`)
  const tty = process.stderr.isTTY
  const report = await seed(db, storage(), { rows, from: values.from, files }, (done, total) => {
    if (tty) process.stderr.write(`\r\x1b[K${done}/${total} rows`)
  })
  if (tty) process.stderr.write('\n')
  console.log(JSON.stringify(report))
}

const COMMANDS: Record<string, Command> = {
  'create-admin': createUser('admin'),
  'create-user': createUser('user'),
  'set-role': setRole,
  // The running server reads sessions on every request: they end at once.
  ban: async ({ auth, update }, args) => auth.endAllSessions((await update(args[0], { banned: true })).id),
  unban: async ({ update }, args) => void (await update(args[0], { banned: false })),
  'verify-email': async ({ update }, args) => void (await update(args[0], { emailVerified: true })),
  backup: backupCommand,
  check: checkCommand,
  import: importCommand,
  block: blockCommand,
  'import-blocklist': importBlocklist,
  rehash,
  'migrate-storage': migrateStorage,
  seed: seedCommand,
}

/** Opens the database and the services the commands share. */
async function openContext(config: Config): Promise<Context> {
  mkdirSync(config.paths.dataDir, { recursive: true })
  const db = await openServiceDatabase({
    databaseUrl: config.database.url,
    sqlitePath: config.paths.sqliteFile,
  })
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
  const byName = async (name: string | undefined) => {
    if (!name) fail(USAGE)
    return (await run(findUserByName(db, name))) ?? fail(`No account named ${name}`)
  }
  const update = async (name: string | undefined, changes: Partial<User>) => {
    const user = await byName(name)
    await run(setUserFields(db, user.id, changes))
    console.log(`${user.username}: ${JSON.stringify(changes)}`)
    return user
  }
  return { config, db, auth, storage, blocklist, byName, update }
}

async function main(argv: string[]) {
  const [command, ...args] = argv
  if (!command || command === 'help' || command === '--help') return console.log(USAGE)
  // Before the configuration is read: the version is asked of any install, configured or not.
  if (command === 'version' || command === '--version') return console.log(VERSION)

  const config = loadConfig()
  if (command === 'sign-variant') return console.log(signVariant(config, args))
  if (command === 'restore') return restoreCommand(config, args)
  if (command === 'migrate-db') return migrateDbCommand(config, args)
  const ctx = await openContext(config)
  try {
    const handler = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined
    if (!handler) fail(`Unknown command: ${command}\n\n${USAGE}`)
    await handler(ctx, args)
  } catch (error) {
    if (error instanceof DomainError) fail(error.message)
    throw error
  } finally {
    await closeDatabase(ctx.db)
  }
}

try {
  await main(process.argv.slice(2))
} catch (error) {
  if (error instanceof ConfigError || error instanceof DataDirLockedError) fail(error.message)
  throw error
}
