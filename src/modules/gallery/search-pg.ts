import { type SQL, sql } from 'drizzle-orm'
import { type Db, rawRows } from '../../db/client'
import { imageJoin } from '../images/repository'

/**
 * PostgreSQL's search condition (SQLite's is the FTS5 MATCH of `feeds.search`): the image has one search document
 * whose words match every query word as a prefix. Each word is normalized as documents are, and made a tsquery, by
 * the SQL functions of migrations-pg/0001_search.sql; user text is only ever a bound parameter, never tsquery syntax.
 */
export function pgSearchMatch(words: string[]): SQL {
  return sql`${imageJoin.id} IN (SELECT d.image_id FROM search_docs d WHERE ${pgDocumentMatch(words)})`
}

/**
 * The condition on a search document `d` of pgSearchMatch. The query is a sub-select, so it is made once per statement:
 * with the words bound as parameters the planner cannot fold it into a constant, and would make it again for every
 * document it walks (normalizing each word: 150-250 ms over 10,000 documents).
 */
export function pgDocumentMatch(words: string[]): SQL {
  if (words.length === 0) return sql`false`
  const query = sql.join(
    words.map((w) => sql`search_prefix_query(${w})`),
    sql` && `,
  )
  return sql`d.words @@ (SELECT ${query})`
}

/** The newest documents a PostgreSQL search first walks through, checking each (its cost: a few ms). */
const SAMPLE = 10_000
/**
 * Below this share of matches among the newest documents, the rest are found through the words' GIN index (a cost in
 * proportion to the matches); above it, by walking on through the newest documents (in proportion to what is walked).
 */
const WALK_SHARE = 0.01

/**
 * The image ids of the newest `limit` search documents matching `words`. A GIN index answers which documents match, not
 * which are newest: for a common word it hands over every match before the newest can be picked (seconds at a
 * million), while walking the documents newest first stops early for common words but reads them all for a rare one.
 * So the newest SAMPLE documents are checked first: enough matches there (or no other documents) and it is done; else,
 * from the share found there, walking on (common words) or the GIN index (rare ones, and what a walk leaves short),
 * whichever reads less.
 */
export async function pgNewestMatches(db: Db, words: string[], limit: number, sample = SAMPLE): Promise<string[]> {
  const match = pgDocumentMatch(words)
  const walk = async (span: number) =>
    (
      await rawRows<{ image_id: string }>(
        db,
        sql`SELECT d.image_id FROM (SELECT docid, image_id, words FROM search_docs ORDER BY docid DESC LIMIT ${span}) d
            WHERE ${match} ORDER BY d.docid DESC LIMIT ${limit}`,
      )
    ).map((r) => r.image_id)
  const sampled = await walk(sample)
  if (sampled.length >= limit) return sampled
  // A small library: the sample was every document, so its matches are all there are.
  const beyond = await rawRows(db, sql`SELECT 1 FROM search_docs ORDER BY docid DESC OFFSET ${sample} LIMIT 1`)
  if (beyond.length === 0) return sampled
  const share = sampled.length / sample
  if (share >= WALK_SHARE) {
    const walked = await walk(Math.ceil((limit / share) * 1.5))
    if (walked.length >= limit) return walked
  }
  // Too few among the newest (or the walk fell short: older documents match less): every match, through the GIN
  // index (MATERIALIZED: whole, then the newest are picked).
  const found = await rawRows<{ image_id: string }>(
    db,
    sql`WITH m AS MATERIALIZED (SELECT d.docid, d.image_id FROM search_docs d WHERE ${match})
        SELECT image_id FROM m ORDER BY docid DESC LIMIT ${limit}`,
  )
  return found.map((r) => r.image_id)
}
