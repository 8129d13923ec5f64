import type { ChangeFeed } from '../../db/changes'
import type { Db } from '../../db/client'
import { createHashIndex } from './matcher'
import { hashesAfter, lastBlockId } from './repository'

/**
 * The perceptual hashes of every block, in memory (matcher.ts), loaded at start; blocks added by anyone (this
 * process, the CLI beside it) are picked up at the next `sync` by id, lifted ones are dropped at once.
 */
export function createBlockIndex(deps: { db: Db; changes?: ChangeFeed; maxDistance: number }) {
  const { db } = deps
  let index = createHashIndex(deps.maxDistance)
  let loaded = 0
  const lastBlock = lastBlockId(db)
  deps.changes?.on('blocks', (id) => {
    // Missed notices: load everything again (`loaded` 0 makes the next check read every block).
    if (id === null) {
      index = createHashIndex(deps.maxDistance)
      loaded = 0
    } else index.remove(Number(id))
  })

  /** Adds the blocks made since the last look; one indexed read when there are none. */
  async function load() {
    const into = index
    const last = (await lastBlock()) ?? 0
    if (last <= loaded) return
    const rows = await hashesAfter(db, loaded)
    // Emptied meanwhile (missed change notices): the next look loads everything into the new index.
    if (index !== into) return
    for (const [id, phash] of rows) {
      index.add(id, phash)
      loaded = Math.max(loaded, id)
    }
    loaded = Math.max(loaded, last)
  }
  // One look at a time: checks that arrive while one runs share it.
  let syncing: Promise<void> | null = null
  const sync = () => {
    syncing ??= load().finally(() => {
      syncing = null
    })
    return syncing
  }

  return {
    sync,
    nearest: (phash: string) => index.nearest(phash),
    add: (id: number, phash: string) => index.add(id, phash),
    remove: (id: number) => index.remove(id),
  }
}
