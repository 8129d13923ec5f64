import { isBusy, sqliteCode } from './db/errors'
import { StorageUnavailableError } from './storage/index'

/**
 * The refusals and failures the service's own code throws, each with a public message (and `extra` facts added to the
 * answer's body). They know no HTTP: src/http/errors.ts maps each kind to its status and headers in one table, so
 * modules and infrastructure can both throw them.
 */
export class DomainError extends Error {
  constructor(
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

/** The request is malformed or asks for something the contract does not allow. */
export class Invalid extends DomainError {}
export class Unauthorized extends DomainError {}
export class Forbidden extends DomainError {}
export class NotFound extends DomainError {}
export class Conflict extends DomainError {}
/** It existed but is over (an expired upload). */
export class Gone extends DomainError {}
export class TooLarge extends DomainError {}
/** An account's storage limit would be passed. */
export class QuotaExceeded extends DomainError {}
/** Another request is working on the same thing right now. */
export class Locked extends DomainError {}
/** What was asked of an existing thing cannot be made from it (a size of an image past the media budget). */
export class Unprocessable extends DomainError {}

/** A resumable upload is not at the offset the client sent: the offset it is really at travels with the refusal. */
export class OffsetConflict extends Conflict {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message, { offset })
  }
}

/** The facts of a used-up rate window: what the answer's RateLimit-* and Retry-After headers say. */
export interface RateLimitFacts {
  limit: number
  remaining: number
  resetSeconds: number
}

export class RateLimited extends DomainError {
  constructor(
    message: string,
    readonly facts: RateLimitFacts,
  ) {
    super(message, { retryAfter: facts.resetSeconds })
  }
}

/** The media workers' queue is full: nothing was stored, the client tries again shortly. */
export class PoolBusy extends DomainError {
  constructor() {
    super('The server is busy processing images, try again shortly')
  }
}

/** The object store cannot be reached (storage says so with its StorageUnavailableError): never stale or other bytes. */
export class StorageUnavailable extends DomainError {
  constructor() {
    super('Storage temporarily unavailable, try again shortly')
  }
}

export class StorageFull extends DomainError {
  constructor() {
    super("The server's storage is full; nothing was stored")
  }
}
export class StorageUnwritable extends DomainError {
  constructor() {
    super("The server's storage cannot be written; nothing was stored")
  }
}
export class DatabaseBusy extends DomainError {
  constructor() {
    super('The database is busy (locked by another process); nothing was changed, try again shortly')
  }
}
export class DatabaseReadOnly extends DomainError {
  constructor() {
    super('The database is read-only (it cannot be written); nothing was changed, try again later')
  }
}
export class DatabaseUnavailable extends DomainError {
  constructor() {
    super('The database cannot be reached; nothing was changed, try again shortly')
  }
}

// The usual ways to throw the common kinds, with their default words.
export const badRequest = (message: string, extra?: Record<string, unknown>) => new Invalid(message, extra)
export const unauthorized = (message = 'Authentication required') => new Unauthorized(message)
export const forbidden = (message = 'Forbidden') => new Forbidden(message)
/** The 404 text when nothing more specific applies. */
export const NOT_FOUND = 'Not found'
export const notFound = (message = NOT_FOUND, extra?: Record<string, unknown>) => new NotFound(message, extra)
export const conflict = (message: string) => new Conflict(message)
export const tooLarge = (message: string) => new TooLarge(message)

/** A write to the local disk failed for lack of space or a read-only file system (errno codes only writes give). */
const FULL_ERRNO = new Set(['ENOSPC', 'EDQUOT'])
const UNWRITABLE_ERRNO = new Set(['EROFS'])

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

/**
 * Faults of the server's disk, database or object store, not of the request, as the domain error they are; null for
 * anything else.
 */
export function faultOf(error: unknown): DomainError | null {
  const fault = classifyFault(error)
  if (fault) faultSeenAt = Date.now()
  return fault
}

/** When a fault was last seen (epoch ms, 0 for never): a health verdict given before it is out of date. */
let faultSeenAt = 0
export const lastFaultAt = () => faultSeenAt

function classifyFault(error: unknown): DomainError | null {
  const sqlite = sqliteCode(error)
  if (sqlite === 'SQLITE_FULL') return new StorageFull()
  if (isBusy(error)) return new DatabaseBusy()
  // Every way SQLite says it cannot write the file: read-only (a read-only open, file or mount), I/O errors, no permission.
  if (/^SQLITE_(READONLY|IOERR|CANTOPEN|PERM)/.test(sqlite)) return new DatabaseReadOnly()
  const postgres = postgresFault(error)
  if (postgres) return postgres
  for (
    let e = error, depth = 0;
    e && typeof e === 'object' && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const errno = String((e as { code?: unknown }).code ?? '')
    if (FULL_ERRNO.has(errno)) return new StorageFull()
    if (UNWRITABLE_ERRNO.has(errno)) return new StorageUnwritable()
  }
  // The object store, once its retries gave up (a local disk's fault in its cause was answered above).
  if (error instanceof StorageUnavailableError) return new StorageUnavailable()
  return null
}
