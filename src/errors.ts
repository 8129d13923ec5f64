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

/** The server is shutting down and its deadline passed while the upload's body was still arriving: nothing was stored. */
export class ServerStopping extends DomainError {
  constructor() {
    super('The server is restarting; nothing was stored, send the upload again shortly')
  }
}

/** The object store cannot be reached (src/storage/faults.ts): never stale or other bytes. */
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
