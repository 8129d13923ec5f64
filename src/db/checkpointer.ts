import { log } from '../log'
import type { SqliteDb } from './client'

export type CheckpointRequest = { type: 'start'; path: string; intervalMs: number } | { type: 'stop' }
export type CheckpointMessage =
  | { type: 'started' }
  | { type: 'stopped' }
  /** The Worker cannot run: the server checkpoints by itself. */
  | { type: 'failed'; message: string }
  /** Checkpoints fail for now (a read-only or full disk); the Worker keeps trying. */
  | { type: 'checkpoint-failed'; message: string }
  | { type: 'recovered' }

/** SQLite's own default: a checkpoint once the WAL holds this many pages. */
const AUTO_CHECKPOINT_PAGES = 1000

/**
 * WAL checkpoints on a Worker's own connection, every `intervalMs`. Left to SQLite, a checkpoint runs inside whichever
 * commit takes the WAL past 1,000 pages, copying them into the database file and syncing it on the event loop (10-40 ms
 * here, the longest stalls of a view flush: bench/README.md). The server's connection stops checkpointing by itself
 * while the Worker runs, and starts again if it fails or stops.
 */
export function startCheckpointer(db: SqliteDb, path: string, intervalMs = 1000) {
  const client = db.$client
  const worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url))
  const selfCheckpoint = () => client.exec(`PRAGMA wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`)
  let stopping = false
  let stopped: (() => void) | undefined
  const fallBack = (reason: string) => {
    selfCheckpoint()
    log.warn('checkpoint worker failed: the server checkpoints by itself again', { error: reason })
  }
  worker.onmessage = (event: MessageEvent<CheckpointMessage>) => {
    const msg = event.data
    if (msg.type === 'failed') fallBack(msg.message)
    else if (msg.type === 'checkpoint-failed')
      log.warn('WAL checkpoints failing; retried every interval', { error: msg.message })
    else if (msg.type === 'recovered') log.info('WAL checkpoints work again')
    else if (msg.type === 'stopped') stopped?.()
    else if (!stopping) client.exec('PRAGMA wal_autocheckpoint = 0')
  }
  worker.onerror = (event) => fallBack(event.message)
  worker.postMessage({ type: 'start', path, intervalMs } satisfies CheckpointRequest)

  return {
    /** Checkpoints once more, closes the Worker's connection; the server's connection checkpoints by itself again. */
    async stop() {
      stopping = true
      selfCheckpoint()
      const done = new Promise<void>((resolve) => (stopped = resolve))
      worker.postMessage({ type: 'stop' } satisfies CheckpointRequest)
      await Promise.race([done, Bun.sleep(2000)])
      worker.terminate()
    },
  }
}
