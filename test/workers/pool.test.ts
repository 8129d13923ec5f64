import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import {
  BudgetError,
  createFairQueue,
  createProcessPool,
  PoolBusyError,
  WorkerExitedError,
} from '../../src/workers/pool'
import { isAlive } from '../helpers'

const fixture = fileURLToPath(new URL('./fixture-worker.ts', import.meta.url))
const pools: ReturnType<typeof createProcessPool>[] = []

function pool(opts: Partial<Parameters<typeof createProcessPool>[0]> = {}) {
  const p = createProcessPool({
    command: [process.execPath, fixture],
    env: process.env,
    size: 2,
    timeoutMs: 5000,
    memoryBytes: 2 ** 30,
    idleMs: 10_000,
    maxQueue: 10,
    ...opts,
  })
  pools.push(p)
  return p
}

async function until(check: () => boolean, what: string) {
  for (let i = 0; i < 200 && !check(); i++) await Bun.sleep(25)
  if (!check()) throw new Error(`timed out waiting for ${what}`)
}

/** The error `work` rejects with; a job that succeeds fails the test. */
async function rejection(work: Promise<unknown>): Promise<Error & { code?: string; budget?: string }> {
  try {
    await work
  } catch (error) {
    return error as Error
  }
  throw new Error('expected the job to fail')
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()))
})

describe('process pool', () => {
  test('runs jobs in worker processes, not in this one, and reuses an idle process', async () => {
    const p = pool({ size: 1 })
    const first = await p.run<{ value: number; pid: number }>('echo', [1])
    const second = await p.run<{ value: unknown; pid: number }>('echo', [{ nested: [2] }])
    expect(first.value).toBe(1)
    expect(second.value).toEqual({ nested: [2] })
    expect(first.pid).not.toBe(process.pid)
    expect(second.pid).toBe(first.pid)
  })

  test("worker processes run below the server's CPU priority (nice 10), so a slow file never takes the event loop's core", async () => {
    const { pid } = await pool({ size: 1 }).run<{ pid: number }>('echo', [0])
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const niceness = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
    const own = Number(readFileSync('/proc/self/stat', 'latin1').split(') ')[1].split(' ')[16])
    expect(niceness).toBe(own + 10)
  })

  test("a job's own error comes back with its name, message and errno code", async () => {
    const error = await rejection(pool().run('fail', ['bad bytes']))
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('MediaError')
    expect(error.message).toBe('bad bytes')
    expect(error.code).toBe('EFIXTURE')
  })

  test('a job past its time budget is killed with its process; the pool goes on with a new one', async () => {
    const p = pool({ size: 1, timeoutMs: 300 })
    const { pid } = await p.run<{ pid: number }>('echo', [0])
    const error = await rejection(p.run('spin', [60_000]))
    expect(error).toBeInstanceOf(BudgetError)
    expect(error.budget).toBe('time')
    await until(() => !isAlive(pid), 'the spinning process to be gone')
    const after = await p.run<{ pid: number }>('echo', [1])
    expect(after.pid).not.toBe(pid)
  })

  test('a job past its memory budget is killed', async () => {
    const p = pool({ size: 1, memoryBytes: 200 * 2 ** 20 })
    const error = await rejection(p.run('allocate', [400]))
    expect(error).toBeInstanceOf(BudgetError)
    expect(error.budget).toBe('memory')
    expect(await p.run('echo', ['still here'])).toMatchObject({ value: 'still here' })
  })

  test('a process that dies mid-job fails that job only', async () => {
    const p = pool({ size: 2 })
    const [crashed, fine] = await Promise.allSettled([p.run('crash', []), p.run('echo', ['ok'])])
    expect(crashed.status).toBe('rejected')
    expect((crashed as PromiseRejectedResult).reason).toBeInstanceOf(WorkerExitedError)
    expect(fine.status).toBe('fulfilled')
  })

  test('at most `size` processes run; jobs beyond them wait, and beyond the queue they are refused', async () => {
    const p = pool({ size: 2, maxQueue: 2 })
    const running = [p.run('spin', [400]), p.run('spin', [400]), p.run('echo', ['queued']), p.run('echo', ['queued'])]
    await until(() => p.processes.length === 2, 'two processes')
    const refused = await rejection(p.run('echo', ['one too many']))
    expect(refused).toBeInstanceOf(PoolBusyError)
    expect(await Promise.all(running)).toMatchObject(['spun', 'spun', { value: 'queued' }, { value: 'queued' }])
    expect(p.processes.length).toBeLessThanOrEqual(2)
  })

  test('an idle process exits; the next job starts another', async () => {
    const p = pool({ size: 1, idleMs: 100 })
    const { pid } = await p.run<{ pid: number }>('echo', [0])
    await until(() => p.processes.length === 0 && !isAlive(pid), 'the idle process to exit')
    const next = await p.run<{ pid: number }>('echo', [1])
    expect(next.pid).not.toBe(pid)
  })

  test('close ends every process and refuses later jobs', async () => {
    const p = pool({ size: 2 })
    await Promise.all([p.run('echo', [1]), p.run('echo', [2])])
    const pids = p.processes
    expect(pids.length).toBeGreaterThan(0)
    await p.close()
    for (const pid of pids) expect(isAlive(pid)).toBe(false)
    expect(await rejection(p.run('echo', [3]))).toBeInstanceOf(Error)
  })
})

describe('the queue takes turns between owners', () => {
  test("another owner's job starts before one owner's queued jobs, in the order the pool starts them", async () => {
    const started: string[] = []
    const p = pool({ size: 1, onStart: (job) => started.push(job.owner) })
    // One process: a's first job runs, the rest wait; b's one job arrives last.
    const jobs = [
      p.run('spin', [100], undefined, 'a'),
      p.run('echo', [1], undefined, 'a'),
      p.run('echo', [2], undefined, 'a'),
      p.run('echo', [3], undefined, 'b'),
    ]
    await Promise.all(jobs)
    expect(started).toEqual(['a', 'b', 'a', 'a'])
  })

  test('owners with jobs waiting take one start each in turn; jobs without an owner share one', async () => {
    const started: string[] = []
    const p = pool({ size: 1, onStart: (job) => started.push(job.owner || '(none)') })
    const jobs = [
      ...['a', 'a', 'a', 'a'].map((owner) => p.run('echo', [0], undefined, owner)),
      ...['b', 'b', 'b'].map((owner) => p.run('echo', [0], undefined, owner)),
      p.run('echo', [0]),
      p.run('echo', [0]),
    ]
    await Promise.all(jobs)
    expect(started).toEqual(['a', 'b', '(none)', 'a', 'b', '(none)', 'a', 'b', 'a'])
  })

  test('an owner gains no credit by idling: a newcomer joins the current turn', () => {
    const queue = createFairQueue<{ owner: string; tag: number; name: string }>()
    const add = (owner: string, name: string) => queue.add({ owner, tag: 0, name })
    const take = () => queue.take()?.name
    for (const name of ['a1', 'a2', 'a3']) add('a', name)
    expect([take(), take()]).toEqual(['a1', 'a2'])
    // b was idle while a ran twice: it starts next, ahead of a's backlog, then they alternate; its idle time buys it
    // no second start in a row.
    add('b', 'b1')
    add('b', 'b2')
    add('a', 'a4')
    expect([take(), take(), take(), take(), take()]).toEqual(['b1', 'a3', 'b2', 'a4', undefined])
    expect(queue.size).toBe(0)
  })
})

describe('worker processes do not outlive the server', () => {
  test('a worker whose parent is killed with SIGKILL exits by itself', async () => {
    // A parent process that starts a pool, reports its worker's pid, then waits to be killed.
    const parentScript = `
      import { createProcessPool } from ${JSON.stringify(fileURLToPath(new URL('../../src/workers/pool.ts', import.meta.url)))}
      const p = createProcessPool({ command: [process.execPath, ${JSON.stringify(fixture)}], env: process.env, size: 1, timeoutMs: 60000, memoryBytes: 2 ** 30, idleMs: 60000, maxQueue: 1 })
      const { pid } = await p.run('echo', [0])
      console.log(pid)
      await Bun.sleep(60000)
    `
    const parent = Bun.spawn([process.execPath, '-e', parentScript], {
      stdout: 'pipe',
      stderr: 'inherit',
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
    })
    const reader = parent.stdout.getReader()
    let text = ''
    while (!/\d+\n/.test(text)) {
      const { value, done } = await reader.read()
      if (done) break
      text += new TextDecoder().decode(value)
    }
    const workerPid = Number(text.trim())
    expect(isAlive(workerPid)).toBe(true)
    parent.kill('SIGKILL')
    await parent.exited
    await until(() => !isAlive(workerPid), 'the orphaned worker to exit')
  })
})
