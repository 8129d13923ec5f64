// Runs the list reads (list-reads.ts) on a read-only SQLite connection of its own, off the server's event loop
// (reads.ts starts it and sends it each read).
import { Database } from 'bun:sqlite'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { sqliteChangeFeed } from '../../db/changes'
import { tuneReads } from '../../db/client'
import * as schema from '../../db/schema-sqlite'
import { type ListReads, listReads } from './list-reads'
import type { ReadReply, ReadRequest } from './reads'

declare const self: Worker

let reads: ListReads | undefined

self.onmessage = async (event: MessageEvent<ReadRequest>) => {
  const msg = event.data
  if (msg.type === 'open') {
    const sqlite = new Database(msg.path, { readonly: true })
    // A reader waits out a writer's WAL recovery or a checkpoint's brief lock, here, off the event loop.
    sqlite.exec('PRAGMA busy_timeout = 5000')
    tuneReads(sqlite)
    const db = drizzle(sqlite, { schema })
    // The connection never writes: its feed tells every commit of the server's (list-reads.ts keptScopes).
    reads = listReads(db, sqliteChangeFeed(db))
    return
  }
  let reply: ReadReply
  try {
    const read = reads![msg.read] as (...args: unknown[]) => Promise<unknown>
    reply = { id: msg.id, result: await read(...msg.args) }
  } catch (error) {
    reply = { id: msg.id, error: error instanceof Error ? error.message : String(error) }
  }
  self.postMessage(reply)
}
