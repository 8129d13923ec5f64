import { Database } from 'bun:sqlite'
import { chmod, copyFile, cp, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { count } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { byEngine, type Db, openDatabase } from '../db/client'
import { copyDatabase } from '../db/copy'
import { lockDataDir } from '../db/lock'
import type { PgDb } from '../db/pg'
import { images as imagesTable } from '../db/schema'
import * as schema from '../db/schema-sqlite'
import { imagesAfter } from '../modules/images/repository'
import { forgetAllVariants } from '../modules/variants/repository'
import { checkKey, originalKey, type Storage, thumbnailKey } from '../storage'
import { tarWriter } from './tar'

const DB_FILE = 'imghost.sqlite'
/** Generated secrets (src/lib/secrets.ts): a restore keeps sessions, signed variant URLs and TOTP codes valid. */
const SECRET_FILES = ['jwt-secret', 'variant-secret', 'totp-key']

/** Owner only, like the server's own copies: the database and the secrets, in a backup and after a restore. */
const PRIVATE = 0o600

/** Told after each batch of images copied (a backup) or file restored: `done` of `total`. */
export type OnProgress = (done: number, total: number) => void

/** Rows read per batch: a backup's memory stays the same whatever the library's size (files are streamed). */
const BATCH = 500

/** Where a backup's files go: a directory, or a `.tar` written as they come (src/ops/tar.ts). */
interface BackupOut {
  add(name: string, file: Blob, info: { size: number; modifiedAt: number; mode?: number }): Promise<void>
  end(): Promise<void>
}

const directoryOut = (dir: string): BackupOut => ({
  async add(name, file, info) {
    await Bun.write(join(dir, name), file)
    if (info.mode !== undefined) await chmod(join(dir, name), info.mode)
  },
  async end() {},
})

function tarOut(path: string): BackupOut {
  const tar = tarWriter(path)
  return {
    add: (name, file, info) =>
      tar.add(name, { size: info.size, lastModified: info.modifiedAt, mode: info.mode, stream: () => file.stream() }),
    end: () => tar.end(),
  }
}

/** A private file of the backup's own (the database snapshot, a secret): 0600 in the archive or the directory. */
async function addPrivate(out: BackupOut, name: string, path: string) {
  const file = Bun.file(path)
  await out.add(name, file, { size: file.size, modifiedAt: file.lastModified, mode: PRIVATE })
}

/** Copies an image's original and thumbnail into the backup; one deleted while the backup ran is reported missing. */
async function copyFiles(row: { id: string; ext: string }, storage: Storage, out: BackupOut, missing: string[]) {
  for (const key of [originalKey(row.id, row.ext), thumbnailKey(row.id)]) {
    const info = await storage.stat(key)
    if (!info) {
      missing.push(key)
      continue
    }
    await out.add(`files/${key}`, storage.file(key), info)
  }
}

async function run(cmd: string[]) {
  const proc = Bun.spawn(cmd, { stdout: 'ignore', stderr: 'pipe' })
  if ((await proc.exited) !== 0) {
    const said = (await new Response(proc.stderr).text()).trim().split('\n').join('; ')
    throw new Error(`${cmd[0]} failed: ${said}`)
  }
}

/**
 * An online backup, the same on both engines: a SQLite file `imghost.sqlite` and the files of its images. On SQLite,
 * `VACUUM INTO` snapshots the database while the server runs, then the files of every image in that snapshot are
 * copied. On PostgreSQL, every row is copied into a new SQLite file (a logical copy, src/db/copy.ts: no pg_dump),
 * then the files of the images the database holds. `target` is a directory, or a `.tar` file.
 */
export async function backup(opts: {
  db: Db
  storage: Storage
  dataDir: string
  target: string
  onProgress?: OnProgress
}) {
  const asTar = opts.target.endsWith('.tar')
  if (asTar && (await stat(opts.target).catch(() => null))) throw new Error(`${opts.target} exists already`)
  // A `.tar` is written as the files come; only the database snapshot is made first (then added whole), in a private
  // folder beside the archive: on the same disk, not in a /tmp that may be a small tmpfs.
  if (asTar) await mkdir(dirname(opts.target), { recursive: true })
  const dir = asTar ? await mkdtemp(join(dirname(opts.target), '.imghost-backup-')) : opts.target
  await mkdir(dir, { recursive: true, mode: 0o700 })
  if ((await readdir(dir)).length > 0) throw new Error(`Backup directory ${dir} is not empty`)
  const out = asTar ? tarOut(opts.target) : directoryOut(dir)
  try {
    const result = await backupInto(out, join(dir, DB_FILE), asTar, opts)
    await out.end()
    return result
  } finally {
    if (asTar) await rm(dir, { recursive: true, force: true })
  }
}

/** `addSnapshot`: the snapshot was made beside the output (a `.tar`), not in it (a directory). */
async function backupInto(
  out: BackupOut,
  snapshotFile: string,
  addSnapshot: boolean,
  opts: Parameters<typeof backup>[0],
) {
  // The files copied are those of `source`'s rows, read a batch at a time through the images module.
  const { source, close } = await snapshotInto(opts.db, snapshotFile)
  const missing: string[] = []
  let images = 0
  try {
    await chmod(snapshotFile, PRIVATE)
    if (addSnapshot) await addPrivate(out, DB_FILE, snapshotFile)
    const [{ n }] = await source.select({ n: count() }).from(imagesTable)
    const total = Number(n)
    opts.onProgress?.(0, total)
    for (let after = ''; ; ) {
      const rows = await imagesAfter(source, after, BATCH)
      for (const row of rows) {
        await copyFiles(row, opts.storage, out, missing)
        opts.onProgress?.(++images, Math.max(total, images))
      }
      if (rows.length < BATCH) break
      after = rows.at(-1)!.id
    }
  } finally {
    close()
  }
  for (const name of SECRET_FILES) {
    const path = join(opts.dataDir, name)
    if (await Bun.file(path).exists()) await addPrivate(out, name, path)
  }
  return { images, missing }
}

/**
 * Writes the backup's database to `file`, and gives the rows whose files the backup copies (`source`, ended by
 * `close`). Variants are not kept (made again on request): nor are their rows, or a restore would point at missing
 * files.
 */
function snapshotInto(db: Db, file: string): Promise<{ source: Db; close(): void }> {
  return byEngine(db, {
    async sqlite(sqlite) {
      sqlite.$client.run('VACUUM INTO ?', [file])
      const snapshot = new Database(file)
      const source = drizzle(snapshot, { schema })
      await forgetAllVariants(source)
      return { source, close: () => snapshot.close() }
    },
    async pg(pg) {
      const snapshot = openDatabase(file)
      try {
        await copyDatabase({ engine: 'pg', db: pg }, { engine: 'sqlite', db: snapshot }, { except: ['variants'] })
        // One self-contained file, as VACUUM INTO makes: the write-ahead log goes back into it (a `.tar` holds only it).
        snapshot.$client.exec('PRAGMA wal_checkpoint(TRUNCATE)')
        snapshot.$client.exec('PRAGMA journal_mode = DELETE')
      } finally {
        snapshot.$client.close()
      }
      // Images stored after the copy add files the backup's rows do not name (swept after a restore); images deleted
      // meanwhile are reported missing.
      return { source: db, close: () => {} }
    },
  })
}

/**
 * Restores a backup (directory or `.tar`) into an empty or stopped data directory. The server must not be running:
 * the database file is replaced whole; with `database` (PostgreSQL), which must be empty, the backup's rows are copied
 * into it instead. With `storage` (made after the old files are gone), the image files go in through it, so a restore
 * fills a bucket as well as the local disk; objects the backup lacks are left for the sweep.
 */
export async function restore(opts: RestoreOptions) {
  await mkdir(opts.dataDir, { recursive: true })
  // Refused while a server runs on the directory (DataDirLockedError); held meanwhile, so none starts half-way.
  const lock = lockDataDir(opts.dataDir, 'restore refused')
  try {
    return await restoreLocked(opts)
  } finally {
    lock.release()
  }
}

export interface RestoreOptions {
  source: string
  dataDir: string
  storage?: () => Storage
  /** PostgreSQL (DATABASE_URL): the database the rows go into; unset, the data directory's SQLite file. */
  database?: PgDb
  /** Told after each image file put into the storage. */
  onProgress?: OnProgress
}

/** A restore by a caller that holds the data directory's lock already (`restore`, `upgrade`'s rollback). */
export async function restoreLocked(opts: RestoreOptions) {
  if (!(await stat(opts.source).catch(() => null))) throw new Error(`No such backup: ${opts.source}`)
  if (!opts.source.endsWith('.tar')) return await restoreFrom(opts.source, opts)
  const dir = await mkdtemp(join(tmpdir(), 'imghost-restore-'))
  try {
    await run(['tar', '-xf', opts.source, '-C', dir])
    return await restoreFrom(dir, opts)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Restores the backup tree at `dir` (a backup directory, or a `.tar` extracted). */
async function restoreFrom(dir: string, opts: RestoreOptions) {
  if (!(await stat(join(dir, DB_FILE)).catch(() => null))) throw new Error(`${opts.source} holds no ${DB_FILE}`)

  for (const stale of [DB_FILE, `${DB_FILE}-wal`, `${DB_FILE}-shm`, 'files'])
    await rm(join(opts.dataDir, stale), { recursive: true, force: true })
  if (opts.database) {
    // A copy of the backup's file, opened as a database of this version (an older backup is migrated first, the
    // backup itself left as it is), then copied row by row.
    const work = await mkdtemp(join(tmpdir(), 'imghost-restore-db-'))
    try {
      await cp(join(dir, DB_FILE), join(work, DB_FILE))
      const backupDb = openDatabase(join(work, DB_FILE))
      try {
        await copyDatabase({ engine: 'sqlite', db: backupDb }, { engine: 'pg', db: opts.database })
      } finally {
        backupDb.$client.close()
      }
    } finally {
      await rm(work, { recursive: true, force: true })
    }
  } else await copyPrivate(join(dir, DB_FILE), join(opts.dataDir, DB_FILE))
  if (await stat(join(dir, 'files')).catch(() => null)) {
    if (opts.storage) await restoreFiles(join(dir, 'files'), opts.storage(), opts.dataDir, opts.onProgress)
    else await cp(join(dir, 'files'), join(opts.dataDir, 'files'), { recursive: true })
  }
  for (const name of SECRET_FILES) {
    if (await Bun.file(join(dir, name)).exists()) await copyPrivate(join(dir, name), join(opts.dataDir, name))
  }
  return { restoredFrom: basename(opts.source) }
}

/** Copied 0600 whatever the backup said: an older backup (or a hand-made one) holds them 0644. */
async function copyPrivate(from: string, to: string) {
  await cp(from, to)
  await chmod(to, PRIVATE)
}

/** Puts every file of a backup's `files/` into the storage; each is copied first, since a put moves its file. */
async function restoreFiles(filesDir: string, storage: Storage, dataDir: string, onProgress?: OnProgress) {
  const staging = await mkdtemp(join(dataDir, 'restore-'))
  const names = async (dir: string) => await readdir(join(filesDir, dir)).catch(() => [] as string[])
  const listed = { originals: await names('originals'), thumbs: await names('thumbs') }
  const total = listed.originals.length + listed.thumbs.length
  let done = 0
  try {
    for (const dir of ['originals', 'thumbs'] as const) {
      for (const name of listed[dir]) {
        onProgress?.(done++, total)
        let key: string
        try {
          key = checkKey(`${dir}/${name}`)
        } catch {
          continue // not a name this service writes
        }
        const copy = join(staging, name)
        await copyFile(join(filesDir, key), copy)
        // A restore replaces: the bucket may still hold objects under the same keys.
        await storage.put(key, copy, { replace: true })
      }
    }
    onProgress?.(done, total)
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
}
