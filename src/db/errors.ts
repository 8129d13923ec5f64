/**
 * The SQLite result code behind an error (`SQLITE_BUSY`, `SQLITE_IOERR_WRITE`, ...), or '' when it is not SQLite's:
 * drizzle wraps the driver's error in its own (as `cause`), so the chain is followed.
 */
export function sqliteCode(error: unknown): string {
  for (
    let e = error, depth = 0;
    e && typeof e === 'object' && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && code.startsWith('SQLITE_')) return code
  }
  return ''
}

/** Another connection holds the write lock (another process, a held transaction): worth retrying shortly. */
export const isBusy = (error: unknown) => /^SQLITE_(BUSY|LOCKED)/.test(sqliteCode(error))
