import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createFairQueue } from '../../src/workers/fair-queue'
import { processWorkers, threadWorkers } from '../../src/workers/handles'
import {
  BudgetError,
  createWorkerPool,
  PoolBusyError,
  WorkerExitedError,
  type WorkerPool,
  type WorkerPoolOptions,
} from '../../src/workers/pool'
import { isAlive } from '../helpers'
import type { FixtureSetup } from './fixture-worker'

const fixtureUrl = new URL('./fixture-worker.ts', import.meta.url)
const fixture = fileURLToPath(fixtureUrl)
const pools: WorkerPool[] = []

/** The same fixture started either way the pool can start a worker. */
const starts = {
  process: () => processWorkers({ command: [process.execPath, fixture], env: process.env }),
  thread: () => threadWorkers(fixtureUrl),
}
type Kind = keyof typeof starts

function pool(kind: Kind, opts: Partial<WorkerPoolOptions> & { setup?: FixtureSetup } = {}) {
  const p = createWorkerPool({
    start: starts[kind](),
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

type Echo = { value: unknown; pid: number; worker: string }

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

describe.each(['process', 'thread'] as const)('a pool of %s workers', (kind) => {
  test('runs jobs in a worker, off this thread, and reuses an idle worker', async () => {
    const p = pool(kind, { size: 1 })
    const first = await p.run<Echo>('echo', [1])
    const second = await p.run<Echo>('echo', [{ nested: [2] }])
    expect(first.value).toBe(1)
    expect(second.value).toEqual({ nested: [2] })
    expect(second.worker).toBe(first.worker)
    expect(first.pid === process.pid).toBe(kind === 'thread')
  })

  test("a job's own error comes back with its name, message and errno code", async () => {
    const error = await rejection(pool(kind).run('fail', ['bad bytes']))
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('MediaError')
    expect(error.message).toBe('bad bytes')
    expect(error.code).toBe('EFIXTURE')
  })

  test('a job past its time budget fails closed, its worker ended; the next job gets a new worker', async () => {
    const p = pool(kind, { size: 1, timeoutMs: 300 })
    const before = await p.run<Echo>('echo', [0])
    const started = Date.now()
    const error = await rejection(p.run('spin', [60_000]))
    expect(error).toBeInstanceOf(BudgetError)
    expect(error.budget).toBe('time')
    expect(error.message).toBe('job ran past its 300 ms budget')
    expect(Date.now() - started).toBeLessThan(10_000)
    if (kind === 'process') await until(() => !isAlive(before.pid), 'the spinning process to be gone')
    const after = await p.run<Echo>('echo', [1])
    expect(after.worker).not.toBe(before.worker)
  })

  test('a worker that dies mid-job fails that job only; the job queued behind it runs in a new worker', async () => {
    const p = pool(kind, { size: 1 })
    const before = await p.run<Echo>('echo', [0])
    const [crashed, next] = await Promise.allSettled([p.run('crash', []), p.run<Echo>('echo', ['ok'])])
    expect(crashed.status).toBe('rejected')
    const error = (crashed as PromiseRejectedResult).reason
    expect(error).toBeInstanceOf(WorkerExitedError)
    expect(error.message).toBe('worker exited (code 3)')
    expect(next).toMatchObject({ status: 'fulfilled', value: { value: 'ok' } })
    expect((next as PromiseFulfilledResult<Echo>).value.worker).not.toBe(before.worker)
  })

  test('at most `size` workers run; jobs beyond them wait, and beyond the queue they are refused at once', async () => {
    const started: string[] = []
    const p = pool(kind, { size: 2, maxQueue: 2, onStart: (job) => started.push(job.op) })
    const running = [
      p.run('spin', [400]),
      p.run('spin', [400]),
      p.run<Echo>('echo', ['queued']),
      p.run<Echo>('echo', ['queued']),
    ]
    expect(p.workers.starting + p.workers.ready).toBe(2)
    expect(p.queued).toBe(2)
    const refused = await rejection(p.run('echo', ['one too many']))
    expect(refused).toBeInstanceOf(PoolBusyError)
    expect(refused.message).toBe('queue full (2 waiting)')
    expect(await Promise.all(running)).toMatchObject(['spun', 'spun', { value: 'queued' }, { value: 'queued' }])
    expect(started).toEqual(['spin', 'spin', 'echo', 'echo'])
    // Room again once the backlog is done.
    expect(await p.run('echo', ['later'])).toMatchObject({ value: 'later' })
  })

  test('each worker is set up before its first job; warm() starts one and waits for it, the first job uses it', async () => {
    const ready: unknown[] = []
    const p = pool(kind, { size: 1, setup: { startMs: 200 }, onReady: (info) => ready.push(info) })
    const warming = p.warm()
    expect(p.workers).toEqual({ starting: 1, ready: 0 })
    await warming
    expect(p.workers).toEqual({ starting: 0, ready: 1 })
    expect(ready).toMatchObject([{ setup: { startMs: 200 } }])
    const { worker } = await p.run<Echo>('echo', [1])
    expect(ready).toEqual([{ worker, setup: { startMs: 200 } }])
  })

  test('a worker that fails to start fails its job and warm() with the reason; a later job tries a new one', async () => {
    const ready: unknown[] = []
    const p = pool(kind, { size: 1, setup: { fail: 'no model here' }, onReady: (info) => ready.push(info) })
    const [job, warming] = await Promise.allSettled([p.run('echo', [1]), p.warm()])
    for (const outcome of [job, warming]) {
      const error = (outcome as PromiseRejectedResult).reason
      expect(error).toBeInstanceOf(WorkerExitedError)
      expect(error.message).toBe('worker failed to start: no model here')
    }
    expect(await rejection(p.run('echo', [2]))).toBeInstanceOf(WorkerExitedError)
    expect(ready).toEqual([])
    await until(() => p.workers.starting + p.workers.ready === 0 && p.processes.length === 0, 'no worker left')
  })

  test('an idle worker is ended (and told); the next job starts another', async () => {
    let idleExits = 0
    const p = pool(kind, { size: 1, idleMs: 100, onIdleExit: () => idleExits++ })
    const first = await p.run<Echo>('echo', [0])
    await until(() => idleExits === 1, 'the idle worker to be ended')
    expect(p.workers).toEqual({ starting: 0, ready: 0 })
    if (kind === 'process') await until(() => !isAlive(first.pid), 'the idle process to exit')
    const next = await p.run<Echo>('echo', [1])
    expect(next.worker).not.toBe(first.worker)
  })

  test('a caller that stops waiting: its queued job leaves the queue, its running job runs on and holds its worker', async () => {
    const started: string[] = []
    const p = pool(kind, { size: 1, onStart: (job) => started.push(job.op) })
    await p.run('echo', [0])
    const running = new AbortController()
    const waiting = new AbortController()
    const spin = p.run('spin', [500], { signal: running.signal })
    const queued = p.run('echo', ['never'], { signal: waiting.signal })
    expect(p.pending).toBe(2)
    waiting.abort(new Error('gave up waiting'))
    expect((await rejection(queued)).message).toBe('gave up waiting')
    expect(p.queued).toBe(0)
    const t0 = Date.now()
    running.abort(new Error('gave up running'))
    expect((await rejection(spin)).message).toBe('gave up running')
    expect(p.pending).toBe(0)
    // The worker is still spinning: the next job waits for it, in the same worker (not a new one).
    const next = await p.run<Echo>('echo', ['after'])
    expect(Date.now() - t0).toBeGreaterThan(200)
    expect(next.value).toBe('after')
    expect(started).toEqual(['echo', 'spin', 'echo'])
    expect(p.workers).toEqual({ starting: 0, ready: 1 })
  })

  test('a job given up while its worker starts is never sent to it; the next job takes the worker', async () => {
    const started: string[] = []
    const p = pool(kind, { size: 1, setup: { startMs: 300 }, onStart: (job) => started.push(job.op) })
    const gaveUp = new AbortController()
    const first = p.run('spin', [60_000], { signal: gaveUp.signal })
    expect(p.workers).toEqual({ starting: 1, ready: 0 })
    gaveUp.abort(new Error('gave up'))
    expect((await rejection(first)).message).toBe('gave up')
    expect(await p.run('echo', ['next'])).toMatchObject({ value: 'next' })
    expect(started).toEqual(['echo'])
  })

  test('close fails running and queued jobs at once, ends every worker and refuses later jobs', async () => {
    const p = pool(kind, { size: 1 })
    const { pid } = await p.run<Echo>('echo', [1])
    const failures = [p.run('spin', [60_000]), p.run('echo', [2])].map(rejection)
    await Bun.sleep(50)
    await p.close()
    for (const failure of failures) expect((await failure).message).toBe('worker pool is closed')
    expect(p.workers).toEqual({ starting: 0, ready: 0 })
    if (kind === 'process') expect(isAlive(pid)).toBe(false)
    expect(await rejection(p.run('echo', [3]))).toBeInstanceOf(PoolBusyError)
    expect(await rejection(p.warm())).toBeInstanceOf(PoolBusyError)
  })
})

describe('thread workers', () => {
  test("a transferred buffer is moved to the worker (the caller's view is emptied); early values arrive first", async () => {
    const p = pool('thread', { size: 1 })
    const bytes = new Uint8Array(1000)
    const early: unknown[] = []
    const seen = await p.run('bytes', [bytes], { transfer: [bytes.buffer], early: (v) => early.push(v) })
    expect(seen).toBe(1000)
    expect(early).toEqual([1000])
    expect(bytes.byteLength).toBe(0)
    // Without `transfer` it is copied.
    const kept = new Uint8Array(10)
    expect(await p.run('bytes', [kept])).toBe(10)
    expect(kept.byteLength).toBe(10)
  })
})

describe('process workers', () => {
  test("run below the server's CPU priority (nice 10), so a slow file never takes the event loop's core", async () => {
    const { pid } = await pool('process', { size: 1 }).run<Echo>('echo', [0])
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const niceness = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
    const own = Number(readFileSync('/proc/self/stat', 'latin1').split(') ')[1].split(' ')[16])
    expect(niceness).toBe(own + 10)
  })

  test('a job past its memory budget fails closed with its process killed; the pool goes on', async () => {
    const p = pool('process', { size: 1, memoryBytes: 200 * 2 ** 20 })
    const { pid } = await p.run<Echo>('echo', [0])
    const error = await rejection(p.run('allocate', [400]))
    expect(error).toBeInstanceOf(BudgetError)
    expect(error.budget).toBe('memory')
    expect(error.message).toBe(`job passed its ${200 * 2 ** 20} byte memory budget`)
    await until(() => !isAlive(pid), 'the process to be gone')
    expect(await p.run('echo', ['still here'])).toMatchObject({ value: 'still here' })
  })

  test('a worker whose parent is killed with SIGKILL exits by itself', async () => {
    // A parent process that starts a pool, reports its worker's pid, then waits to be killed.
    const src = (file: string) => JSON.stringify(fileURLToPath(new URL(`../../src/workers/${file}`, import.meta.url)))
    const parentScript = `
      import { createWorkerPool } from ${src('pool.ts')}
      import { processWorkers } from ${src('handles.ts')}
      const start = processWorkers({ command: [process.execPath, ${JSON.stringify(fixture)}], env: process.env })
      const p = createWorkerPool({ start, size: 1, timeoutMs: 60000, idleMs: 60000, maxQueue: 1 })
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

describe('the queue takes turns between owners', () => {
  test("another owner's job starts before one owner's queued jobs, in the order the pool starts them", async () => {
    const started: string[] = []
    const p = pool('process', { size: 1, onStart: (job) => started.push(job.owner) })
    // One process: a's first job runs, the rest wait; b's one job arrives last.
    const jobs = [
      p.run('spin', [100], { owner: 'a' }),
      p.run('echo', [1], { owner: 'a' }),
      p.run('echo', [2], { owner: 'a' }),
      p.run('echo', [3], { owner: 'b' }),
    ]
    await Promise.all(jobs)
    expect(started).toEqual(['a', 'b', 'a', 'a'])
  })

  test('owners with jobs waiting take one start each in turn; jobs without an owner share one', async () => {
    const started: string[] = []
    const p = pool('process', { size: 1, onStart: (job) => started.push(job.owner || '(none)') })
    const jobs = [
      ...['a', 'a', 'a', 'a'].map((owner) => p.run('echo', [0], { owner })),
      ...['b', 'b', 'b'].map((owner) => p.run('echo', [0], { owner })),
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
