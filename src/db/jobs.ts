import type { SQL } from 'bun'
import { byEngine, type Db } from './client'

/** Runs `work` unless another instance is running the same job now; undefined when it was. */
export type Exclusive = <T>(job: string, work: () => Promise<T>) => Promise<T | undefined>

/**
 * Background jobs (sweeps, rescans, the hash backfill) run by one instance at a time: on PostgreSQL each run takes a
 * session advisory lock named after its job (pg_try_advisory_lock on a connection of its own, held for the run), and an
 * instance that finds it taken skips that run (the holder is doing the work); on SQLite one process owns the database
 * (the data directory's lock), so every run just runs.
 */
export function exclusiveJobs(db: Db): Exclusive {
  return byEngine<Exclusive>(db, { sqlite: () => (_job, work) => work(), pg: (pg) => advisoryJobs(pg.$client) })
}

function advisoryJobs(client: SQL): Exclusive {
  return async (job, work) => {
    const name = `imghost:${job}`
    const connection = await client.reserve()
    try {
      const [row] = await connection`SELECT pg_try_advisory_lock(hashtext(${name})) AS locked`
      if (!row?.locked) return undefined
      try {
        return await work()
      } finally {
        await connection`SELECT pg_advisory_unlock(hashtext(${name}))`.catch(() => {})
      }
    } finally {
      connection.release()
    }
  }
}
