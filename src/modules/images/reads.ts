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
 * The list reads on read-only connections to the SQLite file at `path`, in Workers (READ_WORKERS): their statements (a
 * few milliseconds at a million images, more for a name filter over a large account) run beside the event loop, so a
 * slow one costs only its request and those queued behind it on its Worker, never /healthz or the other requests. A read
 * goes to the Worker with the fewest waiting. Each Worker starts with its first read; one that fails is replaced by the
 * next read sent to it.
 */
export function workerReads(path: string, size = READ_WORKERS): Reads {
  type Waiting = { resolve: (value: unknown) => void; reject: (error: Error) => void }
  const slots = Array.from({ length: size }, () => ({
    worker: undefined as Worker | undefined,
    pending: new Map<number, Waiting>(),
  }))
  let nextId = 0

  function fail(slot: (typeof slots)[number], reason: string) {
    log.error('list read worker failed; the next read starts another', { error: reason })
    slot.worker?.terminate()
    slot.worker = undefined
    for (const { reject } of slot.pending.values()) reject(new Error(`list read failed: ${reason}`))
    slot.pending.clear()
  }

  function started(slot: (typeof slots)[number]): Worker {
    if (slot.worker) return slot.worker
    const w = new Worker(new URL('./read-worker.ts', import.meta.url))
    w.onmessage = (event: MessageEvent<ReadReply>) => {
      const reply = event.data
      const waiting = slot.pending.get(reply.id)
      slot.pending.delete(reply.id)
      if ('error' in reply) waiting?.reject(new Error(reply.error))
      else waiting?.resolve(reply.result)
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
    async close() {
      for (const slot of slots) {
        slot.worker?.terminate()
        slot.worker = undefined
      }
    },
  }
}
