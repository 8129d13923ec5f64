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

/**
 * The list reads on a read-only connection to the SQLite file at `path`, in a Worker: their statements (a few
 * milliseconds at a million images, more for a name filter over a large account) run beside the event loop, so a slow
 * one costs only its request, never /healthz or the other requests. Reads run one at a time on the Worker, in order.
 * The Worker starts with the first read; one that fails is replaced by the next read.
 */
export function workerReads(path: string): Reads {
  let worker: Worker | undefined
  let nextId = 0
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>()

  function fail(reason: string) {
    log.error('list read worker failed; the next read starts another', { error: reason })
    worker?.terminate()
    worker = undefined
    for (const { reject } of pending.values()) reject(new Error(`list read failed: ${reason}`))
    pending.clear()
  }

  function started(): Worker {
    if (worker) return worker
    const w = new Worker(new URL('./read-worker.ts', import.meta.url))
    w.onmessage = (event: MessageEvent<ReadReply>) => {
      const reply = event.data
      const waiting = pending.get(reply.id)
      pending.delete(reply.id)
      if ('error' in reply) waiting?.reject(new Error(reply.error))
      else waiting?.resolve(reply.result)
    }
    w.onerror = (event) => fail(event.message)
    w.postMessage({ type: 'open', path } satisfies ReadRequest)
    worker = w
    return w
  }

  const send = <K extends keyof ListReads>(read: K) =>
    ((...args: unknown[]) =>
      new Promise((resolve, reject) => {
        const id = nextId++
        pending.set(id, { resolve, reject })
        started().postMessage({ type: 'read', id, read, args } satisfies ReadRequest)
      })) as unknown as ListReads[K]

  return {
    feed: send('feed'),
    search: send('search'),
    owned: send('owned'),
    album: send('album'),
    albumStats: send('albumStats'),
    async close() {
      worker?.terminate()
      worker = undefined
    },
  }
}
