/**
 * `npm run test:pg`: the whole suite again on PostgreSQL, in a throwaway cluster started here on loopback
 * (test/pg-cluster.ts). The migrations are applied once to a template database; each test server gets a fresh copy of
 * it (`databaseEnv()` in test/helpers.ts). Arguments go to `bun test` (e.g. a path filter).
 */
import { join } from 'node:path'
import { SQL } from 'bun'
import { closePgDatabase, openPgDatabase } from '../src/db/pg'
import { startPgCluster } from './pg-cluster'

const TEMPLATE = 'imghost_template'

const cluster = await startPgCluster()
let code = 1
try {
  const admin = new SQL(cluster.url)
  await admin.unsafe(`CREATE DATABASE ${TEMPLATE}`)
  await admin.close()
  const templateUrl = new URL(cluster.url)
  templateUrl.pathname = `/${TEMPLATE}`
  // Migrated, then closed: a template with a connection open cannot be copied.
  await closePgDatabase(await openPgDatabase(templateUrl.toString()))
  // What a process the suite starts uses when its test gives it no database of its own (never the template: a
  // connection to it would stop every copy).
  const shared = new SQL(cluster.url)
  await shared.unsafe(`CREATE DATABASE imghost_shared TEMPLATE ${TEMPLATE}`)
  await shared.close()
  const sharedUrl = new URL(cluster.url)
  sharedUrl.pathname = '/imghost_shared'
  console.error(`[test:pg] PostgreSQL on ${cluster.url}, template ${TEMPLATE}`)
  const proc = Bun.spawn([process.execPath, 'test', '--timeout', '60000', ...process.argv.slice(2)], {
    cwd: join(import.meta.dir, '..'),
    // DATABASE_URL makes the suite's process a PostgreSQL one (src/db/engine.ts: the tables are chosen at load); each
    // test server is given a database of its own (databaseEnv).
    env: { ...process.env, PG_TEST_URL: cluster.url, PG_TEST_TEMPLATE: TEMPLATE, DATABASE_URL: sharedUrl.toString() },
    stdio: ['inherit', 'inherit', 'inherit'],
  })
  code = await proc.exited
} finally {
  await cluster.stop()
}
process.exit(code)
