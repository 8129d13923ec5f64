import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startCheckpointer } from '../../src/db/checkpointer'
import { openDatabase } from '../../src/db/client'
import { engine } from '../../src/db/engine'

// WAL checkpoints on a Worker (src/db/checkpointer.ts): the server's connection never checkpoints inside a commit, and
// the pages still reach the database file.

const dir = mkdtempSync(join(tmpdir(), 'imghost-checkpoint-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const autoCheckpoint = (db: ReturnType<typeof openDatabase>) =>
  (db.$client.query('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint
/** ~8 MB of rows in one table: far more than the 1,000 pages (4 MB) after which SQLite would checkpoint by itself. */
function writeMuch(db: ReturnType<typeof openDatabase>) {
  db.$client.exec('CREATE TABLE IF NOT EXISTS filler (data BLOB)')
  const insert = db.$client.prepare('INSERT INTO filler (data) VALUES (?1)')
  for (let i = 0; i < 200; i++) db.$client.transaction(() => insert.run(new Uint8Array(40_000).fill(i % 251)))()
}

async function until(check: () => boolean, ms = 5000) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await Bun.sleep(20)
  }
}

// SQLite's WAL checkpoints: a PostgreSQL server has no checkpointer of its own.
describe.skipIf(engine === 'pg')('startCheckpointer', () => {
  test('the Worker checkpoints; the server connection does not, until the Worker stops', async () => {
    const path = join(dir, 'worker.sqlite')
    const db = openDatabase(path)
    expect(autoCheckpoint(db)).toBe(1000)
    const checkpointer = startCheckpointer(db, path, 50)
    try {
      await until(() => autoCheckpoint(db) === 0)
      const before = statSync(path).size
      writeMuch(db)
      // The pages reach the database file through the Worker's checkpoints, not the writes' commits.
      await until(() => statSync(path).size >= before + 7_000_000)
    } finally {
      await checkpointer.stop()
    }
    expect(autoCheckpoint(db)).toBe(1000)
    db.$client.close()
  })

  test('the control: with checkpoints off and no Worker, the same writes leave the database file as it was', () => {
    // So the growth above is the Worker's checkpoints.
    const path = join(dir, 'control.sqlite')
    const db = openDatabase(path)
    db.$client.exec('PRAGMA wal_autocheckpoint = 0')
    const before = statSync(path).size
    writeMuch(db)
    expect(statSync(path).size).toBeLessThan(before + 1_000_000)
    db.$client.close()
  })
})
