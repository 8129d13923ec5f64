/** The name filter's index migration (0018_image_names) indexes the owned images an older database already holds. */
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { olderDatabase } from '../db/older-database'

// A SQLite migration on an old SQLite file: PostgreSQL has no such index (its name filter walks the owner's rows).
test.skipIf(engine === 'pg')(
  "an older database's owned images are found by name once migrated; anonymous ones are not indexed",
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'imghost-names-migration-'))
    try {
      const { path, old } = olderDatabase(dir, '_image_names')
      old.exec(
        `INSERT INTO users (id, username, email, password_hash) VALUES (1, 'a', 'a@example.com', 'x'), (2, 'b', 'b@example.com', 'x')`,
      )
      const rows = [
        ['img00001', 1, 'Harbour At Dusk.png', 'public', 0],
        ['img00002', 1, 'harbour-2.png', 'private', 1],
        ['img00003', 2, 'HARBOUR.png', 'public', 0],
        ['img00004', null, 'harbour anon.png', 'public', 0],
      ] as const
      for (const [id, user, name, visibility, nsfw] of rows)
        old.run(
          `INSERT INTO images (id, user_id, filename, mime, ext, width, height, size, sha256, visibility, nsfw)
         VALUES (?, ?, ?, 'image/png', 'png', 1, 1, 1, ?, ?, ?)`,
          [id, user, name, id.padEnd(64, '0'), visibility, nsfw],
        )
      old.close()

      const db = openDatabase(path)
      const found = (match: string) =>
        (
          db.$client
            .query(
              'SELECT i.id FROM image_names n JOIN images i ON i.rowid = n.rowid WHERE image_names MATCH ? ORDER BY i.id',
            )
            .all(match) as { id: string }[]
        ).map((r) => r.id)
      expect(found('"\x011\x01" AND "harbour"')).toEqual(['img00001', 'img00002'])
      expect(found('"\x011\x01" AND "\x02private\x02" AND "\x031\x03" AND "bour-"')).toEqual(['img00002'])
      expect(found('"\x012\x01" AND "harbour"')).toEqual(['img00003'])
      expect(found('"anon"')).toEqual([])
      db.$client.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
)
