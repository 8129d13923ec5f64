import type { SQL } from 'bun'
import { log } from '../log'

/** Tables whose rows instances keep in memory; their triggers send a notice per changed row (migrations-pg/0002). */
export type CachedTable = 'images' | 'sessions' | 'blocks' | 'variants'

/**
 * Rows changed by any instance on one PostgreSQL database, told to this one's caches (SQLite's caches learn the same
 * from the connection's update hook: one process per database there). `listener(key)`: the row with this key changed
 * or went; `listener(null)`: notices may have been missed, so nothing cached from the table can be trusted.
 */
export interface ChangeFeed {
  on(table: CachedTable, listener: (key: string | null) => void): void
  close(): Promise<void>
}

const CHANNEL = 'imghost_changes'
/** Each instance notifies itself this often on the channel; a notice of its own overdue means the feed is down. */
const PING_MS = 250
const OVERDUE_MS = 750

/**
 * Listens on the channel the triggers notify (Bun.SQL's `listen`: one dedicated connection, re-subscribed after a drop).
 * Staleness is bounded at about 1 s even when notices are lost: while the instance's own pings do not come back
 * within OVERDUE_MS, every cache is emptied at each PING_MS tick; and once the subscription comes back after a drop,
 * everything is emptied once more (what changed meanwhile was never told).
 */
export async function startChangeFeed(client: SQL): Promise<ChangeFeed> {
  const listeners = new Map<string, ((key: string | null) => void)[]>()
  const self = crypto.randomUUID()
  let lastPing = Date.now()
  let subscribed = false

  const tell = (table: string, key: string | null) => {
    for (const listener of listeners.get(table) ?? []) {
      try {
        listener(key)
      } catch (error) {
        log.error('cache invalidation failed', { table, error: String(error) })
      }
    }
  }
  const dropAll = () => {
    for (const table of listeners.keys()) tell(table, null)
  }

  const subscription = await client.listen(
    CHANNEL,
    (payload) => {
      const colon = payload.indexOf(':')
      const table = payload.slice(0, colon)
      const key = payload.slice(colon + 1)
      if (table === 'ping') {
        if (key === self) lastPing = Date.now()
      } else tell(table, key)
    },
    () => {
      if (subscribed) {
        log.warn('change feed subscribed again: caches emptied')
        dropAll()
      }
      subscribed = true
      lastPing = Date.now()
    },
  )
  const timer = setInterval(() => {
    client.notify(CHANNEL, `ping:${self}`).catch(() => {})
    if (Date.now() - lastPing > OVERDUE_MS) dropAll()
  }, PING_MS)
  timer.unref?.()

  return {
    on(table, listener) {
      const list = listeners.get(table) ?? []
      list.push(listener)
      listeners.set(table, list)
    },
    async close() {
      clearInterval(timer)
      await subscription.unlisten()
    },
  }
}
