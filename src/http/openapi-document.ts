import { API_PREFIX } from './rate-limit'

/**
 * The published OpenAPI document: what the plugin generates from the routes' schemas, finished in one pass here so no
 * route has to repeat it (`@redocly/cli lint`, recommended rules, finds nothing in the result; see redocly.yaml):
 * - `servers` (PUBLIC_URL) and `info.license`;
 * - `security: []` on every operation that needs no credentials;
 * - every schema with a TypeBox `$id` (Image, Album, EmbedProfile, Account, Error) becomes a component, referenced;
 * - the custom `error` option of TypeBox schemas (our validation messages) is left out: it is no JSON Schema keyword;
 * - every integer (and whole-number id) typed `integer`, not the framework's `string | integer` (`numberOf`);
 * - a description for every response, and the responses every operation can give: 429 with `Retry-After` and
 *   `RateLimit-*` under the global per-IP limiter (all of /api), 413 where a body is taken (every body is bounded:
 *   body-limit.ts and the upload limits), 500 everywhere; under /api, 503 with `Retry-After` (a fault of the database,
 *   the storage or the media workers can meet any operation: src/http/errors.ts) and 507 on every operation that
 *   writes (a method other than GET/HEAD: the disk or the database is full);
 * - the form of every id (and username) in a path;
 * - an example for each request body, path parameter and success answer, built from its schema (the linter checks
 *   each against its schema).
 */

type Json = Record<string, unknown>
type Response = { description?: string; headers?: Json; content?: Record<string, { schema?: Json; example?: unknown }> }
type Operation = {
  security?: unknown[]
  parameters?: { in: string; name: string; schema?: Json; example?: unknown }[]
  requestBody?: { content?: Record<string, { schema?: Json; example?: unknown }> }
  responses?: Record<string, Response>
}
export type OpenApiDocument = {
  info: Json
  servers?: { url: string; description?: string }[]
  paths: Record<string, Record<string, Operation>>
  components?: Json & { schemas?: Record<string, Json> }
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'])

/** What each status means across the API; an operation's own description, where it has one, is kept. */
export const STATUS_DESCRIPTIONS: Record<string, string> = {
  200: 'Success',
  201: 'Created',
  204: 'Done; no body',
  400: 'Invalid request: a parameter or the body is missing, malformed or out of range (the message says which)',
  401: 'Missing or invalid credentials',
  403: 'Not allowed for these credentials (banned account, unverified email, not the owner or not an admin)',
  404: 'Not found, or not visible to the caller',
  409: 'Conflicts with the current state',
  410: 'Gone: expired or finished',
  412: 'Precondition failed: an unsupported protocol version',
  413: 'Request body or file too large, or the storage quota is used up',
  415: 'Unsupported content type',
  423: 'Locked: another request is writing the same resource',
  429: 'Too many requests: wait `Retry-After` seconds',
  500: 'Internal server error: logged for the operator; the body names nothing',
  501: 'Not implemented for this resource',
  503: 'Unavailable for a moment: retry after `Retry-After` seconds',
  507: 'The server has no room to store it',
}
/** The plugin's placeholders (its status line, or the schema's own "Error"), and the tus routes' "Error N". */
const GENERIC_DESCRIPTION = /^(Error|(Response for status|Error) \d+)$/

const header = (description: string, schema: Json = { type: 'integer', minimum: 0 }) => ({ description, schema })
/** The headers of a rate-limited answer (src/http/rate-limit.ts `rateLimitHeaders`, src/http/errors.ts). */
const RATE_LIMIT_HEADERS = {
  'Retry-After': header('Seconds to wait before the next request'),
  'RateLimit-Limit': header('Requests allowed in the window'),
  'RateLimit-Remaining': header('Requests left in the window'),
  'RateLimit-Reset': header('Seconds until the window ends'),
}

/**
 * A path parameter taken as a plain string (a malformed one answers 404 like an unknown one), with its real form: the
 * features' id patterns, handed in by src/app.ts (http/ knows no feature).
 */
export interface PathId {
  path: RegExp
  name: string
  schema: Json
}

const isObject = (value: unknown): value is Json => !!value && typeof value === 'object' && !Array.isArray(value)

/**
 * A copy of a value of the document with the `error` option dropped (its string or function; a property named
 * `error` is an object and stays) and every `$id` schema lifted into `schemas`, leaving a reference in its place.
 */
function finishSchemas(value: unknown, schemas: Record<string, Json>): unknown {
  if (Array.isArray(value)) return value.map((item) => finishSchemas(item, schemas))
  if (!isObject(value)) return value
  const number = numberOf(value)
  if (number) return finishSchemas(number, schemas)
  const copy: Json = {}
  for (const [key, item] of Object.entries(value)) {
    if (key === 'error' && !isObject(item)) continue
    if (key === '$id') continue
    copy[key] = key === 'example' || key === 'examples' ? item : finishSchemas(item, schemas)
  }
  if (typeof value.$id !== 'string') return copy
  schemas[value.$id] ??= copy
  return { $ref: `#/components/schemas/${value.$id}` }
}

/**
 * The framework writes `t.Integer` and `t.Numeric` as `anyOf: [string (format integer or numeric), integer or
 * number]`, so it can read them from a query string or a form; in the document that made every count, size and id
 * `string | number` for generated clients. Such a schema is published as its number alone (`integer` when whole), its
 * bounds and description kept, as is a query's whole number read as text (`QueryInt`); a union that really takes text
 * (an expiry: seconds or a duration) is left as it is.
 */
function numberOf(schema: Json): Json | null {
  // A query's whole number, read as text by its pattern (src/http/schemas.ts `QueryInt`).
  if (schema.type === 'string' && schema.format === 'integer') {
    const { format: _, pattern: __, ...number } = schema
    return { ...number, type: 'integer' }
  }
  const options = schema.anyOf
  if (!Array.isArray(options) || options.length !== 2) return null
  const text = options.find((o: Json) => o.type === 'string' && (o.format === 'integer' || o.format === 'numeric'))
  const number = options.find((o: Json) => o.type === 'integer' || o.type === 'number')
  if (!text || !number) return null
  const { anyOf: _, ...outer } = schema
  const merged: Json = { ...outer, ...number }
  if (text.format === 'integer' || merged.multipleOf === 1) {
    merged.type = 'integer'
    delete merged.multipleOf
  }
  return merged
}

const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1)

/** Plain strings that read better by the name of their field (used where the schema allows them). */
const NAMED_STRINGS: Record<string, string> = {
  username: 'ada',
  email: 'ada@example.com',
  password: 'correct horse battery staple',
  filename: 'holiday.png',
  mime: 'image/png',
  name: 'My laptop',
  title: 'Holiday 2026',
  description: 'Photos of the trip',
  reason: 'Spam',
}

/** A value that fits `schema`: its own example or default where it has one, else the simplest that passes. */
export function exampleOf(schema: Json | undefined, schemas: Record<string, Json>, depth = 0, field = ''): unknown {
  if (!schema || depth > 12) return undefined
  if (typeof schema.$ref === 'string') return exampleOf(schemas[refName(schema.$ref)], schemas, depth + 1, field)
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if ('example' in schema) return schema.example
  if ('const' in schema) return schema.const
  if ('default' in schema) return schema.default
  if (Array.isArray(schema.enum)) return schema.enum[0]
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key]
    if (Array.isArray(options)) {
      // A nullable field shows its value (the framework's integers are plain numbers by now: numberOf).
      const option = (options as Json[]).find((o) => o.type !== 'null') ?? options[0]
      return exampleOf(option as Json, schemas, depth + 1, field)
    }
  }
  if (Array.isArray(schema.allOf)) {
    return Object.assign({}, ...(schema.allOf as Json[]).map((s) => exampleOf(s, schemas, depth + 1)))
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Json>
      return Object.fromEntries(
        Object.entries(properties).map(([name, s]) => [name, exampleOf(s, schemas, depth + 1, name)] as const),
      )
    }
    case 'array':
      return [exampleOf(schema.items as Json, schemas, depth + 1)]
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1
    case 'boolean':
      return true
    case 'null':
      return null
    case 'string':
      return stringExample(schema, field)
    default:
      return undefined
  }
}

function stringExample(schema: Json, field: string): string {
  const named = NAMED_STRINGS[field]
  if (named && !schema.format && fits(schema, named)) return named
  switch (schema.format) {
    case 'date-time':
      return '2026-01-02T03:04:05.000Z'
    case 'uri':
      return 'https://img.example.com/Ab3dE5gH.png'
    case 'email':
      return 'ada@example.com'
    case 'binary':
      return '(image bytes)'
  }
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 1
  return 'example'.padEnd(minLength, 'x')
}

/** Whether a string meets a schema's pattern and length bounds. */
function fits(schema: Json, value: string): boolean {
  if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern).test(value)) return false
  if (typeof schema.minLength === 'number' && value.length < schema.minLength) return false
  return typeof schema.maxLength !== 'number' || value.length <= schema.maxLength
}

/** An error answer's schema on this operation: its own (the Chevereto door has its own shape), else the Error one. */
function errorContent(op: Operation) {
  const own = Object.entries(op.responses ?? {}).find(([code, r]) => /^4\d\d$/.test(code) && r.content)?.[1].content
  return own ?? { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } }
}

function addResponse(op: Operation, code: number, extra: Partial<Response> = {}) {
  op.responses ??= {}
  const responses = op.responses
  const existing = responses[code]
  if (existing) {
    if (extra.headers) existing.headers = { ...extra.headers, ...existing.headers }
    return
  }
  responses[code] = { description: STATUS_DESCRIPTIONS[code], content: errorContent(op), ...extra }
}

function finishOperation(path: string, method: string, op: Operation, schemas: Record<string, Json>, ids: PathId[]) {
  // An operation with no requirement is public: said explicitly, not left to a document-wide default.
  if (!op.security || op.security.length === 0) op.security = []

  for (const parameter of op.parameters ?? []) {
    if (parameter.in !== 'path') continue
    const id = ids.find((p) => p.name === parameter.name && p.path.test(path))
    if (id && !parameter.schema?.pattern) parameter.schema = id.schema
    parameter.example ??= exampleOf(parameter.schema, schemas)
  }
  for (const media of Object.values(op.requestBody?.content ?? {})) media.example ??= exampleOf(media.schema, schemas)

  if (path.startsWith(API_PREFIX)) {
    addResponse(op, 429, { headers: RATE_LIMIT_HEADERS })
    addResponse(op, 503, { headers: { 'Retry-After': RATE_LIMIT_HEADERS['Retry-After'] } })
    if (method !== 'get' && method !== 'head') addResponse(op, 507)
  }
  if (op.requestBody) addResponse(op, 413)
  addResponse(op, 500)

  for (const [code, response] of Object.entries(op.responses ?? {})) {
    if (!response.description || GENERIC_DESCRIPTION.test(response.description)) {
      const own = Object.values(response.content ?? {})[0]?.schema?.description
      response.description = typeof own === 'string' && /^2/.test(code) ? own : (STATUS_DESCRIPTIONS[code] ?? 'Answer')
    }
    if (!/^2/.test(code)) continue
    for (const media of Object.values(response.content ?? {})) {
      media.example ??= exampleOf(media.schema, schemas)
    }
  }
}

/** The document as published, from the plugin's (left untouched: it holds the routes' live schemas). */
export function publishDocument(generated: OpenApiDocument, publicUrl: string, ids: PathId[]): OpenApiDocument {
  const schemas: Record<string, Json> = {}
  const doc = finishSchemas(generated, schemas) as OpenApiDocument
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, ...schemas } }
  doc.servers = [{ url: publicUrl, description: 'This server (PUBLIC_URL)' }]
  doc.info.license = { name: 'MIT', identifier: 'MIT' }
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item))
      if (METHODS.has(method)) finishOperation(path, method, op, schemas, ids)
  }
  return doc
}
