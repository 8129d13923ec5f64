import { defineConfig } from 'drizzle-kit'

/** PostgreSQL's schema and migrations (DATABASE_URL=postgres://...); drizzle.config.ts is SQLite's. */
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema-pg.ts',
  out: './src/db/migrations-pg',
})
