import { type SQL, sql } from 'drizzle-orm'
import { images } from '../../db/schema'

/**
 * PostgreSQL's search condition (SQLite's is the FTS5 MATCH of `feeds.search`): the image has one search document
 * whose words match every query word as a prefix. Each word is normalized as documents are, and made a tsquery, by
 * the SQL functions of migrations-pg/0001_search.sql; user text is only ever a bound parameter, never tsquery syntax.
 */
export function pgSearchMatch(words: string[]): SQL {
  return sql`${images.id} IN (SELECT d.image_id FROM search_docs d WHERE ${pgDocumentMatch(words)})`
}

/** The condition on a search document `d` of pgSearchMatch. */
export function pgDocumentMatch(words: string[]): SQL {
  if (words.length === 0) return sql`false`
  const query = sql.join(
    words.map((w) => sql`search_prefix_query(${w})`),
    sql` && `,
  )
  return sql`d.words @@ (${query})`
}
