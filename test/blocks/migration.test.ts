/** The blocklist migration carries the SHA-256 blocks of earlier report actions over into blocks and block_sha256s. */
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { olderDatabase } from '../db/older-database'

// A SQLite migration (src/db/migrations) on an old SQLite file: PostgreSQL starts from its own migrations.
test.skipIf(engine === 'pg')(
  'blocked_hashes rows become one block per removed image, its hashes kept, and the old table goes',
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'imghost-blocks-migration-'))
    try {
      // The migrations before this one, applied to a database that then gets the old table's rows.
      const { path, old } = olderDatabase(dir, '_blocklist')
      old.exec(`INSERT INTO users (id, username, email, password_hash) VALUES (1, 'owner', 'o@example.com', 'x')`)
      old.exec(`INSERT INTO reports (id, image_id, image_owner_id, image_sha256, reason, reporter_ip, status)
      VALUES (7, 'abcdefgh', 1, '${'a'.repeat(64)}', 'spam', '127.0.0.1', 'actioned')`)
      old.exec(`INSERT INTO blocked_hashes (sha256, image_id, report_id) VALUES
      ('${'a'.repeat(64)}', 'abcdefgh', 7), ('${'b'.repeat(64)}', 'abcdefgh', 7), ('${'c'.repeat(64)}', 'ijklmnop', NULL)`)
      old.close()

      const db = openDatabase(path)
      const blocks = db.$client
        .query('SELECT id, phash, source, image_id AS imageId, report_id AS reportId FROM blocks ORDER BY image_id')
        .all() as { id: number; phash: null; source: string; imageId: string; reportId: number | null }[]
      expect(blocks.map(({ id: _, ...b }) => b)).toEqual([
        { phash: null, source: 'report', imageId: 'abcdefgh', reportId: 7 },
        { phash: null, source: 'report', imageId: 'ijklmnop', reportId: null },
      ])
      const hashes = db.$client.query('SELECT sha256, block_id AS blockId FROM block_sha256s ORDER BY sha256').all()
      expect(hashes).toEqual([
        { sha256: 'a'.repeat(64), blockId: blocks[0]!.id },
        { sha256: 'b'.repeat(64), blockId: blocks[0]!.id },
        { sha256: 'c'.repeat(64), blockId: blocks[1]!.id },
      ])
      expect(db.$client.query("SELECT name FROM sqlite_master WHERE name = 'blocked_hashes'").all()).toEqual([])
      db.$client.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
)
