import { join } from 'node:path'
import type { SeedReport } from '../../src/ops/seed'
import { accountCredentials, adminCredentials, appEnv, startApp, upload } from '../lib/app'
import { BUN, freePort, runJson } from '../lib/proc'

/** A seeded library on one engine: its data directory (and database), the accounts the reads sign in as. */
export interface Library {
  engine: 'sqlite' | 'pg'
  rows: number
  dataDir: string
  /** What every process on it needs besides appEnv (PostgreSQL: DATABASE_URL and the shared keys). */
  env: Record<string, string>
  /** The owner of half the rows. */
  owner: { username: string; jwt: string; apiKey: string }
  admin: { jwt: string }
  /** Whether the seeded rows have files (hard links of the source's) or none. */
  files: 'link' | 'none'
  /** The real upload every row was cloned from, and its file. */
  sourceId: string
  source: string
  seed: SeedReport & { wallMs: number }
}

/** A large library's first start may take minutes before the fixes (its startup reads every row and file). */
export const START_TIMEOUT_MS = 600_000

export const OWNER = { username: 'owner', email: 'owner@example.com', password: 'owner-password-123' }

/** Runs the CLI (`bun src/cli.ts <args>`) on a library's data and returns the JSON it printed last. */
export function cli<T>(dataDir: string, env: Record<string, string>, args: string[], timeoutMs = 3_600_000) {
  return runJson<T>([BUN, 'src/cli.ts', ...args], { env: appEnv(dataDir, freePort(), env), timeoutMs })
}

/**
 * A library of `rows` seeded rows: the service started once on an empty data directory (it migrates, creates the
 * admin), the owner account created, one real upload of `source` by it, the service stopped, then `imghost seed` clones
 * that upload into `rows` rows (files hard-linked). The owner's JWT and API key stay valid across restarts.
 */
export async function prepareLibrary(opts: {
  engine: 'sqlite' | 'pg'
  rows: number
  dataDir: string
  env: Record<string, string>
  source: string
  log: string
  /** The seed's --files: `none` above a million rows, where tens of millions of links take longer than the rest. */
  files: 'link' | 'none'
}): Promise<Library> {
  const app = await startApp({ dataDir: opts.dataDir, log: opts.log, env: opts.env, startTimeoutMs: START_TIMEOUT_MS })
  let owner: Library['owner']
  let admin: Library['admin']
  let sourceId: string
  try {
    admin = { jwt: (await adminCredentials(app.url)).jwt }
    const created = await fetch(`${app.url}/api/admin/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.jwt}` },
      body: JSON.stringify(OWNER),
    })
    if (created.status !== 201) throw new Error(`creating the owner: ${created.status} ${await created.text()}`)
    owner = { username: OWNER.username, ...(await accountCredentials(app.url, OWNER.username, OWNER.password)) }
    const blob = new Blob([await Bun.file(opts.source).arrayBuffer()], { type: 'image/jpeg' })
    sourceId = (await upload(app.url, '/api/v1/upload', { 'x-api-key': owner.apiKey }, [{ blob, name: 'source.jpg' }]))
      .id
  } finally {
    await app.stop()
  }
  const t = performance.now()
  const report = await cli<SeedReport>(opts.dataDir, opts.env, [
    'seed',
    String(opts.rows),
    '--from',
    sourceId,
    '--files',
    opts.files,
  ])
  return {
    engine: opts.engine,
    rows: opts.rows,
    dataDir: opts.dataDir,
    env: opts.env,
    owner,
    admin,
    sourceId,
    source: opts.source,
    files: opts.files,
    seed: { ...report, wallMs: performance.now() - t },
  }
}

/** The SQLite file of a library on SQLite. */
export const sqlitePath = (lib: Library) => join(lib.dataDir, 'imghost.sqlite')
