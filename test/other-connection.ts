import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { SQL } from 'bun'
import { engine } from '../src/db/engine'
import type { TestServer } from './helpers'

/**
 * Runs one raw SQL statement (placeholders `$1`, `$2`...) on a connection of its own to a test server's database, not
 * the server's: a write the server's caches are not told of, as one by the CLI on a stopped server would be. On SQLite
 * the update hook sees only the server's connection; on PostgreSQL every write notifies (the change triggers,
 * migrations-pg/0002), so they are switched off for this one transaction (session_replication_role: the test cluster's
 * user is a superuser).
 */
export async function writeBehindCaches(t: TestServer, statement: string, params: unknown[]) {
  if (engine === 'pg') {
    const client = new SQL(t.env.DATABASE_URL)
    try {
      await client.begin(async (tx) => {
        await tx.unsafe('SET LOCAL session_replication_role = replica')
        await tx.unsafe(statement, params)
      })
    } finally {
      await client.close()
    }
    return
  }
  const other = new Database(join(t.dataDir, 'imghost.sqlite'))
  try {
    other.query(statement.replaceAll(/\$(\d+)/g, '?$1')).run(...(params as never[]))
  } finally {
    other.close()
  }
}

/**
 * Rows of a query (placeholders `$1`...) on the database a server started with `env` uses, through a connection of
 * its own: DATABASE_URL's when set, else the SQLite file in DATA_DIR (a server run as a process, or stopped).
 */
export async function queryEnv<T>(env: Record<string, string>, statement: string, params: unknown[] = []) {
  if (env.DATABASE_URL) {
    const client = new SQL(env.DATABASE_URL)
    try {
      return [...(await client.unsafe(statement, params))] as T[]
    } finally {
      await client.close()
    }
  }
  const db = new Database(join(env.DATA_DIR!, 'imghost.sqlite'), { readonly: true })
  try {
    return db.query(statement.replaceAll(/\$(\d+)/g, '?$1')).all(...(params as never[])) as T[]
  } finally {
    db.close()
  }
}
