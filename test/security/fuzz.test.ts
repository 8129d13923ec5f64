import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { makeImage } from '../fixtures'
import { makeAdmin, type TestServer, userWithKey } from '../helpers'
import { type DataSnapshot, dataSnapshot, ownEverything, type Resources, resourceFor, startServer } from './support'

// Property-based abuse of every operation of /swagger/json (so a new endpoint is covered the day it is documented):
// missing, garbage, oversized and wrong-typed bodies, query parameters, path parameters and headers. Every request
// here is one that must not succeed, so each must answer 4xx (never 5xx) with a JSON `{ error: string }`, and leave
// every row of every table, and every stored file, exactly as it was.

const RUNS = 25
/** How often each kind of case got each status: shows the runs exercise validation, not just the auth guard. */
const statuses: Record<string, number> = {}
let t: TestServer
let doc: OpenApi
let owner: Awaited<ReturnType<typeof userWithKey>>
let admin: Awaited<ReturnType<typeof userWithKey>>
let own: Resources
let png: Uint8Array

type Schema = Record<string, any>
type Operation = {
  security?: Record<string, string[]>[]
  parameters?: { in: string; name: string; required?: boolean; schema?: Schema }[]
  requestBody?: { content?: Record<string, { schema?: Schema }> }
  responses?: Record<string, unknown>
}
type OpenApi = { paths: Record<string, Record<string, Operation>> }

beforeAll(async () => {
  // The global limiter would answer 429 long before the runs end: raise it for this file.
  t = await startServer({ GLOBAL_RATE_LIMIT: '10000000' })
  owner = await userWithKey(t)
  admin = await userWithKey(t)
  await makeAdmin(t, admin.user.id)
  own = await ownEverything(t, owner, 'fuzz')
  png = await makeImage('png', 16, 16, 42)
  doc = (await t.json('/swagger/json')).body
}, 30_000)
afterAll(() => t.stop())

// ---------------------------------------------------------------------------------------------------------------
// A small, deliberately lenient JSON Schema check: a value it calls invalid is invalid for the server too (it may
// call valid some values the server refuses, which are then simply not used as "invalid" inputs).

function validates(schema: Schema | undefined, value: unknown): boolean {
  if (!schema || typeof schema !== 'object') return true
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((s: Schema) => validates(s, value))) return false
  if (Array.isArray(schema.oneOf) && !schema.oneOf.some((s: Schema) => validates(s, value))) return false
  if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) return false
  if (Array.isArray(schema.enum) && !schema.enum.some((e: unknown) => JSON.stringify(e) === JSON.stringify(value)))
    return false
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) return false
    if (typeof schema.maximum === 'number' && value > schema.maximum) return false
  }
  if (schema.type === undefined) return true
  const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type]
  return types.some((type) => {
    switch (type) {
      case 'null':
        return value === null
      case 'boolean':
        return typeof value === 'boolean'
      case 'integer':
        return Number.isInteger(value)
      case 'number':
        return typeof value === 'number'
      case 'string': {
        if (typeof value !== 'string') return false
        if (typeof schema.minLength === 'number' && value.length < schema.minLength) return false
        if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) return false
        if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern).test(value)) return false
        return true
      }
      case 'array':
        return (
          Array.isArray(value) &&
          !(typeof schema.minItems === 'number' && value.length < schema.minItems) &&
          !(typeof schema.maxItems === 'number' && value.length > schema.maxItems) &&
          value.every((item) => validates(schema.items, item))
        )
      case 'object': {
        if (!value || typeof value !== 'object' || Array.isArray(value)) return false
        const record = value as Record<string, unknown>
        if ((schema.required ?? []).some((key: string) => record[key] === undefined)) return false
        return Object.entries(schema.properties ?? {}).every(
          ([key, s]) => record[key] === undefined || validates(s as Schema, record[key]),
        )
      }
      default:
        return true
    }
  })
}

// ---------------------------------------------------------------------------------------------------------------
// Generators.

const printable = (max: number) =>
  fc.array(fc.integer({ min: 0x21, max: 0x7e }), { maxLength: max }).map((codes) => String.fromCharCode(...codes))
const nasty = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  '%00',
  '../../etc/passwd',
  '..\\..\\windows',
  '%2e%2e%2f',
  "' OR '1'='1",
  '"; DROP TABLE users; --',
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the Log4Shell probe, sent as it is
  '${jndi:ldap://x}',
  '{{7*7}}',
  '\u202e',
  '\ud83d\ude00',
  'null',
  'undefined',
  'NaN',
  '-0',
  '1e309',
  '0x1f',
  '__proto__',
  'constructor',
)
const anyText = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  nasty,
  fc.string({ minLength: 2000, maxLength: 5000 }),
)

/** Values of every JSON type, including the awkward ones, and long ones. */
const anyJson = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308, '', 'x', [], {}, [null], {
      a: { b: {} },
    }),
  },
  { weight: 2, arbitrary: anyText },
)

/** A value the schema refuses, or null when none was found (a schema that takes anything). */
function wrongValue(schema: Schema) {
  return anyJson.filter((v) => !validates(schema, v))
}

/** Path parameter values that cannot name anything: never an id, a username or a number, never a dot segment. */
const garbageParam = fc
  .oneof(
    anyText,
    fc.constantFrom(
      '..%2f..%2fimghost.sqlite',
      '%252e%252e',
      '\\..\\',
      'a/b',
      'abc\u0000def',
      'x'.repeat(300),
      '😀😀😀😀😀😀😀😀',
    ),
  )
  .filter((s) => s.length > 0 && !/^[A-Za-z0-9_-]*$/.test(s) && !Number.isFinite(Number(s)) && !/^\.{1,2}$/.test(s))

const HEADER_POOL = [
  'x-forwarded-for',
  'x-real-ip',
  'x-album-password',
  'x-delete-token',
  'range',
  'if-none-match',
  'accept',
  'accept-encoding',
  'origin',
  'referer',
  'cookie',
  'x-http-method-override',
  'tus-resumable',
  'upload-offset',
  'upload-metadata',
  'x-requested-with',
]
const extraHeaders = fc.dictionary(fc.constantFrom(...HEADER_POOL), printable(120), { maxKeys: 4 })

function b64url(value: string) {
  return Buffer.from(value).toString('base64url')
}
/** Credentials that are wrong in every way a client could get them wrong. */
const garbageCredentials = fc.oneof(
  fc.constant<Record<string, string>>({}),
  fc.record({ authorization: printable(200) }),
  fc.record({ authorization: printable(200).map((s) => `Bearer ${s}`) }),
  fc.record({ 'x-api-key': printable(200) }),
  fc.record({ 'x-api-key': fc.stringMatching(/^ihk_[A-Za-z0-9]{40}$/) }),
  fc.constant({}).map(() => ({
    authorization: `Bearer ${b64url('{"alg":"none","typ":"JWT"}')}.${b64url(`{"sub":"${admin.user.id}"}`)}.`,
  })),
  fc.constant({}).map(() => ({ authorization: `Bearer ${owner.apiKey}`, 'x-api-key': owner.token })),
  fc.record({ authorization: printable(100).map((s) => `Basic ${s}`), 'x-api-key': printable(50) }),
)

interface Case {
  kind: string
  pathValues: string[]
  query: Record<string, string>
  headers: Record<string, string>
  body?: {
    type?: string
    text?: string
    bytes?: Uint8Array
    form?: { fields: [string, string][]; files: Uint8Array[] }
  }
}

/** An invalid JSON body for `schema`: the wrong shape, a refused value, a missing field, bad syntax, too big or too deep. */
function invalidJsonBody(schema: Schema | undefined): fc.Arbitrary<NonNullable<Case['body']>> {
  const json = (v: unknown) => ({ type: 'application/json', text: JSON.stringify(v) })
  const options: fc.Arbitrary<NonNullable<Case['body']>>[] = [
    fc
      .string({ maxLength: 80 })
      // An empty body is no body (a POST whose fields are all optional, such as an invite's, takes the defaults).
      .filter((s) => {
        if (s === '') return false
        try {
          JSON.parse(s)
          return false
        } catch {
          return true
        }
      })
      .map((text) => ({ type: 'application/json', text })),
    fc
      .constantFrom('{"a":', '{"a":1,}', "{'a':1}", '[1,2', '{"a":1}{"b":2}', '\ufeff{"a":1}x')
      .map((text) => ({ type: 'application/json', text })),
    fc
      .tuple(
        fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'image/png'),
        fc.jsonValue(),
      )
      .map(([type, v]) => ({ type, text: JSON.stringify(v) })),
    fc.constantFrom(1, 2).map(() => json({ pad: 'x'.repeat(1024 * 1024 + 10) })),
  ]
  // Nested deep inside a field the schema describes (or any field): validating that must not overflow the stack.
  const deepKeys = Object.keys(schema?.properties ?? {})
  options.push(
    fc
      .tuple(fc.constantFrom(...deepKeys, 'a'), fc.integer({ min: 40, max: 20_000 }), fc.constantFrom('[]', '{}'))
      .map(([key, n, pair]) => ({
        type: 'application/json',
        text: `{${JSON.stringify(key)}:${pair === '[]' ? '['.repeat(n) + ']'.repeat(n) : `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`}}`,
      })),
  )
  if (schema?.type === 'object') {
    options.push(
      fc
        .oneof(fc.array(fc.jsonValue({ maxDepth: 2 })), anyText, fc.integer(), fc.boolean(), fc.constant(null))
        .map(json),
    )
    const properties = Object.entries<Schema>(schema.properties ?? {})
    const randomObject = fc.dictionary(
      fc.constantFrom(...properties.map(([k]) => k), '__proto__', 'constructor', 'id', 'userId', 'role'),
      anyJson,
      { maxKeys: 5 },
    )
    for (const [key, propSchema] of properties) {
      options.push(fc.tuple(randomObject, wrongValue(propSchema)).map(([rest, bad]) => json({ ...rest, [key]: bad })))
    }
    for (const key of schema.required ?? []) {
      options.push(
        randomObject.map((rest) => {
          const copy = { ...rest }
          delete copy[key]
          return json(copy)
        }),
      )
    }
  }
  return fc.oneof(...options).filter((body) => {
    // Keep only bodies that really are invalid for the schema (a random object may happen to be valid).
    if (body.type !== 'application/json' || !schema) return true
    try {
      return !validates(schema, JSON.parse(body.text!))
    } catch {
      return true
    }
  })
}

/** An invalid multipart upload: no file, files that are not images, a bad visibility, or not multipart at all. */
function invalidUpload(): fc.Arbitrary<NonNullable<Case['body']>> {
  const fields = fc.array(
    fc.tuple(
      fc.constantFrom('visibility', 'private', 'nsfw', 'album', 'folder', 'expires', 'x'),
      fc.string({ maxLength: 40 }),
    ),
    { maxLength: 4 },
  )
  return fc.oneof(
    fields.map((f) => ({ form: { fields: f, files: [] } })),
    fc
      .tuple(fields, fc.array(fc.uint8Array({ minLength: 1, maxLength: 3000 }), { minLength: 1, maxLength: 3 }))
      .map(([f, files]) => ({ form: { fields: f, files } })),
    fc
      .tuple(fields, fc.integer({ min: 30, max: 200 }))
      .map(([f, cut]) => ({ form: { fields: f, files: [png.slice(0, png.length - cut)] } })),
    fc
      .string({ minLength: 1, maxLength: 20 })
      .filter((v) => v !== 'public' && v !== 'private')
      .map((v) => ({ form: { fields: [['visibility', v]] as [string, string][], files: [png] } })),
    fc.jsonValue().map((v) => ({ type: 'application/json', text: JSON.stringify(v) })),
    fc.string({ maxLength: 500 }).map((text) => ({ type: 'multipart/form-data; boundary=xyz', text })),
    fc.string({ maxLength: 200 }).map((text) => ({ type: 'multipart/form-data', text })),
  )
}

/** An invalid query: a page or limit that is not a positive integer, a refused enum value, too long, or missing. */
function invalidQuery(op: Operation): fc.Arbitrary<Record<string, string>> | null {
  const params = (op.parameters ?? []).filter((p) => p.in === 'query')
  const options: fc.Arbitrary<Record<string, string>>[] = []
  for (const p of params) {
    const s = p.schema ?? {}
    if (p.name === 'page' || p.name === 'limit') {
      options.push(
        fc
          .constantFrom(
            '0',
            '-1',
            '1.5',
            'abc',
            '1e3',
            '0x10',
            'NaN',
            'Infinity',
            '99999999999999999999',
            '+1',
            ' 1',
            '１',
            '1;',
            '[]',
          )
          .map((v) => ({ [p.name]: v })),
      )
    }
    if (Array.isArray(s.enum))
      options.push(
        fc
          .string({ minLength: 1, maxLength: 20 })
          .filter((v) => !s.enum.includes(v))
          .map((v) => ({ [p.name]: v })),
      )
    if (typeof s.maxLength === 'number')
      options.push(fc.string({ minLength: s.maxLength + 1, maxLength: s.maxLength + 50 }).map((v) => ({ [p.name]: v })))
  }
  const required = params.filter((p) => p.required)
  if (required.length) options.push(fc.constant({}))
  if (options.length === 0) return null
  // Other (valid or not) parameters may ride along, but never one the invalid part set.
  const others = fc.dictionary(
    fc.constantFrom(...params.filter((p) => !p.required).map((p) => p.name), 'x', 'callback'),
    fc.string({ maxLength: 30 }),
    { maxKeys: 2 },
  )
  return fc.tuple(fc.oneof(...options), others).map(([bad, rest]) => {
    const merged = { ...rest, ...bad }
    for (const p of required) if (!(p.name in bad) && Object.keys(bad).length === 0) delete merged[p.name]
    return merged
  })
}

/** Random query parameters (the declared ones and others), valid or not. */
function anyQuery(op: Operation) {
  const names = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name)
  return fc.dictionary(
    fc.constantFrom(...names, 'x', '__proto__', 'page[0]'),
    fc.oneof(fc.string({ maxLength: 40 }), nasty),
    { maxKeys: 4 },
  )
}

// ---------------------------------------------------------------------------------------------------------------
// Running one case.

const isSecured = (op: Operation) => (op.security ?? []).some((req) => Object.keys(req).length > 0)
const documentedStatuses = (op: Operation) => new Set(Object.keys(op.responses ?? {}).map(Number))

function credentialsFor(path: string) {
  const who = path.startsWith('/api/admin/') ? admin : owner
  return { authorization: `Bearer ${who.token}`, 'x-api-key': who.apiKey }
}

let lastSnapshot: DataSnapshot | undefined

async function run(method: string, path: string, op: Operation, c: Case) {
  const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
  let target = params.reduce((acc, p, i) => acc.replace(`{${p}}`, encodeURIComponent(c.pathValues[i])), path)
  const query = new URLSearchParams(c.query).toString()
  if (query) target += `?${query}`
  const headers: Record<string, string> = { ...c.headers }
  let body: BodyInit | undefined
  if (c.body?.form) {
    const form = new FormData()
    for (const [k, v] of c.body.form.fields) form.append(k, v)
    for (const [i, bytes] of c.body.form.files.entries()) {
      form.append('file', new Blob([bytes as Uint8Array<ArrayBuffer>]), `f${i}.png`)
    }
    body = form
  } else if (c.body) {
    if (c.body.type) headers['content-type'] = c.body.type
    body = c.body.text ?? (c.body.bytes as Uint8Array<ArrayBuffer> | undefined)
  }
  const upper = method.toUpperCase()
  if (upper === 'GET' || upper === 'HEAD') body = undefined

  // Every case leaves the data as it found it, so the last case's "after" is this one's "before" (half the listings).
  const before = lastSnapshot ?? (await dataSnapshot(t))
  lastSnapshot = undefined
  const res = await t.fetch(target, { method: upper, headers, body })
  statuses[`${c.kind} ${res.status}`] = (statuses[`${c.kind} ${res.status}`] ?? 0) + 1
  const text = await res.text()
  const what = `${upper} ${target.slice(0, 200)} [${c.kind}] → ${res.status} ${text.slice(0, 200)}`
  const documented5xx = res.status >= 500 && documentedStatuses(op).has(res.status)
  if (!documented5xx) {
    expect(res.status, what).toBeGreaterThanOrEqual(400)
    expect(res.status, what).toBeLessThan(500)
  }
  if (upper !== 'HEAD') {
    let parsed: any = null
    try {
      parsed = JSON.parse(text)
    } catch {
      // checked below
    }
    // The Chevereto-compatible door answers in Chevereto's shape: `{ status_code, error: { message, code } }`.
    const message = path.startsWith('/api/1/') ? parsed?.error?.message : parsed?.error
    expect(typeof message, `${what}: not a JSON { error }`).toBe('string')
  }
  const after = await dataSnapshot(t)
  if (after.hash !== before.hash) {
    const changed = Object.keys(after.counts).filter((k) => after.counts[k] !== before.counts[k])
    throw new Error(`${what}: the data changed (${changed.join(', ') || 'same row counts, different rows or files'})`)
  }
  lastSnapshot = after
}

// ---------------------------------------------------------------------------------------------------------------

/** Every case kind that applies to an operation: each is a request that must fail. */
function casesFor(path: string, op: Operation): [string, fc.Arbitrary<Case>][] {
  const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
  const content = op.requestBody?.content ?? {}
  const jsonSchema = content['application/json']?.schema
  const isUpload = 'multipart/form-data' in content
  const otherBody = Object.keys(content).length > 0 && !jsonSchema && !isUpload
  const anyBody: fc.Arbitrary<Case['body']> = isUpload
    ? invalidUpload()
    : jsonSchema
      ? fc.option(invalidJsonBody(jsonSchema), { nil: undefined })
      : otherBody
        ? fc.option(
            fc.uint8Array({ maxLength: 500 }).map((bytes) => ({ type: Object.keys(content)[0], bytes })),
            { nil: undefined },
          )
        : fc.constant(undefined)
  const secured = isSecured(op)
  const cases: [string, fc.Arbitrary<Case>][] = []
  const valid = credentialsFor(path)

  // (a) Path parameters that name nothing, with valid credentials and anything else.
  if (params.length) {
    cases.push([
      'garbage path',
      fc
        .record({
          pathValues: fc.array(garbageParam, { minLength: params.length, maxLength: params.length }),
          query: anyQuery(op),
          headers: extraHeaders,
          body: anyBody,
        })
        .map((c) => ({ ...c, kind: 'garbage path', headers: { ...c.headers, ...valid } })),
    ])
  }
  // (b) Real resources and valid credentials, with an invalid body or query.
  const real = params.map((p) => resourceFor(own, path, p))
  if (real.every((v) => v !== undefined)) {
    const badQuery = invalidQuery(op)
    const badBody = isUpload ? invalidUpload() : jsonSchema ? invalidJsonBody(jsonSchema) : null
    const invalid: fc.Arbitrary<Pick<Case, 'query' | 'body'>>[] = []
    if (badBody) invalid.push(fc.record({ query: anyQuery(op), body: badBody }))
    if (badQuery) invalid.push(fc.record({ query: badQuery, body: fc.constant(undefined) }))
    if (invalid.length) {
      cases.push([
        'invalid input',
        fc.tuple(fc.oneof(...invalid), extraHeaders).map(([input, headers]) => ({
          kind: 'invalid input',
          pathValues: real as string[],
          ...input,
          headers: { ...headers, ...valid },
        })),
      ])
    }
  }
  // (c) Wrong credentials on a route that needs them, with anything else (real resources, so only auth can refuse).
  if (secured && real.every((v) => v !== undefined)) {
    cases.push([
      'bad credentials',
      fc.record({ query: anyQuery(op), headers: extraHeaders, creds: garbageCredentials, body: anyBody }).map((c) => ({
        kind: 'bad credentials',
        pathValues: real as string[],
        query: c.query,
        body: c.body,
        headers: { ...c.headers, ...c.creds },
      })),
    ])
  }
  return cases
}

describe('every operation of /swagger/json, fed garbage (property-based)', () => {
  test('the document lists the operations (the suite is not vacuous)', () => {
    const count = Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0)
    expect(count).toBeGreaterThanOrEqual(30)
  })

  test('every operation: 4xx with { error }, never 5xx, data unchanged', async () => {
    const started = performance.now()
    let operations = 0
    let requests = 0
    const skipped: string[] = []
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const cases = casesFor(path, op)
        if (cases.length === 0) {
          // Only an operation with nothing a client could get wrong may be skipped: public, no parameters, no body.
          expect(
            isSecured(op) || (op.parameters ?? []).length > 0 || op.requestBody !== undefined,
            `${method} ${path} has inputs but no case`,
          ).toBe(false)
          skipped.push(`${method.toUpperCase()} ${path}`)
          continue
        }
        operations++
        for (const [kind, arbitrary] of cases) {
          await fc
            .assert(
              fc.asyncProperty(arbitrary, async (c) => {
                requests++
                await run(method, path, op, c)
              }),
              { numRuns: RUNS, endOnFailure: true },
            )
            .catch((error) => {
              const cause = (error as { cause?: unknown }).cause
              throw new Error(
                `${method.toUpperCase()} ${path} (${kind}): ${cause instanceof Error ? cause.message : ''}\n${error instanceof Error ? error.message : String(error)}`,
              )
            })
        }
      }
    }
    expect(operations).toBeGreaterThanOrEqual(30)
    expect(requests).toBeGreaterThan(operations * RUNS)
    // Invalid input with valid credentials is mostly refused by validation (400, 413), not by the guard.
    const invalidInput = Object.entries(statuses).filter(([k]) => k.startsWith('invalid input'))
    const validation = invalidInput.filter(([k]) => / (400|413|422)$/.test(k)).reduce((n, [, v]) => n + v, 0)
    expect(validation).toBeGreaterThan(invalidInput.reduce((n, [, v]) => n + v, 0) * 0.8)
    console.log(
      JSON.stringify({
        level: 'info',
        msg: 'fuzz',
        operations,
        requests,
        skipped,
        statuses,
        seconds: Math.round((performance.now() - started) / 1000),
      }),
    )
    // The server is still healthy, and the owner's data is all there.
    expect((await t.fetch('/healthz')).status).toBe(200)
    expect((await t.json(`/api/v1/image/${own.image}`)).status).toBe(200)
    expect((await t.json(`/api/albums/${own.album}`, { headers: owner.bearer })).status).toBe(200)
    // A guard against a hang, not a speed target: 3,800 requests take ~30 s alone and up to ~100 s inside the whole
    // suite on 2 cores.
  }, 240_000)
})
