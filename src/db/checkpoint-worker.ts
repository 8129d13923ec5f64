// Runs SQLite's WAL checkpoints on a connection of its own, off the main thread (src/db/checkpointer.ts).
import { Database } from 'bun:sqlite'
import type { CheckpointMessage, CheckpointRequest } from './checkpointer'

declare const self: Worker

let db: Database | undefined
let timer: ReturnType<typeof setInterval> | undefined

function post(message: CheckpointMessage): void {
  self.postMessage(message)
}

let failing = false

/**
 * PASSIVE: copies what it can without waiting on any reader or writer, so it never holds up the server's connection.
 * A checkpoint that fails (a read-only or full disk) is tried again on the next tick: the WAL only grows meanwhile.
 * The server is told when that starts and ends, not on every tick.
 */
function checkpoint(): void {
  try {
    db?.exec('PRAGMA wal_checkpoint(PASSIVE)')
    if (failing) post({ type: 'recovered' })
    failing = false
  } catch (err) {
    if (!failing) post({ type: 'checkpoint-failed', message: String(err) })
    failing = true
  }
}

self.onmessage = (event: MessageEvent<CheckpointRequest>) => {
  const msg = event.data
  if (msg.type === 'start') {
    try {
      db = new Database(msg.path)
      timer = setInterval(checkpoint, msg.intervalMs)
      post({ type: 'started' })
    } catch (err) {
      post({ type: 'failed', message: String(err) })
    }
    return
  }
  clearInterval(timer)
  checkpoint()
  db?.close()
  post({ type: 'stopped' })
}
