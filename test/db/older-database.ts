import { Database } from 'bun:sqlite'
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'

const ROOT = join(import.meta.dir, '..', '..')

/**
 * An older SQLite file for a migration's own test: `<dir>/imghost.sqlite` with every migration of src/db/migrations
 * before the one whose tag ends with `tagEnd`, open for the rows the test puts in (close it, then openDatabase(path)
 * applies the rest).
 */
export function olderDatabase(dir: string, tagEnd: string): { path: string; old: Database } {
  const before = join(dir, 'migrations')
  cpSync(join(ROOT, 'src/db/migrations'), before, { recursive: true })
  const journalPath = join(before, 'meta/_journal.json')
  const journal = JSON.parse(readFileSync(journalPath, 'utf8'))
  journal.entries = journal.entries.slice(
    0,
    journal.entries.findIndex((e: { tag: string }) => e.tag.endsWith(tagEnd)),
  )
  writeFileSync(journalPath, JSON.stringify(journal))
  const path = join(dir, 'imghost.sqlite')
  const old = new Database(path, { create: true })
  migrate(drizzle(old), { migrationsFolder: before })
  return { path, old }
}
