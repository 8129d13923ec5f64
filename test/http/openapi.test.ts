import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import SwaggerParser from '@apidevtools/swagger-parser'
import { startTestServer, type TestServer } from '../helpers'

type Operation = {
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>
  security?: Record<string, string[]>[]
  requestBody?: { content?: Record<string, { schema?: unknown }> }
}
type Doc = {
  openapi: string
  paths: Record<string, Record<string, Operation>>
  components?: { securitySchemes?: Record<string, Record<string, string>> }
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
/** DECISIONS.md: exactly these answer 201; every other success is 200. */
const CREATED = new Set([
  'post /api/auth/register',
  'post /api/v1/upload',
  'post /api/upload',
  'post /api/albums',
  'post /api/embeds',
  'post /api/keys',
  'post /api/auth/passkeys/register',
  'post /api/reports',
  'post /api/webhooks',
  'post /api/v1/tus',
  'post /api/tus',
  'post /api/admin/users',
  'post /api/admin/invites',
])
/**
 * The tus 1.0 protocol fixes these answers: creation is a 201 and HEAD a 200 carrying headers only, a chunk is a 204
 * (the last one a 200 with the upload's answer), termination a 204. Bodiless successes have no schema to document.
 */
const TUS_SUCCESS: Record<string, { codes: string[]; bodiless: string[] }> = Object.fromEntries(
  ['/api/v1/tus', '/api/tus'].flatMap((base) => [
    [`post ${base}`, { codes: ['201'], bodiless: ['201'] }],
    [`head ${base}/{id}`, { codes: ['200'], bodiless: ['200'] }],
    [`patch ${base}/{id}`, { codes: ['200', '204'], bodiless: ['204'] }],
    [`delete ${base}/{id}`, { codes: ['204'], bodiless: ['204'] }],
  ]),
)
/** Logging out answers 204 with no body. */
TUS_SUCCESS['post /api/auth/logout'] = { codes: ['204'], bodiless: ['204'] }

let t: TestServer
let doc: Doc
beforeAll(async () => {
  t = await startTestServer()
  const res = await t.json<Doc>('/swagger/json')
  expect(res.status).toBe(200)
  doc = res.body
})
afterAll(() => t.stop())

/** Every documented operation as [method, path, operation]. */
const operations = () =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => [method, path, op] as const),
  )

const hasSchema = (response: { content?: Record<string, { schema?: unknown }> } | undefined) =>
  !!response?.content &&
  Object.values(response.content).some((media) => media.schema && typeof media.schema === 'object')

/** The app's routes that the document must describe: /api/* and /healthz (pages, assets, files and the docs themselves excluded). */
function documentedRoutes() {
  return t.server.app.routes
    .filter((r) => !/^\/(swagger|cdn|assets)(\/|$)/.test(r.path))
    .filter((r) => r.path.startsWith('/api/') || r.path === '/healthz')
    .filter((r) => !['ALL', 'OPTIONS', 'HEAD', 'WS'].includes(r.method.toUpperCase()))
    .map((r) => ({ method: r.method.toLowerCase(), path: r.path.replace(/:(\w+)\??/g, '{$1}') }))
}

describe('/swagger/json', () => {
  test('is a valid OpenAPI 3 document', async () => {
    expect(doc.openapi).toMatch(/^3\./)
    await SwaggerParser.validate(structuredClone(doc) as never)
  })

  test('every operation carries a feature tag, and every tag used is declared', () => {
    const declared = new Set((doc as { tags?: { name: string }[] }).tags?.map((tag) => tag.name) ?? [])
    const untagged = operations()
      .filter(([, , op]) => !(op as { tags?: string[] }).tags?.length)
      .map(([m, p]) => `${m.toUpperCase()} ${p}`)
    expect(untagged).toEqual([])
    const undeclared = operations()
      .flatMap(([, , op]) => (op as { tags?: string[] }).tags ?? [])
      .filter((tag) => !declared.has(tag))
    expect([...new Set(undeclared)]).toEqual([])
    expect(declared.size).toBeGreaterThan(5)
  })

  test('declares both security schemes: X-API-Key header and HTTP bearer', () => {
    const schemes = Object.values(doc.components?.securitySchemes ?? {})
    expect(schemes.some((s) => s.type === 'apiKey' && s.in === 'header' && s.name?.toLowerCase() === 'x-api-key')).toBe(
      true,
    )
    expect(schemes.some((s) => s.type === 'http' && s.scheme?.toLowerCase() === 'bearer')).toBe(true)
  })

  test('every /api route of the app, and /healthz, is documented with its method', () => {
    const routes = documentedRoutes()
    // Sanity: the app's route table is what we think it is.
    expect(routes.length).toBeGreaterThan(15)
    expect(routes).toContainEqual({ method: 'post', path: '/api/auth/register' })
    const missing = routes
      .filter((r) => !doc.paths[r.path]?.[r.method])
      .map((r) => `${r.method.toUpperCase()} ${r.path}`)
    expect(missing).toEqual([])
  })

  test('nothing outside /api and /healthz is documented (pages, files, metrics stay out)', () => {
    const extra = Object.keys(doc.paths).filter((p) => !p.startsWith('/api/') && p !== '/healthz')
    expect(extra).toEqual([])
  })

  test('every operation documents its error responses with a schema', () => {
    const lacking: string[] = []
    for (const [method, path, op] of operations()) {
      const codes = Object.keys(op.responses ?? {})
      // /healthz takes no input, so it has no 4xx; its failure (database down) is a documented 503.
      const errorCodes = path === '/healthz' ? codes.filter((c) => c === '503') : codes.filter((c) => /^4\d\d$/.test(c))
      if (!errorCodes.some((c) => hasSchema(op.responses![c]))) lacking.push(`${method.toUpperCase()} ${path}`)
    }
    expect(lacking).toEqual([])
  })

  test('every error response schema requires a string `error` (`error.message` on the Chevereto door)', async () => {
    const deref = (await SwaggerParser.dereference(structuredClone(doc) as never)) as unknown as Doc
    const wrong: string[] = []
    for (const [path, item] of Object.entries(deref.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [code, response] of Object.entries(op.responses ?? {})) {
          if (!/^[45]\d\d$/.test(code)) continue
          type Schema = { type?: string; required?: string[]; properties?: Record<string, Schema> }
          const schema = response.content?.['application/json']?.schema as Schema | undefined
          const error = schema?.properties?.error
          // The Chevereto-compatible door answers in Chevereto's shape: `error: { message, code }`.
          const ok = path.startsWith('/api/1/')
            ? error?.required?.includes('message') && error.properties?.message?.type === 'string'
            : error?.type === 'string'
          if (!schema?.required?.includes('error') || !ok) wrong.push(`${method.toUpperCase()} ${path} ${code}`)
        }
      }
    }
    expect(wrong).toEqual([])
  })

  test('every operation documents its success status (201 exactly for the creating endpoints) with a schema', () => {
    const wrong: string[] = []
    for (const [method, path, op] of operations()) {
      const expected = CREATED.has(`${method} ${path}`) ? '201' : '200'
      const success = Object.keys(op.responses ?? {}).filter((c) => /^2\d\d$/.test(c))
      const tus = TUS_SUCCESS[`${method} ${path}`]
      if (tus) {
        const ok =
          success.sort().join() === tus.codes.join() &&
          tus.codes.every((c) => tus.bodiless.includes(c) || hasSchema(op.responses![c]))
        if (!ok) wrong.push(`${method.toUpperCase()} ${path}: ${success.join(',') || 'none'}`)
        continue
      }
      if (success.length !== 1 || success[0] !== expected || !hasSchema(op.responses![expected])) {
        wrong.push(`${method.toUpperCase()} ${path}: ${success.join(',') || 'none'}`)
      }
    }
    expect(wrong).toEqual([])
  })

  test('security: references only declared schemes; key routes use X-API-Key, session routes bearer; secured routes document 401', () => {
    const declared = new Set(Object.keys(doc.components?.securitySchemes ?? {}))
    const schemeOf = (name: string) => doc.components!.securitySchemes![name]
    const problems: string[] = []
    for (const [method, path, op] of operations()) {
      for (const requirement of op.security ?? []) {
        for (const name of Object.keys(requirement))
          if (!declared.has(name)) problems.push(`${method} ${path}: unknown scheme ${name}`)
      }
      const required = (op.security ?? []).length > 0 && !(op.security ?? []).some((r) => Object.keys(r).length === 0)
      if (required && !op.responses?.['401']) problems.push(`${method} ${path}: secured but no 401`)
    }
    expect(problems).toEqual([])

    const uses = (method: string, path: string, check: (s: Record<string, string>) => boolean) =>
      (doc.paths[path]?.[method]?.security ?? []).some((r) => Object.keys(r).some((name) => check(schemeOf(name))))
    const isKey = (s: Record<string, string>) => s.type === 'apiKey' && s.name?.toLowerCase() === 'x-api-key'
    const isBearer = (s: Record<string, string>) => s.type === 'http' && s.scheme === 'bearer'
    for (const [method, path] of [
      ['post', '/api/v1/upload'],
      ['get', '/api/v1/images'],
      ['get', '/api/v1/me'],
      ['patch', '/api/v1/image/{id}'],
      ['delete', '/api/v1/image/{id}'],
    ]) {
      expect({ method, path, key: uses(method, path, isKey) }).toEqual({ method, path, key: true })
    }
    for (const [method, path] of [
      ['get', '/api/auth/me'],
      ['get', '/api/keys'],
      ['post', '/api/keys'],
      ['delete', '/api/keys/{id}'],
      ['patch', '/api/account'],
      ['get', '/api/admin/users'],
      ['patch', '/api/admin/users/{id}'],
    ]) {
      expect({ method, path, bearer: uses(method, path, isBearer) }).toEqual({ method, path, bearer: true })
    }
    // Public endpoints carry no mandatory credentials.
    for (const [method, path] of [
      ['post', '/api/auth/register'],
      ['post', '/api/auth/login'],
      ['get', '/healthz'],
    ]) {
      const security = doc.paths[path]?.[method]?.security ?? []
      expect(security.length === 0 || security.some((r) => Object.keys(r).length === 0)).toBe(true)
    }
  })

  test('request bodies are documented: JSON for the account endpoints, multipart for uploads', () => {
    for (const [method, path] of [
      ['post', '/api/auth/register'],
      ['post', '/api/auth/login'],
      ['post', '/api/auth/verify-email'],
      ['patch', '/api/account'],
      ['post', '/api/keys'],
      ['patch', '/api/admin/users/{id}'],
    ]) {
      const content = doc.paths[path]?.[method]?.requestBody?.content ?? {}
      expect({ method, path, json: !!content['application/json']?.schema }).toEqual({ method, path, json: true })
    }
    const register = doc.paths['/api/auth/register'].post.requestBody!.content!['application/json'].schema as {
      required?: string[]
      properties?: Record<string, unknown>
    }
    expect([...(register.required ?? [])].sort()).toEqual(['email', 'password', 'username'])
    const adminPatch = doc.paths['/api/admin/users/{id}'].patch.requestBody!.content!['application/json'].schema as {
      properties?: Record<string, unknown>
    }
    expect(Object.keys(adminPatch.properties ?? {}).sort()).toEqual([
      'banned',
      'emailVerified',
      'role',
      'storageLimit',
      'uploadsPerHour',
    ])
    // The limit overrides: a whole number from 0, or null (a generated client must not send a string).
    for (const field of ['storageLimit', 'uploadsPerHour']) {
      const types = (adminPatch.properties![field] as { anyOf: { type: string; minimum?: number }[] }).anyOf
      expect({ field, types }).toEqual({
        field,
        types: [expect.objectContaining({ type: 'integer', minimum: 0 }), { type: 'null' }],
      })
    }
    for (const path of ['/api/v1/upload', '/api/upload']) {
      const content = doc.paths[path]?.post?.requestBody?.content ?? {}
      expect({ path, multipart: !!content['multipart/form-data']?.schema }).toEqual({ path, multipart: true })
    }
  })
})
