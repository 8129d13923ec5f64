/**
 * PostgreSQL's newest search matches (src/modules/gallery/search-pg.ts) come from the sample of the newest documents
 * alone (enough matches, or no other documents), a longer walk (common words), or the GIN index (rare ones, and what a
 * walk leaves short). Each plan is forced here with a small sample and judged against the documents matched in
 * JavaScript.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rawRows } from '../../src/db/client'
import { engine } from '../../src/db/engine'
import { pgNewestMatches } from '../../src/modules/gallery/search-pg'
import { startTestServer, type TestServer } from '../helpers'

let t: TestServer
// Words of a common share (every 2nd and 3rd document), a rare one (every 25th), one only among the oldest.
const bodyOf = (i: number) =>
  [i % 2 ? 'harbour' : 'sunset', i % 3 ? 'beach' : 'lake', i % 25 ? '' : 'comet', i < 5 ? 'oldest' : ''].join(' ')
const DOCS = 120

beforeAll(async () => {
  // Every test is PostgreSQL's: on SQLite no server is started.
  if (engine !== 'pg') return
  t = await startTestServer()
  for (let i = 0; i < DOCS; i++)
    await rawRows(t.server.db, sql`INSERT INTO search_docs (image_id, body) VALUES (${`doc${i}`}, ${bodyOf(i)})`)
}, 60_000)
afterAll(() => t?.stop())

/** The oracle: the newest `limit` documents whose words start with every query word. */
async function expected(words: string[], limit: number) {
  const docs = await rawRows<{ image_id: string; body: string }>(
    t.server.db,
    sql`SELECT image_id, body FROM search_docs ORDER BY docid DESC`,
  )
  const matches = (body: string) => words.every((w) => body.split(/\s+/).some((word) => word.startsWith(w)))
  return docs
    .filter((d) => matches(d.body))
    .slice(0, limit)
    .map((d) => d.image_id)
}

describe.skipIf(engine !== 'pg')('the newest matches of a PostgreSQL search', () => {
  const cases: [string, string[], number, number][] = [
    ['the sample holds enough', ['sun'], 10, 40],
    ['the sample is every document', ['comet'], 50, DOCS],
    ['a common word walks on past the sample', ['beach'], 60, 30],
    ['a rare word: the walk falls short, the index finds them all', ['comet'], 50, 30],
    ['a word not among the newest goes to the index at once', ['oldest'], 10, 30],
    ['every word must match', ['harbour', 'lake'], 15, 20],
  ]
  for (const [name, words, limit, sample] of cases)
    test(name, async () => {
      const want = await expected(words, limit)
      expect(want.length).toBeGreaterThan(0)
      expect(await pgNewestMatches(t.server.db, words, limit, sample)).toEqual(want)
    })
})
