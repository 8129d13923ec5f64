import { readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { HOUR_MS } from '../../lib/time'
import { claim, letGo } from './claims'
import { TUS_ID, type TusContext } from './context'
import { deleteExpiredTusUploads, deleteTusUpload, tusUploadExists } from './repository'
import type { TusCaller } from './service'

/** Files in the tus folder with no row, older than this, are leftovers (a crash between file and row). */
const ORPHAN_AGE_MS = HOUR_MS

/** Termination: the upload and its data go; a finished upload's answer goes (its image stays). */
export async function terminate(ctx: TusContext, caller: TusCaller, id: string) {
  // Held while its row goes, so no request starts writing to it meanwhile.
  const { held } = await claim(ctx, caller, id)
  try {
    await deleteTusUpload(ctx.db, id)
  } finally {
    await letGo(ctx, held)
  }
  await rm(ctx.pathOf(id), { force: true })
}

/**
 * Removes expired uploads with their data, and data files that have no upload (older than an hour). An upload a
 * request holds (on any instance) stays until the next sweep after its claim ends.
 */
export async function sweep(ctx: TusContext, now: number): Promise<number> {
  const { db, dir } = ctx
  // One statement: a claim cannot land between the check and the delete, and a deleted row cannot be claimed.
  const gone = await deleteExpiredTusUploads(db, now, ctx.clock())
  for (const { id } of gone) await rm(ctx.pathOf(id), { force: true })
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const id = name.split('.')[0]
    if (ctx.holding.has(id) || (TUS_ID.test(id) && (await tusUploadExists(db, id)))) continue
    const info = await stat(join(dir, name)).catch(() => null)
    if (info && info.mtimeMs <= now - ORPHAN_AGE_MS) await rm(join(dir, name), { force: true })
  }
  return gone.length
}
