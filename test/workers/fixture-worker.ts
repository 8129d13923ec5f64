/** A worker process for the pool's tests: jobs that answer, fail, spin, allocate or crash on request. */
import { serveJobs } from '../../src/workers/pool'

const held: Uint8Array[] = []

serveJobs({
  echo: async (value: unknown) => ({ value, pid: process.pid }),
  fail: async (message: string) => {
    throw Object.assign(new Error(message), { name: 'MediaError', code: 'EFIXTURE' })
  },
  /** Busy for `ms` of wall time without yielding: only killing the process stops it. */
  spin: async (ms: number) => {
    const end = Date.now() + ms
    while (Date.now() < end) {}
    return 'spun'
  },
  /** Touches `mb` megabytes so they become resident, then waits. */
  allocate: async (mb: number) => {
    for (let i = 0; i < mb; i++) held.push(new Uint8Array(1 << 20).fill(1))
    await Bun.sleep(5000)
    return 'allocated'
  },
  crash: async () => process.exit(3),
})
