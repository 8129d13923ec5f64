/**
 * A worker for the pool's tests, as a process or a Worker thread alike: jobs that answer, fail, spin, allocate or
 * crash on request; its setup can make its start fail or take a while.
 */
import { serveJobs } from '../../src/workers/serve'

/** Tells one worker from the next (threads share their process id). */
const worker = crypto.randomUUID()
const held: Uint8Array[] = []

export interface FixtureSetup {
  /** Start fails with this message. */
  fail?: string
  /** Start takes this long. */
  startMs?: number
}

serveJobs(async (setup: FixtureSetup | undefined) => {
  if (setup?.startMs) await Bun.sleep(setup.startMs)
  if (setup?.fail) throw new Error(setup.fail)
  return {
    info: { worker, setup },
    jobs: {
      echo: async (value: unknown) => ({ value, pid: process.pid, worker }),
      fail: async (message: string) => {
        throw Object.assign(new Error(message), { name: 'MediaError', code: 'EFIXTURE' })
      },
      /** Busy for `ms` of wall time without yielding: only ending the worker stops it. */
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
      /** Sends its bytes' length early, then answers with the length it sees (0: the buffer was moved away). */
      bytes: async (bytes: Uint8Array, early: (value: unknown) => void) => {
        early(bytes.byteLength)
        return bytes.byteLength
      },
      crash: async () => process.exit(3),
    },
  }
})
