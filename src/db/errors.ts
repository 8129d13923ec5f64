import { DatabaseBusy, DatabaseReadOnly, DatabaseUnavailable, type DomainError, StorageFull } from '../errors'

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

/**
 * PostgreSQL's faults, by SQLSTATE (Bun.SQL's `errno`): disk full, a read-only server (a standby, or
 * default_transaction_read_only), a lock another session holds (past lock_timeout), the server shutting down or starting, and lost connections; and any error the server
 * sends as FATAL or PANIC, which ends the session (a database that takes no connections, a refused login: the
 * database cannot be reached, whatever the code). Bun's own codes for a connection that could not be made or was lost
 * are the rest.
 */
const PG_FULL = new Set(['53100'])
// A lock not granted within lock_timeout, a deadlock, a serialization failure: another session holds what it needs.
const PG_BUSY = new Set(['55P03', '40P01', '40001'])
const PG_READ_ONLY = new Set(['25006'])
const PG_UNAVAILABLE = /^(08|57P0[1-3]|53300)/
const BUN_PG_UNAVAILABLE =
  /^ERR_POSTGRES_(CONNECTION_CLOSED|CONNECTION_REFUSED|CONNECTION_TIMEOUT|IDLE_TIMEOUT|LIFETIME_TIMEOUT)$/

function postgresFault(error: unknown): DomainError | null {
  for (
    let e = error, depth = 0;
    e && typeof e === 'object' && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const { code, errno, severity } = e as { code?: unknown; errno?: unknown; severity?: unknown }
    if (typeof errno === 'string' && typeof code === 'string' && code.startsWith('ERR_POSTGRES')) {
      if (PG_FULL.has(errno)) return new StorageFull()
      if (PG_READ_ONLY.has(errno)) return new DatabaseReadOnly()
      if (PG_BUSY.has(errno)) return new DatabaseBusy()
      if (PG_UNAVAILABLE.test(errno) || severity === 'FATAL' || severity === 'PANIC') return new DatabaseUnavailable()
    }
    if (typeof code === 'string' && BUN_PG_UNAVAILABLE.test(code)) return new DatabaseUnavailable()
  }
  return null
}

/** A fault of the database (either engine) as the domain error it is; null for anything else. */
export function databaseFault(error: unknown): DomainError | null {
  const sqlite = sqliteCode(error)
  if (sqlite === 'SQLITE_FULL') return new StorageFull()
  if (isBusy(error)) return new DatabaseBusy()
  // Every way SQLite says it cannot write the file: read-only (a read-only open, file or mount), I/O errors, no permission.
  if (/^SQLITE_(READONLY|IOERR|CANTOPEN|PERM)/.test(sqlite)) return new DatabaseReadOnly()
  return postgresFault(error)
}
