/**
 * The database engine of this process, read once from the environment when modules load (the tables the repositories
 * query are chosen by it, src/db/schema.ts): PostgreSQL when DATABASE_URL is set, else SQLite under DATA_DIR.
 */
export const engine: 'sqlite' | 'pg' = process.env.DATABASE_URL ? 'pg' : 'sqlite'
