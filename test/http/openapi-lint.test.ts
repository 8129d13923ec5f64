import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { LINT_PUBLIC_URL, lintOpenApi } from '../../scripts/lint-openapi'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'

// The document /swagger/json publishes, held to `@redocly/cli lint` (redocly.yaml) and to what the linter does not
// check itself (src/http/openapi-document.ts).

type Json = Record<string, any>
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']

let t: TestServer
let doc: Json
beforeAll(async () => {
  t = await startTestServer({ PUBLIC_URL: LINT_PUBLIC_URL })
  doc = (await t.json('/swagger/json')).body
})
afterAll(() => t.stop())

const operations = () =>
  Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, path, op: op as Json })),
  )

/** Every value of the document with the key it is under, depth first; examples (values, not schemas) left out. */
function* entries(value: unknown, key = ''): Generator<[string, unknown]> {
  yield [key, value]
  if (!value || typeof value !== 'object') return
  for (const [k, v] of Object.entries(value)) if (k !== 'example' && k !== 'examples') yield* entries(v, k)
}

describe('the published OpenAPI document', () => {
  test('redocly lint (recommended rules): no error; the one warning is the reasoned one of redocly.yaml', async () => {
    const result = await lintOpenApi(doc)
    expect(result.problems.filter((p) => p.severity === 'error')).toEqual([])
    expect(result.problems.map((p) => `${p.ruleId} ${p.pointer}`)).toEqual([
      'operation-4xx-response #/paths/~1healthz/get/responses',
    ])
  }, 60_000)

  test('the linter finds a broken document (the check is not vacuous)', async () => {
    const broken = structuredClone(doc)
    delete broken.servers
    broken.paths['/api/gallery'].get.security = undefined
    broken.paths['/api/gallery'].get.parameters[0].schema.error = 'page must be a number'
    const rules = (await lintOpenApi(broken)).problems.filter((p) => p.severity === 'error').map((p) => p.ruleId)
    expect([...new Set(rules)].sort()).toEqual(['no-empty-servers', 'security-defined', 'struct'])
  }, 60_000)

  test('servers from PUBLIC_URL, the MIT license', () => {
    expect(doc.servers).toEqual([{ url: LINT_PUBLIC_URL, description: expect.any(String) }])
    expect(doc.info.license).toEqual({ name: 'MIT', identifier: 'MIT' })
  })

  test('public operations say `security: []`; the others keep their schemes', () => {
    const missing = operations().filter(({ op }) => !Array.isArray(op.security))
    expect(missing.map((o) => o.name)).toEqual([])
    expect(doc.paths['/api/gallery'].get.security).toEqual([])
    expect(doc.paths['/api/auth/login'].post.security).toEqual([])
    expect(doc.paths['/api/keys'].get.security).toEqual([{ bearer: [] }])
  })

  test('Image, Album, EmbedProfile, Account and Error are component schemas, referenced by the operations', () => {
    const text = JSON.stringify(doc.paths)
    for (const name of ['Image', 'Album', 'EmbedProfile', 'Account', 'Error']) {
      expect(doc.components.schemas[name]?.type).toBe('object')
      expect(text).toContain(`"#/components/schemas/${name}"`)
    }
    expect(
      doc.paths['/api/v1/image/{id}'].get.responses['200'].content['application/json'].schema.properties.data,
    ).toEqual({ $ref: '#/components/schemas/Image' })
    expect(JSON.stringify(doc)).not.toContain('"$id"')
  })

  test('no custom `error` keyword is left: every `error` key is a property (an object)', () => {
    const leaked = [...entries(doc)].filter(([key, value]) => key === 'error' && (typeof value !== 'object' || !value))
    expect(leaked).toEqual([])
  })

  test('every response has a description of its own', () => {
    const generic = operations().flatMap(({ name, op }) =>
      Object.entries(op.responses as Record<string, Json>)
        .filter(([, r]) => !r.description || /^(Error|Response for status \d+|Error \d+)$/.test(r.description))
        .map(([code]) => `${name} ${code}`),
    )
    expect(generic).toEqual([])
  })

  test('every /api operation: 429 with Retry-After and RateLimit-*, 503 with Retry-After, 507 where it writes; every body: 413; every operation: 500', () => {
    const wrong: string[] = []
    for (const { name, path, op } of operations()) {
      const { responses } = op
      if (path.startsWith('/api/')) {
        const headers = Object.keys(responses['429']?.headers ?? {}).sort()
        const want = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After']
        if (!want.every((h) => headers.includes(h))) wrong.push(`${name} 429: ${headers}`)
        if (!responses['503']?.headers?.['Retry-After']) wrong.push(`${name}: no 503 with Retry-After`)
        const writes = !/^(get|head) /i.test(name)
        if (writes !== !!responses['507']) wrong.push(`${name}: 507 ${writes ? 'missing' : 'on a read'}`)
      } else if (responses['429']) wrong.push(`${name}: 429 outside the limiter`)
      if (op.requestBody && !responses['413']) wrong.push(`${name}: no 413`)
      if (!responses['500']?.content) wrong.push(`${name}: no 500`)
    }
    expect(wrong).toEqual([])
  })

  test('the answers carry the documented headers: a 429 of the global limiter', async () => {
    const limited = await startTestServer({ GLOBAL_RATE_LIMIT: '1' })
    try {
      await limited.fetch('/api/gallery')
      const res = await limited.fetch('/api/gallery')
      expect(res.status).toBe(429)
      const documented = Object.keys(doc.paths['/api/gallery'].get.responses['429'].headers)
      for (const name of documented)
        expect({ name, value: res.headers.get(name) }).toEqual({ name, value: expect.any(String) })
    } finally {
      await limited.stop()
    }
  })

  test('every id (and username) in a path has its pattern, and a real one matches it', async () => {
    const loose = operations().flatMap(({ name, op }) =>
      (op.parameters ?? [])
        .filter((p: Json) => p.in === 'path' && /^(id|imageId|username)$/.test(p.name))
        .filter((p: Json) => !p.schema.pattern && p.schema.type !== 'integer')
        .map((p: Json) => `${name} {${p.name}}`),
    )
    expect(loose).toEqual([])
    const pattern = (path: string, method: string, name: string) =>
      new RegExp(doc.paths[path][method].parameters.find((p: Json) => p.name === name).schema.pattern)
    const owner = await userWithKey(t)
    const upload = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: owner.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png', 8, 8) }]),
    })
    expect(upload.status).toBe(201)
    expect(upload.body.id).toMatch(pattern('/api/v1/image/{id}', 'get', 'id'))
    expect(`${upload.body.id}x`).not.toMatch(pattern('/api/v1/image/{id}', 'get', 'id'))
    const tus = await t.fetch('/api/v1/tus', {
      method: 'POST',
      headers: { ...owner.keyHeader, 'tus-resumable': '1.0.0', 'upload-length': '10' },
    })
    expect(tus.status).toBe(201)
    const tusId = tus.headers.get('location')!.split('/').pop()
    expect(tusId).toMatch(pattern('/api/v1/tus/{id}', 'head', 'id'))
    expect(owner.user.username).toMatch(pattern('/api/users/{username}', 'get', 'username'))
    expect('a b').not.toMatch(pattern('/api/users/{username}', 'get', 'username'))
  })

  test('every operation has an example of its request (body or parameters) and of its success answer', async () => {
    const missing: string[] = []
    for (const { name, op } of operations()) {
      const bodies = Object.values(op.requestBody?.content ?? {}) as Json[]
      if (bodies.some((media) => media.example === undefined)) missing.push(`${name}: request body`)
      const pathParameters = (op.parameters ?? []).filter((p: Json) => p.in === 'path')
      if (pathParameters.some((p: Json) => p.example === undefined)) missing.push(`${name}: path parameter`)
      for (const [code, response] of Object.entries(op.responses as Record<string, Json>)) {
        if (!code.startsWith('2')) continue
        for (const media of Object.values(response.content ?? {}) as Json[])
          if (media.example === undefined) missing.push(`${name}: ${code}`)
      }
    }
    expect(missing).toEqual([])
    // An example is a request the server takes: the register example makes an account.
    const register = doc.paths['/api/auth/register'].post.requestBody.content['application/json'].example
    const created = await t.json('/api/auth/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(register),
    })
    expect(created.status).toBe(201)
    const upload = doc.paths['/api/v1/upload'].post
    expect(upload.requestBody.content['multipart/form-data'].example.visibility).toBe('public')
    expect(upload.responses['201'].content['application/json'].example.success).toBe(true)
  })

  test('every integer is typed `integer`: no `string | integer` (or numeric string) union is left anywhere', () => {
    const numericText = (o: Json) => o?.type === 'string' && (o.format === 'integer' || o.format === 'numeric')
    const unions = [...entries(doc)].filter(
      ([, value]) => Array.isArray((value as Json)?.anyOf) && (value as Json).anyOf.some(numericText),
    )
    expect(unions).toEqual([])
    const image = doc.components.schemas.Image.properties
    for (const field of ['width', 'height', 'size', 'views']) expect(image[field].type).toBe('integer')
    const list = doc.paths['/api/v1/images'].get.responses['200'].content['application/json'].schema.properties
    for (const field of ['total', 'page', 'limit', 'pages']) expect(list[field].type).toBe('integer')
    const feed = doc.paths['/api/gallery'].get.responses['200'].content['application/json'].schema.properties
    for (const field of ['total', 'page', 'totalPages']) expect(feed[field].type).toBe('integer')
    // Whole-number ids in paths too (the framework's t.Numeric with multipleOf 1).
    const keyId = doc.paths['/api/keys/{id}'].delete.parameters.find((p: Json) => p.name === 'id')
    expect(keyId.schema).toMatchObject({ type: 'integer', minimum: 1 })
  })

  test('page and limit are integers with their bounds, and the server takes them as a query string carries them', async () => {
    for (const [path, method] of [
      ['/api/gallery', 'get'],
      ['/api/search', 'get'],
      ['/api/v1/images', 'get'],
      ['/api/admin/users', 'get'],
    ]) {
      const params = Object.fromEntries(doc.paths[path][method].parameters.map((p: Json) => [p.name, p.schema]))
      expect(params.page).toMatchObject({ type: 'integer', minimum: 1 })
      expect(params.limit).toMatchObject({ type: 'integer', minimum: 1 })
    }
    expect(doc.paths['/api/gallery'].get.parameters.find((p: Json) => p.name === 'limit').schema.description).toMatch(
      /at most 40/,
    )
    const owner = await userWithKey(t)
    const form = uploadForm([{ bytes: await makeImage('png') }, { bytes: await makeImage('png') }])
    expect((await t.fetch('/api/v1/upload', { method: 'POST', headers: owner.keyHeader, body: form })).status).toBe(201)
    const page = await t.json('/api/v1/images?page=2&limit=1', { headers: owner.keyHeader })
    expect(page.body).toMatchObject({ page: 2, limit: 1, total: 2, pages: 2 })
    expect((await t.json('/api/gallery?limit=100')).body.images).toBeDefined()
    for (const query of ['page=abc', 'page=1.5', 'page=0', 'page=2e1', 'limit=0', 'limit=0x10', 'asOf=x', 'asOf=-1']) {
      const res = await t.json(`/api/gallery?${query}`)
      expect(res.status).toBe(400)
      expect(res.body.error).toContain(query.split('=')[0])
    }
  })

  test('the UI lists the uploads first (the Images tag and its upload operations), not the auth endpoints', () => {
    expect(doc.tags[0].name).toBe('Images')
    const first = Object.entries(doc.paths as Record<string, Json>).find(([, item]) =>
      Object.values(item).some((op: Json) => op?.tags?.includes('Images')),
    )
    expect(first?.[0]).toBe('/api/v1/upload')
  })
})
