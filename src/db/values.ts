import { type Column, type SQL, sql } from 'drizzle-orm'
import { engine } from './engine'

/**
 * `column IN (values)` with the values as one JSON parameter: the statement's text stays the same however many values
 * there are (a search's scope holds up to a thousand), so it is not built and prepared anew with a parameter each.
 */
export const inValues = (column: Column, values: readonly string[]): SQL =>
  engine === 'pg'
    ? // Bun's PostgreSQL client sends a JSON-looking string as JSON text (a scalar): cast from text, it is the array.
      sql`${column} IN (SELECT jsonb_array_elements_text(${JSON.stringify(values)}::text::jsonb))`
    : sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`
