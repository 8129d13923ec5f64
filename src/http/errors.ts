import { Elysia, t } from 'elysia'
import {
  Conflict,
  DatabaseBusy,
  DatabaseReadOnly,
  DatabaseUnavailable,
  DomainError,
  Forbidden,
  Gone,
  Invalid,
  Locked,
  NOT_FOUND,
  NotFound,
  OffsetConflict,
  PoolBusy,
  QuotaExceeded,
  RateLimited,
  StorageFull,
  StorageUnavailable,
  StorageUnwritable,
  TooLarge,
  Unauthorized,
  Unprocessable,
} from '../errors'
import { faultOf } from '../faults'
import { log } from '../log'
import { noRoutes } from './methods'
import { rateLimitHeaders } from './rate-limit'

/**
 * An answer with its status: what every domain error becomes (the table below), and what the HTTP layer and
 * controllers throw for protocol refusals no service makes (415, 412, 501, a body past its bound).
 */
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

export const ErrorBody = t.Object(
  { error: t.String({ examples: ['Not found'] }) },
  { $id: 'Error', description: 'Error', additionalProperties: true },
)

/** Error responses for route schemas, so /swagger lists them next to the success shape. */
export function errors(...statuses: number[]) {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBody])) as Record<number, typeof ErrorBody>
}

/** A JSON schema as an OpenAPI `content`, for routes that describe their answers in `detail.responses`. */
export const jsonContent = (schema: unknown) => ({ 'application/json': { schema: JSON.parse(JSON.stringify(schema)) } })

/**
 * The same error answers as `errors()`, written for `detail.responses`: for routes whose success has no body (a 204),
 * which `response` schemas cannot describe.
 */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [String(s), { description: `Error ${s}`, content: jsonContent(ErrorBody) }]))

type SchemaLike = {
  type?: string
  format?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  minItems?: number
  maxItems?: number
  pattern?: string
  const?: unknown
  anyOf?: SchemaLike[]
}
type ValueErrorLike = { path?: string; message?: string; value?: unknown; schema?: SchemaLike }
type ValidationLike = { type?: string; all?: ValueErrorLike[]; customError?: unknown }

/** A length rule in words: `3-32 characters`, `at least 8 characters`, `at most 100 characters`. */
function lengthRule(min: number | undefined, max: number | undefined) {
  const chars = (n: number) => `${n} character${n === 1 ? '' : 's'}`
  if (min !== undefined && max !== undefined) return `${min}-${chars(max)}`
  return min !== undefined ? `at least ${chars(min)}` : `at most ${chars(max!)}`
}

/** A count rule in words: `1-100 items`, `at least 1 item`, `at most 100 items`. */
function countRule(min: number | undefined, max: number | undefined) {
  const items = (n: number) => `${n} item${n === 1 ? '' : 's'}`
  if (min !== undefined && max !== undefined) return `${min}-${items(max)}`
  return min !== undefined ? `at least ${items(min)}` : `at most ${items(max!)}`
}

/** A number's bounds in words, or nothing when it has none. */
function boundsRule(schema: SchemaLike) {
  const { minimum: min, maximum: max } = schema
  if (min !== undefined && max !== undefined) return ` from ${min} to ${max}`
  if (min !== undefined) return ` of at least ${min}`
  return max !== undefined ? ` of at most ${max}` : ''
}

const FORMATS: Record<string, string> = { email: 'an email address', uri: 'a URL', 'date-time': 'an ISO 8601 date' }

/** What a value of this schema must be, in words: `a whole number of at least 1`, `one of "public", "private"`. */
function expected(schema: SchemaLike): string {
  const options = schema.anyOf ?? []
  // A union of constants (an enum), or a number that may come as text (a query's t.Numeric, t.Integer).
  if (options.length > 0 && options.every((o) => o.const !== undefined))
    return `one of ${options.map((o) => JSON.stringify(o.const)).join(', ')}`
  const numeric = options.find((o) => o.type === 'integer' || o.type === 'number')
  const kind = numeric ?? schema
  if (kind.type === 'integer') return `a whole number${boundsRule({ ...schema, ...kind })}`
  if (kind.type === 'number') return `a number${boundsRule({ ...schema, ...kind })}`
  if (options.length > 0) return `one of: ${options.map(expected).join('; ')}`
  if (schema.type === 'string' && schema.format && FORMATS[schema.format]) return FORMATS[schema.format]
  if (schema.type === 'string') return 'a string'
  if (schema.type === 'boolean') return 'true or false'
  if (schema.type === 'array') return 'a list'
  if (schema.type === 'object') return 'an object'
  if (schema.type === 'null') return 'null'
  return 'valid'
}

/**
 * A failed check of a request schema in words a user understands (`password is required`, `name must be 1-100
 * characters`), whatever route it comes from; the schema library's own text is for developers.
 */
function validationMessage(error: ValidationLike): string {
  // A schema's own `error` text (e.g. `t.Union([...], { error: 'color must be #rrggbb' })`) is clearer than the generic one.
  if (typeof error.customError === 'string' && error.customError) return error.customError
  const first = error.all?.[0]
  if (!first) return 'Invalid request'
  const field = first.path?.replace(/^\//, '').replace(/\//g, '.') ?? ''
  const schema = first.schema ?? {}
  // No field: the whole body, or a lone value the framework checks on its own (a numeric path parameter).
  if (!field) {
    if (error.type !== 'body') return `Invalid value: it must be ${expected(schema)}`
    return first.value === undefined || schema.type === 'object'
      ? 'A JSON object body is required'
      : `The body must be ${expected(schema)}`
  }
  if (first.value === undefined) return `${field} is required`
  const { value } = first
  if (schema.type === 'string' && typeof value === 'string') {
    const { minLength: min, maxLength: max } = schema
    if ((min !== undefined && value.length < min) || (max !== undefined && value.length > max))
      return min === 1 && max === undefined ? `${field} must not be empty` : `${field} must be ${lengthRule(min, max)}`
    if (schema.format && FORMATS[schema.format]) return `${field} must be ${FORMATS[schema.format]}`
    if (schema.pattern) return `${field} is not in the expected form`
  }
  if (schema.type === 'array' && Array.isArray(value)) {
    const { minItems: min, maxItems: max } = schema
    if ((min !== undefined && value.length < min) || (max !== undefined && value.length > max))
      return `${field} must have ${countRule(min, max)}`
  }
  return `${field} must be ${expected(schema)}`
}

const JSON_TYPE = 'application/json; charset=utf-8'
/** On every answer: a browser never reads a JSON body (an error echoing user text included) as HTML or script. */
export const NOSNIFF = { 'x-content-type-options': 'nosniff' } as const

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
/** A full media queue or an unreachable object store: worth a retry after a few seconds. */
const RETRY_SHORTLY_SECONDS = '5'

type Kind<E extends DomainError> = abstract new (...args: never[]) => E
type Row<E extends DomainError> = [kind: Kind<E>, status: number, headers?: (error: E) => Record<string, string>]
const row = <E extends DomainError>(...r: Row<E>) => r as unknown as Row<DomainError>

/** Every domain error's status and headers: the one table (a subclass before its parent). */
const ANSWERS: Row<DomainError>[] = [
  row(Invalid, 400),
  row(Unauthorized, 401),
  row(Forbidden, 403),
  row(NotFound, 404),
  row(OffsetConflict, 409, (e) => ({ 'Upload-Offset': String(e.offset) })),
  row(Conflict, 409),
  row(Gone, 410),
  row(TooLarge, 413),
  row(QuotaExceeded, 413),
  row(Unprocessable, 422),
  row(Locked, 423),
  row(RateLimited, 429, (e) => ({
    'Retry-After': String(Math.max(1, e.facts.resetSeconds)),
    ...rateLimitHeaders(e.facts),
  })),
  row(PoolBusy, 503, () => ({ 'retry-after': RETRY_SHORTLY_SECONDS })),
  row(StorageUnavailable, 503, () => ({ 'retry-after': RETRY_SHORTLY_SECONDS })),
  row(DatabaseBusy, 503, () => ({ 'retry-after': RETRY_BUSY_SECONDS })),
  row(DatabaseReadOnly, 503, () => ({ 'retry-after': RETRY_READ_ONLY_SECONDS })),
  row(DatabaseUnavailable, 503, () => ({ 'retry-after': RETRY_BUSY_SECONDS })),
  row(StorageFull, 507),
  row(StorageUnwritable, 507),
]

/** A domain error as its answer; null for a kind the table does not know (answered as an internal error). */
export function httpErrorOf(error: DomainError): HttpError | null {
  const found = ANSWERS.find(([kind]) => error instanceof kind)
  if (!found) return null
  const [, status, headers] = found
  return new HttpError(status, error.message, error.extra, headers?.(error) ?? {})
}

/**
 * The answer for a fault of the server's disk or database (507 storage full or unwritable, 503 + Retry-After for a
 * busy or read-only database), logged for the operator with its cause; null for anything else.
 */
export function faultAnswer(error: unknown): HttpError | null {
  if (error instanceof HttpError || error instanceof DomainError) return null
  const fault = faultOf(error)
  const answer = fault && httpErrorOf(fault)
  if (answer) log.warn('fault', { status: answer.status, answer: answer.message, error: String(error) })
  return answer
}

/** The answer of our own refusals: an HttpError as it is, a domain error by the table; null otherwise. */
function ownAnswer(error: unknown): HttpError | null {
  if (error instanceof HttpError) return error
  return error instanceof DomainError ? httpErrorOf(error) : null
}

/** The answer of every failure the error model knows (our refusals, the faults); null for an unexpected one. */
export const knownAnswer = (error: unknown) => ownAnswer(error) ?? faultAnswer(error)

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

/** Maps every failure (ours, the framework's, unexpected ones) onto `{ error }` with the contract's status. */
export const errorModel = new Elysia({ name: 'error-model' })
  .error({ HttpError, DomainError })
  // The methods of each known path (src/http/methods.ts), set by createApp once every route is in: a known path asked
  // with another method is a 405 that names the right ones, not a 404.
  .state('allowedMethods', noRoutes)
  // Every answer of the app, success or error: set first, so handlers and the error branch below all keep it.
  .onRequest(({ set }) => {
    Object.assign(set.headers, NOSNIFF)
  })
  .onError({ as: 'global' }, ({ code, error, set, request, store }) => {
    set.headers['content-type'] = JSON_TYPE
    const body = ((): { error: string } => {
      switch (code) {
        case 'HttpError':
          return answerWith(set, error)
        case 'DomainError': {
          const answer = httpErrorOf(error)
          return answer ? answerWith(set, answer) : internalError(set, error)
        }
        case 'VALIDATION':
          // An answer that does not match its own response schema is our bug, not the client's: a 500 that names nothing.
          if ((error as { type?: unknown }).type === 'response') return internalError(set, error)
          set.status = 400
          return { error: validationMessage(error as unknown as ValidationLike) }
        case 'PARSE': {
          // Elysia wraps whatever a parse hook throws (our 400s and 413s) in a ParseError: keep their status and message.
          const cause = ownAnswer((error as { cause?: unknown }).cause)
          if (cause) {
            set.status = cause.status
            return httpErrorBody(cause)
          }
          set.status = 400
          return { error: 'Malformed request body' }
        }
        case 'NOT_FOUND': {
          const allowed = store.allowedMethods(new URL(request.url).pathname)
          if (allowed.length > 0) {
            set.status = 405
            set.headers.allow = allowed.join(', ')
            return { error: `Method ${request.method} not allowed here: use ${allowed.join(', ')}` }
          }
          set.status = 404
          return { error: NOT_FOUND }
        }
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
    return body
  })
