import { eq, inArray, lte, sql } from 'drizzle-orm'
import { type Db, q, rawRows, type Step, type Tx } from '../db/client'
import { uploadWindows } from '../db/schema'

/** Every query of the upload_windows table: every rate window (uploads, guesses, reports, the global limit). */

/** A window's row. */
export function* findWindow(db: Db | Tx, key: string) {
  return (yield* q(db.select().from(uploadWindows).where(eq(uploadWindows.key, key))))[0]
}

export function* saveWindow(db: Db | Tx, key: string, windowStart: Date, used: number): Step<void> {
  yield* q(
    db
      .insert(uploadWindows)
      .values({ key, windowStart, used })
      .onConflictDoUpdate({ target: uploadWindows.key, set: { windowStart, used } }),
  )
}

/**
 * Adds requests to windows shared by the instances on one PostgreSQL database (the global per-IP limit, keyed
 * `api:<ip>`): one statement for the batch; a window that ended restarts at `now` with the new count. Answers each
 * window's start and total.
 */
export async function addToSharedWindows(
  db: Db,
  batch: { key: string; count: number }[],
  now: number,
  windowMs: number,
): Promise<{ key: string; start: number; used: number }[]> {
  const rows = await rawRows<{ key: string; window_start: string | number; used: string | number }>(
    db,
    sql`INSERT INTO upload_windows (key, window_start, used)
        SELECT v.key, ${now}, v.n FROM json_to_recordset(${JSON.stringify(batch.map((b) => ({ key: b.key, n: b.count })))}::text::json) AS v(key text, n integer)
        ON CONFLICT (key) DO UPDATE SET
          window_start = CASE WHEN upload_windows.window_start + ${windowMs} <= ${now} THEN ${now} ELSE upload_windows.window_start END,
          used = CASE WHEN upload_windows.window_start + ${windowMs} <= ${now} THEN excluded.used ELSE upload_windows.used + excluded.used END
        RETURNING key, window_start, used`,
  )
  return rows.map((r) => ({ key: r.key, start: Number(r.window_start), used: Number(r.used) }))
}

export const deleteWindows = async (db: Db, keys: string[]) =>
  await db.delete(uploadWindows).where(inArray(uploadWindows.key, keys))

/** Removes the windows that started before `startedBefore`; returns how many went. */
export const deleteWindowsStartedBefore = async (db: Db, startedBefore: number): Promise<number> =>
  (
    await db
      .delete(uploadWindows)
      .where(lte(uploadWindows.windowStart, new Date(startedBefore)))
      .returning({ key: uploadWindows.key })
  ).length
