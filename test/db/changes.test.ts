/**
 * SQLite's change feed (src/db/changes.ts) on a database of its own: what the update hook tells (as PostgreSQL's
 * triggers do), what a quiet write keeps from it, and the commits of another connection, told at catchUp. Its use by
 * the caches is tested through the app (test/images, test/cdn, test/auth); PostgreSQL's feed in instances.test.ts.
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq, sql } from 'drizzle-orm'
import { type CachedTable, type ChangeFeed, sqliteChangeFeed } from '../../src/db/changes'
import { openDatabase, type SqliteDb } from '../../src/db/client'
import { images, sessions, users } from '../../src/db/schema-sqlite'

let dir: string
let db: SqliteDb
let feed: ChangeFeed
const heard: [CachedTable, string | null][] = []
const listen = (table: CachedTable) => feed.on(table, (key) => heard.push([table, key]))
/** What the feed told since the last call. */
const told = () => heard.splice(0)

const image = (id: string) => ({
  id,
  filename: `${id}.png`,
  mime: 'image/png',
  ext: 'png',
  width: 1,
  height: 1,
  size: 1,
  sha256: id,
})

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'imghost-changes-'))
  db = openDatabase(join(dir, 'imghost.sqlite'))
  feed = sqliteChangeFeed(db)
  for (const table of ['images', 'sessions', 'blocks', 'variants'] as const) listen(table)
  await db.insert(users).values({ username: 'feed', email: 'feed@example.com', passwordHash: 'x' })
})
afterAll(() => {
  db.$client.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("SQLite's change feed", () => {
  test("tells images' changes and removals by rowid, inside the statement; never an insert", async () => {
    const [row] = await db.insert(images).values(image('FEEDIMG1')).returning({ rowid: sql`rowid` })
    expect(told()).toEqual([])
    await db.update(images).set({ nsfw: true }).where(eq(images.id, 'FEEDIMG1'))
    expect(told()).toEqual([['images', String(row!.rowid)]])
    await db.delete(images).where(eq(images.id, 'FEEDIMG1'))
    expect(told()).toEqual([['images', String(row!.rowid)]])
  })

  test("tells sessions' removals, not their uses", async () => {
    const [user] = await db.select().from(users)
    await db.insert(sessions).values({ id: 'feed-session', userId: user!.id, expiresAt: new Date(Date.now() + 60_000) })
    await db.update(sessions).set({ lastUsedAt: new Date() }).where(eq(sessions.id, 'feed-session'))
    expect(told()).toEqual([])
    await db.delete(sessions).where(eq(sessions.id, 'feed-session'))
    expect(told()).toHaveLength(1)
  })

  test('a quiet write of a table tells nothing of it; the table is heard again after', async () => {
    await db.insert(images).values(image('FEEDIMG2'))
    await feed.quietly('images', async () => {
      await db.update(images).set({ views: 5 }).where(eq(images.id, 'FEEDIMG2'))
    })
    expect(told()).toEqual([])
    await db.update(images).set({ views: 6 }).where(eq(images.id, 'FEEDIMG2'))
    expect(told()).toHaveLength(1)
  })

  test("another connection's commit is told (null) at each table's next catchUp, once; its own commits are not", async () => {
    await db.insert(images).values(image('FEEDIMG3'))
    feed.catchUp('images')
    feed.catchUp('sessions')
    expect(told()).toEqual([])
    const other = new Database(join(dir, 'imghost.sqlite'))
    try {
      other.run("UPDATE images SET nsfw = 1 WHERE id = 'FEEDIMG3'")
    } finally {
      other.close()
    }
    expect(told()).toEqual([])
    feed.catchUp('sessions')
    expect(told()).toEqual([['sessions', null]])
    feed.catchUp('sessions')
    expect(told()).toEqual([])
    feed.catchUp('images')
    expect(told()).toEqual([['images', null]])
  })

  test('one feed per connection: asked again, it is the same feed (one owner of the hook)', () => {
    expect(sqliteChangeFeed(db)).toBe(feed)
  })
})
