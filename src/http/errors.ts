import { Elysia, t } from 'elysia'
import { isBusy, sqliteCode } from '../db/errors'
import { log } from '../log'

/** The one error type of the service: services throw it, the error hook turns it into `{ error }` with its status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export const badRequest = (message: string, extra?: Record<string, unknown>) => new HttpError(400, message, extra)
export const unauthorized = (message = 'Authentication required') => new HttpError(401, message)
export const forbidden = (message = 'Forbidden') => new HttpError(403, message)
/** The 404 text when nothing more specific applies. */
export const NOT_FOUND = 'Not found'
export const notFound = (message = NOT_FOUND, extra?: Record<string, unknown>) => new HttpError(404, message, extra)
export const conflict = (message: string) => new HttpError(409, message)
export const tooLarge = (message: string) => new HttpError(413, message)

export const ErrorBody = t.Object({ error: t.String() }, { description: 'Error', additionalProperties: true })

/** Error responses for route schemas, so /swagger lists them next to the success shape. */
export function errors(...statuses: number[]) {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBody])) as Record<number, typeof ErrorBody>
}

type ValidationLike = {
  all?: { path?: string; message?: string; summary?: string }[]
  message?: string
  customError?: unknown
}

function validationMessage(error: ValidationLike): string {
  // A schema's own `error` text (e.g. `t.Union([...], { error: 'color must be #rrggbb' })`) is clearer than the generic one.
  if (typeof error.customError === 'string' && error.customError) return error.customError
  const first = error.all?.[0]
  if (!first) return 'Invalid request'
  const field = first.path?.replace(/^\//, '').replace(/\//g, '.')
  const what = first.summary ?? first.message ?? 'is invalid'
  return field ? `Invalid ${field}: ${what}` : what
}

const JSON_TYPE = 'application/json; charset=utf-8'
/** On every answer: a browser never reads a JSON body (an error echoing user text included) as HTML or script. */
const NOSNIFF = { 'x-content-type-options': 'nosniff' } as const

/** A JSON answer with its length set, so the request log reports its size without reading the body. */
export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  const text = JSON.stringify(body)
  return new Response(text, {
    status,
    headers: { ...headers, ...NOSNIFF, 'content-type': JSON_TYPE, 'content-length': String(Buffer.byteLength(text)) },
  })
}

/** Seconds a client should wait before retrying a write the database refused: a held lock clears fast, a read-only file not. */
const RETRY_BUSY_SECONDS = '2'
const RETRY_READ_ONLY_SECONDS = '30'

export const STORAGE_FULL = "The server's storage is full; nothing was stored"
export const STORAGE_UNWRITABLE = "The server's storage cannot be written; nothing was stored"
export const DATABASE_BUSY = 'The database is busy (locked by another process); nothing was changed, try again shortly'
export const DATABASE_READ_ONLY =
  'The database is read-only (it cannot be written); nothing was changed, try again later'

/** A write to the local disk failed for lack of space or a read-only file system (errno codes only writes give). */
const FULL_ERRNO = new Set(['ENOSPC', 'EDQUOT'])
const UNWRITABLE_ERRNO = new Set(['EROFS'])

/** Faults of the server's disk or database, not of the request: the one table of their statuses and words. */
function classifyFault(error: unknown): HttpError | null {
  const sqlite = sqliteCode(error)
  if (sqlite === 'SQLITE_FULL') return new HttpError(507, STORAGE_FULL)
  if (isBusy(error)) return new HttpError(503, DATABASE_BUSY, {}, { 'retry-after': RETRY_BUSY_SECONDS })
  // Every way SQLite says it cannot write the file: read-only (a read-only open, file or mount), I/O errors, no permission.
  if (/^SQLITE_(READONLY|IOERR|CANTOPEN|PERM)/.test(sqlite))
    return new HttpError(503, DATABASE_READ_ONLY, {}, { 'retry-after': RETRY_READ_ONLY_SECONDS })
  for (
    let e = error, depth = 0;
    e && typeof e === 'object' && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const errno = String((e as { code?: unknown }).code ?? '')
    if (FULL_ERRNO.has(errno)) return new HttpError(507, STORAGE_FULL)
    if (UNWRITABLE_ERRNO.has(errno)) return new HttpError(507, STORAGE_UNWRITABLE)
  }
  return null
}

/**
 * The answer for a fault of the server's disk or database (507 storage full or unwritable, 503 + Retry-After for a
 * busy or read-only database), logged for the operator with its cause; null for anything else.
 */
export function faultAnswer(error: unknown): HttpError | null {
  if (error instanceof HttpError) return null
  const fault = classifyFault(error)
  if (fault) log.warn('fault', { status: fault.status, answer: fault.message, error: String(error) })
  return fault
}

/** The body of an HttpError's answer. */
const httpErrorBody = (error: HttpError) => ({ error: error.message, ...error.extra })

/** An HttpError as a whole answer, for the routes Bun answers ahead of the app (src/http/fast-route.ts). */
export const httpErrorResponse = (error: HttpError) => jsonResponse(httpErrorBody(error), error.status, error.headers)

/** The whole body of every 500: no message, stack or path reaches the client. */
export const INTERNAL_ERROR = { error: 'Internal server error' } as const

/** Logs an unexpected failure for the operator (the client only ever sees INTERNAL_ERROR). */
export function logUnhandled(error: unknown) {
  log.error('unhandled error', { error: String((error as Error)?.stack ?? error) })
}

function internalError(set: { status?: number | string }, error: unknown) {
  logUnhandled(error)
  set.status = 500
  return { ...INTERNAL_ERROR }
}

function answerWith(set: { status?: number | string; headers: Record<string, unknown> }, error: HttpError) {
  set.status = error.status
  Object.assign(set.headers, error.headers)
  return httpErrorBody(error)
}

/**
 * The body each failed request was answered with: Elysia does not hand it to onAfterResponse hooks, and the request
 * log needs its size.
 */
export const errorAnswers = new WeakMap<Request, object>()

/** Maps every failure (ours, the framework's, unexpected ones) onto `{ error }` with the contract's status. */
export const errorModel = new Elysia({ name: 'error-model' })
  .error({ HttpError })
  // Every answer of the app, success or error: set first, so handlers and the error branch below all keep it.
  .onRequest(({ set }) => {
    Object.assign(set.headers, NOSNIFF)
  })
  .onError({ as: 'global' }, ({ code, error, set, request }) => {
    set.headers['content-type'] = JSON_TYPE
    const body = ((): { error: string } => {
      switch (code) {
        case 'HttpError':
          return answerWith(set, error)
        case 'VALIDATION':
          // An answer that does not match its own response schema is our bug, not the client's: a 500 that names nothing.
          if ((error as { type?: unknown }).type === 'response') return internalError(set, error)
          set.status = 400
          return { error: validationMessage(error as unknown as ValidationLike) }
        case 'PARSE': {
          // Elysia wraps whatever a parse hook throws (our 400s and 413s) in a ParseError: keep their status and message.
          const cause = (error as { cause?: unknown }).cause
          if (cause instanceof HttpError) {
            set.status = cause.status
            return httpErrorBody(cause)
          }
          set.status = 400
          return { error: 'Malformed request body' }
        }
        case 'NOT_FOUND':
          set.status = 404
          return { error: NOT_FOUND }
        case 'INVALID_COOKIE_SIGNATURE':
        case 'INVALID_FILE_TYPE':
          set.status = 400
          return { error: 'Invalid request' }
        default: {
          const status = (error as { status?: unknown }).status
          if (typeof status === 'number' && status >= 400 && status < 500) {
            set.status = status
            return { error: status === 413 ? 'Request body too large' : 'Invalid request' }
          }
          const fault = faultAnswer(error)
          return fault ? answerWith(set, fault) : internalError(set, error)
        }
      }
    })()
    errorAnswers.set(request, body)
    return body
  })
