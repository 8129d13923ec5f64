import type { Command } from 'commander'
import { loadConfig } from '../config'
import { openDatabase } from '../db/client'
import { copyDatabase, countRows } from '../db/copy'
import { lockDataDir } from '../db/lock'
import { closePgDatabase, openPgDatabase } from '../db/pg'
import { localMedia } from '../media'
import { backup, restore } from '../ops/backup'
import { checkIntegrity } from '../ops/check'
import { migrateToBucket } from '../ops/migrate'
import { upgrade } from '../ops/upgrade'
import { createConfiguredStorage } from '../storage/configured'
import { createS3Storage } from '../storage/s3'
import { mediaOptionsOf } from '../workers/media-pool'
import { CliError, type Context, withContext } from './context'
import { progress } from './progress'

type Json = { json?: boolean }

/** The summary for scripts (`--json`) or the sentence for people. */
const report = (options: Json, summary: object, sentence: string) =>
  console.log(options.json ? JSON.stringify(summary) : sentence)

async function backupCommand({ db, storage, config }: Context, target: string, options: Json) {
  const bar = progress('backup')
  const result = await backup({
    db,
    storage: storage(),
    dataDir: config.paths.dataDir,
    target,
    onProgress: (done, total) => bar.update(done, total),
  })
  bar.end()
  report(options, { target, ...result }, `Backed up ${result.images} images to ${target}`)
  if (!options.json) for (const key of result.missing) console.log(`missing (deleted during the backup?): ${key}`)
}

/** Runs without the service database open: a restore writes it. */
async function restoreCommand(source: string, options: Json) {
  const config = loadConfig()
  const database = config.database.url ? await openPgDatabase(config.database.url) : undefined
  const bar = progress('restore')
  try {
    await restore({
      source,
      dataDir: config.paths.dataDir,
      storage: () => createConfiguredStorage(config),
      database,
      onProgress: (done, total) => bar.update(done, total),
    })
  } finally {
    bar.end()
    if (database) await closePgDatabase(database)
  }
  const into = config.database.url ? 'the PostgreSQL database' : config.paths.dataDir
  report(options, { source, into }, `Restored ${source} into ${into}`)
}

async function migrateDbCommand(file: string | undefined, options: Json) {
  // SQLite to PostgreSQL: the data directory's file (or the one named) into DATABASE_URL's database, which must be
  // empty. Every row, ids and counters as they are; the search index is built by PostgreSQL's triggers.
  const config = loadConfig()
  if (!config.database.url) throw new CliError('migrate-db copies into PostgreSQL: set DATABASE_URL')
  const source = file ?? config.paths.sqliteFile
  if (!(await Bun.file(source).exists())) throw new CliError(`No such SQLite file: ${source}`)
  // The server must not run on it meanwhile: rows written during the copy would be left behind.
  const lock = file ? null : lockDataDir(config.paths.dataDir, 'migrate-db refused')
  const from = openDatabase(source)
  const to = await openPgDatabase(config.database.url)
  const bar = progress('migrate-db')
  try {
    const total = Object.values(await countRows({ engine: 'sqlite', db: from })).reduce((a, b) => a + b, 0)
    let done = 0
    const copied = await copyDatabase(
      { engine: 'sqlite', db: from },
      { engine: 'pg', db: to },
      {
        onBatch: (table, rows) => {
          done += rows
          bar.update(done, total, table)
        },
      },
    )
    bar.end()
    if (options.json) console.log(JSON.stringify({ source, rows: copied }))
    else {
      for (const [table, rows] of Object.entries(copied)) console.log(`${table}: ${rows} rows`)
      console.log(`Copied ${source} into PostgreSQL; run \`imghost check\` to compare the rows with the stored files.`)
    }
  } finally {
    bar.end()
    from.$client.close()
    await closePgDatabase(to)
    lock?.release()
  }
}

async function checkCommand({ db, storage, config }: Context, options: { repair?: boolean }) {
  const bar = progress('check')
  const result = await checkIntegrity({
    db,
    storage: storage(),
    media: localMedia(mediaOptionsOf(config)),
    repair: options.repair === true,
    onProgress: (done, total) => bar.update(done, total),
  })
  bar.end()
  console.log(JSON.stringify(result, null, 2))
  const problems =
    result.missingOriginals.length +
    result.missingThumbnails.length -
    result.repairedThumbnails.length +
    result.strayFiles.length -
    result.removedStrayFiles.length +
    result.wrongCountDays -
    result.repairedCountDays +
    result.wrongAlbumCounts -
    result.repairedAlbumCounts
  if (problems > 0) process.exitCode = 2
}

async function upgradeCommand(options: Json & { backup?: string }) {
  const config = loadConfig()
  const bar = progress('backup before upgrade')
  let result: Awaited<ReturnType<typeof upgrade>>
  try {
    result = await upgrade({
      config,
      backupTo: options.backup,
      storage: () => createConfiguredStorage(config),
      onProgress: (done, total) => bar.update(done, total),
    })
  } finally {
    bar.end()
  }
  const backupNote = result.backup ? `; the backup taken before is ${result.backup}` : ''
  report(options, result, `Upgraded to ${result.version}: ${result.applied} migrations applied${backupNote}`)
}

async function migrateStorage({ config }: Context) {
  const s3 = config.storage.s3
  for (const [name, value] of [
    ['S3_BUCKET', s3.bucket],
    ['S3_ACCESS_KEY_ID', s3.accessKeyId],
    ['S3_SECRET_ACCESS_KEY', s3.secretAccessKey],
  ]) {
    if (!value)
      throw new CliError(`Missing value for ${name}: migrate-storage copies into the bucket the S3_* variables name`)
  }
  const target = createS3Storage(s3)
  const where = `${s3.endpoint || 'AWS S3'} bucket ${s3.bucket}${s3.prefix ? ` under ${s3.prefix}` : ''}`
  console.log(`Copying ${config.paths.filesDir} to ${where}`)
  const result = await migrateToBucket({
    filesDir: config.paths.filesDir,
    target,
    onProgress: (done, r) => {
      if (done % 500 === 0 || done === r.files)
        console.log(
          `${done}/${r.files} files (${r.copied} copied, ${r.skipped} already there, ${r.failed.length} failed)`,
        )
    },
  })
  for (const failure of result.failed) console.error(`failed: ${failure.key}: ${failure.error}`)
  console.log(
    `${result.files} files: ${result.copied} copied (${(result.bytesCopied / 1048576).toFixed(1)} MB), ${result.skipped} already in the bucket, ${result.failed.length} failed.`,
  )
  if (result.failed.length > 0) {
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

/** backup, restore, upgrade, migrate-db, migrate-storage, check. */
export function dataCommands(program: Command) {
  const json = ['--json', 'print a JSON summary on stdout (for scripts)'] as const
  program
    .command('backup')
    .description('consistent online copy of the database, the image files and the secrets (a directory or a .tar)')
    .argument('<target>', 'a new or empty directory, or a file ending in .tar')
    .option(...json)
    .action(withContext(backupCommand))
  program
    .command('restore')
    .description("restore a backup into DATA_DIR (stop the server first), or into DATABASE_URL's empty database")
    .argument('<source>', 'a backup directory or .tar')
    .option(...json)
    .action(restoreCommand)
  program
    .command('upgrade')
    .description("back up, then bring the database to this version's schema; restore the backup if that fails")
    .option('--backup <path>', 'where the backup goes (default DATA_DIR/backups/before-<version>-<time>.tar)')
    .option(...json)
    .action(upgradeCommand)
  program
    .command('migrate-db')
    .description("copy DATA_DIR's SQLite database (or the file named) into DATABASE_URL's empty PostgreSQL database")
    .argument('[file.sqlite]')
    .option(...json)
    .action(migrateDbCommand)
  program
    .command('check')
    .description('every row has its files, every file a row, the image counts a recount of the rows (JSON report)')
    .option('--repair', 'remake missing thumbnails, remove stray files, rewrite wrong counts')
    .action(withContext(checkCommand))
  program
    .command('migrate-storage')
    .description('copy every file of DATA_DIR/files into the bucket of the S3_* variables (resumable)')
    .action(withContext(migrateStorage))
}
