import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { asc, eq } from 'drizzle-orm'
import { images } from '../../src/db/schema'
import { storedKeys, type TestServer } from '../helpers'

export { eventually } from '../helpers'

/** Generous on purpose: the bound that proves nothing stalls, not a latency figure (that lives in the bench). */
export const ANSWER_BOUND_MS = 2000

/**
 * Another process holding the database's write lock: `bun -e` opens the SQLite file and holds BEGIN EXCLUSIVE for
 * `ms` (in WAL mode readers go on, every writer gets SQLITE_BUSY). Resolves once the lock is held.
 */
export async function holdDatabaseLock(dbPath: string, ms: number) {
  const script = `
    const { Database } = require('bun:sqlite')
    const db = new Database(${JSON.stringify(dbPath)})
    db.exec('PRAGMA busy_timeout = 5000')
    db.exec('BEGIN EXCLUSIVE')
    console.log('locked')
    setTimeout(() => { db.exec('ROLLBACK'); db.close(); console.log('released') }, ${ms})`
  const proc = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let seen = ''
  while (!seen.includes('locked')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`lock holder exited early: ${seen}`)
    seen += new TextDecoder().decode(value)
  }
  return {
    /** Resolves when the holder has let go and exited. */
    released: proc.exited,
    kill: () => proc.kill(9),
  }
}

/** Times one request: its answer and how long it took. */
export async function timed<T>(request: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now()
  const value = await request()
  return { value, ms: performance.now() - start }
}

/** What an upload leaves behind: stored keys, image rows, and files in the upload temp directory. */
export async function dataState(t: TestServer) {
  const rows = await t.server.db.select({ id: images.id, views: images.views }).from(images).orderBy(asc(images.id))
  let tmp: string[] = []
  try {
    tmp = readdirSync(join(t.dataDir, 'tmp')).sort()
  } catch {
    // no temp directory: nothing in it
  }
  return { keys: await storedKeys(t), rows, tmp }
}

/** The views column of one image as committed in the database (the API adds counts still buffered). */
export const committedViews = async (t: TestServer, id: string) =>
  (await t.server.db.select({ views: images.views }).from(images).where(eq(images.id, id)))[0]?.views
