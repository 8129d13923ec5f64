import type { Db } from '../../db/client'
import { log } from '../../log'
import { type ListReads, listReads } from './list-reads'

/** A list read sent to the Worker (read-worker.ts): its name and plain arguments, or the database to open. */
export type ReadRequest =
  | { type: 'open'; path: string }
  | { type: 'read'; id: number; read: keyof ListReads; args: unknown[] }
/** Its answer: the result, or the error's message. */
export type ReadReply = { id: number; result: unknown } | { id: number; error: string }

/** The list reads of this process, and how to stop them. */
export type Reads = ListReads & { close(): Promise<void> }

/**
 * The list reads (the gallery, profiles, search, owners' lists) on the server's own connection: PostgreSQL's queries
 * wait off the event loop already.
 */
export function localReads(db: Db): Reads {
  return { ...listReads(db), close: async () => {} }
}

/** Reading Workers: as many as the cores a small host has, so reads run side by side and one long read stalls none. */
const READ_WORKERS = 2
/**
 * A Worker that has read nothing for this long is ended (each holds ~18 MB of the process's memory while it runs) and
 * started again by the next read sent to it (~0.1 s).
 */
const IDLE_MS = 5 * 60_000

/** The list reads of Workers, and how many Workers run now. */
export type WorkerReads = Reads & { running(): number }

/**
 * The list reads on read-only connections to the SQLite file at `path`, in Workers (READ_WORKERS): their statements (a
 * few milliseconds at a million images, more for a name filter over a large account) run beside the event loop, so a
 * slow one costs only its request and those queued behind it on its Worker, never /healthz or the other requests. A read
 * goes to the Worker with the fewest waiting. Each Worker starts with its first read, ends after `idleMs` without one,
 * and one that fails is replaced by the next read sent to it.
 */
export function workerReads(path: string, opts: { size?: number; idleMs?: number } = {}): WorkerReads {
  type Waiting = { resolve: (value: unknown) => void; reject: (error: Error) => void }
  type Slot = { worker?: Worker; pending: Map<number, Waiting>; idle?: ReturnType<typeof setTimeout> }
  const slots: Slot[] = Array.from({ length: opts.size ?? READ_WORKERS }, () => ({ pending: new Map() }))
  const idleMs = opts.idleMs ?? IDLE_MS
  let nextId = 0

  function end(slot: Slot) {
    clearTimeout(slot.idle)
    slot.worker?.terminate()
    slot.worker = undefined
  }

  function fail(slot: Slot, reason: string) {
    log.error('list read worker failed; the next read starts another', { error: reason })
    end(slot)
    for (const { reject } of slot.pending.values()) reject(new Error(`list read failed: ${reason}`))
    slot.pending.clear()
  }

  function started(slot: Slot): Worker {
    clearTimeout(slot.idle)
    if (slot.worker) return slot.worker
    const w = new Worker(new URL('./read-worker.ts', import.meta.url))
    w.onmessage = (event: MessageEvent<ReadReply>) => {
      const reply = event.data
      const waiting = slot.pending.get(reply.id)
      slot.pending.delete(reply.id)
      if ('error' in reply) waiting?.reject(new Error(reply.error))
      else waiting?.resolve(reply.result)
      if (slot.pending.size === 0) {
        slot.idle = setTimeout(() => end(slot), idleMs)
        // An idle Worker's timer keeps no process alive.
        slot.idle.unref()
      }
    }
    w.onerror = (event) => fail(slot, event.message)
    w.postMessage({ type: 'open', path } satisfies ReadRequest)
    slot.worker = w
    return w
  }

  const send = <K extends keyof ListReads>(read: K) =>
    ((...args: unknown[]) =>
      new Promise((resolve, reject) => {
        const slot = slots.reduce((least, s) => (s.pending.size < least.pending.size ? s : least))
        const id = nextId++
        slot.pending.set(id, { resolve, reject })
        started(slot).postMessage({ type: 'read', id, read, args } satisfies ReadRequest)
      })) as unknown as ListReads[K]

  return {
    feed: send('feed'),
    search: send('search'),
    owned: send('owned'),
    album: send('album'),
    albumStats: send('albumStats'),
    storedAmong: send('storedAmong'),
    running: () => slots.filter((slot) => slot.worker).length,
    async close() {
      for (const slot of slots) end(slot)
    },
  }
}
