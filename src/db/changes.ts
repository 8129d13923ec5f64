import type { Database } from 'bun:sqlite'
import type { SQL } from 'bun'
import { log } from '../log'
import { byEngine, type Db, type SqliteDb } from './client'
import { engine } from './engine'

/** Tables whose rows instances keep in memory; their triggers send a notice per changed row (migrations-pg/0002). */
export type CachedTable = 'images' | 'sessions' | 'blocks' | 'variants'

/** `key`: the row with this change key (changeKey) changed or went; null: anything cached from the table may be stale. */
export type ChangeListener = (key: string | null) => void

/**
 * The rows that changed, told to the caches of this process: every cache listens here and nothing else. On SQLite the
 * connection's update hook tells the changes made through it, inside the statement, and `PRAGMA data_version` those of
 * other connections (other processes: the CLI); on PostgreSQL the change notices of every instance (LISTEN/NOTIFY).
 */
export interface ChangeFeed {
  on(table: CachedTable, listener: ChangeListener): void
  /**
   * Tells the table's listeners (with null) that another connection committed since the table's last look: what a
   * cache that must see other processes' writes calls before each read. PostgreSQL's notices come by themselves.
   */
  catchUp(table: CachedTable): void
  /**
   * A row this process changed (`key`: the table's key column): its listeners hear it now, not a notice's round trip
   * later (PostgreSQL); SQLite's hook told them inside the statement.
   */
  changedHere(table: CachedTable, key: string): void
  /**
   * Runs a write whose changes of the table no cache needs to hear (the view flush: a cached entry adds its counts
   * itself). PostgreSQL's trigger leaves view counts out by itself; SQLite's hook tells nothing of the table meanwhile.
   */
  quietly<T>(table: CachedTable, write: () => Promise<T>): Promise<T>
  close(): Promise<void>
}

/**
 * The key the feed tells for a row with this key and rowid: PostgreSQL's triggers send the row's key column, SQLite's
 * update hook knows only the rowid. A cache that drops single rows keys them by it.
 */
export const changeKey = (key: string, rowid: number): string => (engine === 'pg' ? key : String(rowid))

/** Listeners by table, each told in turn; one that throws is logged and the others still hear. */
function listenerTable() {
  const listeners = new Map<CachedTable, ChangeListener[]>()
  const tell = (table: CachedTable, key: string | null) => {
    for (const listener of listeners.get(table) ?? []) {
      try {
        listener(key)
      } catch (error) {
        log.error('cache invalidation failed', { table, error: String(error) })
      }
    }
  }
  return {
    add(table: CachedTable, listener: ChangeListener) {
      listeners.set(table, [...(listeners.get(table) ?? []), listener])
    },
    tell,
    tellAll() {
      for (const table of listeners.keys()) tell(table, null)
    },
  }
}

/**
 * The row changes SQLite's update hook tells, as PostgreSQL's triggers do: images' changes and removals, sessions'
 * removals. Blocks and variants are removed by the one server process alone, which drops its own at once.
 */
const HOOKED = new Map<string, readonly ('update' | 'delete')[]>([
  ['images', ['update', 'delete']],
  ['sessions', ['delete']],
])

/** One feed per SQLite connection: it owns the connection's update hook. */
const sqliteFeeds = new WeakMap<Database, ChangeFeed>()

/** The feed of a SQLite connection (made on first use): its update hook, and data_version for other connections. */
export function sqliteChangeFeed(db: SqliteDb): ChangeFeed {
  const client = db.$client
  const made = sqliteFeeds.get(client)
  if (made) return made
  const listeners = listenerTable()
  const quiet = new Set<string>()
  const hook = (kind: 'update' | 'delete') => (_db: Database, table: string, rowid: number | bigint) => {
    if (HOOKED.get(table)?.includes(kind) && !quiet.has(table)) listeners.tell(table as CachedTable, String(rowid))
  }
  client.onUpdate = hook('update')
  client.onDelete = hook('delete')
  // Moves when another connection commits; this connection's own commits leave it as it was.
  const statement = client.prepare<{ data_version: number }, []>('PRAGMA data_version')
  const dataVersion = () => statement.get()!.data_version
  const seen = new Map<CachedTable, number>()
  const feed: ChangeFeed = {
    on(table, listener) {
      listeners.add(table, listener)
      if (!seen.has(table)) seen.set(table, dataVersion())
    },
    catchUp(table) {
      const version = dataVersion()
      if (seen.get(table) === version) return
      seen.set(table, version)
      listeners.tell(table, null)
    },
    changedHere() {},
    async quietly(table, write) {
      quiet.add(table)
      try {
        // SQLite writes inside this call, before it returns: the hook sees the table quiet.
        return await write()
      } finally {
        quiet.delete(table)
      }
    },
    async close() {},
  }
  sqliteFeeds.set(client, feed)
  return feed
}

/** This process's own changes on PostgreSQL, told when it makes them (a tool's feed: no other instance is heard). */
function ownPgChanges(listeners: ReturnType<typeof listenerTable>): ChangeFeed {
  return {
    on: listeners.add,
    catchUp() {},
    changedHere: listeners.tell,
    quietly: (_table, write) => write(),
    async close() {},
  }
}

const CHANNEL = 'imghost_changes'
/** Each instance notifies itself this often on the channel; a notice of its own overdue means the feed is down. */
const PING_MS = 250
const OVERDUE_MS = 750

/**
 * Rows changed by any instance on one PostgreSQL database: listens on the channel the triggers notify (Bun.SQL's
 * `listen`: one dedicated connection, re-subscribed after a drop). Staleness is bounded at about 1 s even when notices
 * are lost: while the instance's own pings do not come back within OVERDUE_MS, every cache is emptied at each PING_MS
 * tick; and once the subscription comes back after a drop, everything is emptied once more (what changed meanwhile was
 * never told).
 */
async function pgChangeFeed(client: SQL): Promise<ChangeFeed> {
  const listeners = listenerTable()
  const self = crypto.randomUUID()
  let lastPing = Date.now()
  let subscribed = false

  const subscription = await client.listen(
    CHANNEL,
    (payload) => {
      const colon = payload.indexOf(':')
      const table = payload.slice(0, colon)
      const key = payload.slice(colon + 1)
      if (table === 'ping') {
        if (key === self) lastPing = Date.now()
      } else listeners.tell(table as CachedTable, key)
    },
    () => {
      if (subscribed) {
        log.warn('change feed subscribed again: caches emptied')
        listeners.tellAll()
      }
      subscribed = true
      lastPing = Date.now()
    },
  )
  const timer = setInterval(() => {
    client.notify(CHANNEL, `ping:${self}`).catch(() => {})
    if (Date.now() - lastPing > OVERDUE_MS) listeners.tellAll()
  }, PING_MS)
  timer.unref?.()

  return {
    ...ownPgChanges(listeners),
    async close() {
      clearInterval(timer)
      await subscription.unlisten()
    },
  }
}

/** The server's feed: every change to the database, by this process, other processes (SQLite) or instances (PostgreSQL). */
export function openChangeFeed(db: Db): Promise<ChangeFeed> {
  return byEngine(db, {
    sqlite: async (sqlite) => sqliteChangeFeed(sqlite),
    pg: (pg) => pgChangeFeed(pg.$client),
  })
}

/**
 * A tool's feed (the CLI, a bench): no connection of its own. SQLite: the connection's feed, as the server's; PostgreSQL:
 * only what this process changes.
 */
export function localChangeFeed(db: Db): ChangeFeed {
  return byEngine(db, { sqlite: sqliteChangeFeed, pg: () => ownPgChanges(listenerTable()) })
}
