import { Elysia } from 'elysia'
import { badRequest } from '../errors'
import { sizeText } from '../lib/size'
import { HttpError } from './errors'

/** Chevereto's API v1 upload door (src/modules/chevereto). */
export const CHEVERETO_PATH = '/api/1/upload'

/** The multipart upload doors (src/modules/images): they stream their bodies and refuse any other type themselves. */
export const UPLOAD_PATHS = { api: '/api/v1/upload', web: '/api/upload' } as const
const STREAMED = new Set<string>([CHEVERETO_PATH, ...Object.values(UPLOAD_PATHS)])

/** JSON bodies are small settings objects; anything bigger is refused without reading it all. */
export const MAX_JSON_BYTES = 1024 * 1024

/**
 * Everything outside /api (pages, the album password form, unknown paths) takes at most a small form: a password
 * field fits many times over.
 */
export const MAX_PAGE_BODY_BYTES = 16 * 1024

/** Settings objects nest two or three levels; anything deeper than this is not a request of ours. */
const MAX_JSON_DEPTH = 32

/** Whether the arrays and objects of a JSON text nest deeper than `limit` (one pass; brackets in strings ignored). */
function nestedDeeperThan(text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

const tooLarge = (cap: number) => new HttpError(413, `Request body too large: at most ${sizeText(cap)}`)

const declaredLength = (request: Request) => Number(request.headers.get('content-length') ?? NaN)

/** A body read whole, refused (413) as soon as it passes `cap` bytes, declared or not. */
export async function readCapped(request: Request, cap: number): Promise<Buffer<ArrayBuffer>> {
  if (declaredLength(request) > cap) throw tooLarge(cap)
  if (!request.body) return Buffer.alloc(0)
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body) {
    size += chunk.byteLength
    if (size > cap) throw tooLarge(cap)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/** A page form (urlencoded or multipart) as its text fields; any other body as text. */
async function pageBody(request: Request, type: string): Promise<unknown> {
  const bytes = await readCapped(request, MAX_PAGE_BODY_BYTES)
  const kind = type.toLowerCase()
  if (kind.startsWith('application/x-www-form-urlencoded'))
    return Object.fromEntries(new URLSearchParams(bytes.toString('utf8')))
  if (kind.startsWith('multipart/form-data')) {
    // The header as sent: the boundary is case-sensitive (and the framework's content type may lack it).
    const form = await new Response(bytes, { headers: { 'content-type': request.headers.get('content-type') ?? type } })
      .formData()
      .catch(() => {
        throw badRequest('Malformed form body')
      })
    return Object.fromEntries([...form.entries()].filter(([, value]) => typeof value === 'string'))
  }
  return bytes.toString('utf8')
}

const isApiPath = (url: string) => new URL(url).pathname.startsWith('/api/')

/**
 * Every body is bounded before it is read. The API takes JSON bodies, parsed here with a size cap; any other body
 * type on /api is a 400, and upload routes opt out of parsing and stream their multipart bodies themselves. Outside
 * /api every route (and every unknown path) refuses a declared body over MAX_PAGE_BODY_BYTES as the request arrives,
 * and a form or other body is read only up to that cap.
 */
export const bodyLimit = new Elysia({ name: 'body-limit' })
  // Before routing: an unknown path never reaches a parser, and a 404 must not wait for (or buffer) a huge body.
  .onRequest(({ request }) => {
    if (declaredLength(request) > MAX_PAGE_BODY_BYTES && !isApiPath(request.url)) throw tooLarge(MAX_PAGE_BODY_BYTES)
  })
  .onParse({ as: 'global' }, async ({ request, contentType, route }) => {
    const type = contentType.toLowerCase()
    if (!isApiPath(request.url)) return pageBody(request, contentType)
    // The upload doors read their own bodies (bounded) and say which type they expect: multipart (and for Chevereto
    // a urlencoded form), never JSON.
    if (STREAMED.has(route)) return null
    if (!type.startsWith('application/json')) {
      // A global parse hook must answer something other than undefined for bodiless POST/DELETE requests (and a
      // multipart body sent elsewhere): null means "no parsed body", which body schemas refuse.
      if (type.startsWith('multipart/form-data')) return null
      // Resumable (tus) uploads stream their bodies themselves and check the content type (415) themselves.
      if (/^\/api\/(v1\/)?tus(\/|$)/.test(new URL(request.url).pathname)) return null
      if (!type && !request.body) return null
      throw badRequest('Expected an application/json body')
    }
    const text = (await readCapped(request, MAX_JSON_BYTES)).toString('utf8')
    // Deep nesting is refused before parsing: validating (and describing the error of) a value nested thousands deep
    // overflows the stack in the framework, which would be a 500.
    if (nestedDeeperThan(text, MAX_JSON_DEPTH))
      throw badRequest(`JSON body nested too deeply: at most ${MAX_JSON_DEPTH} levels`)
    let parsed: unknown
    // The framework turns an invalid value into text for its error message, and an object whose own `toString` or
    // `valueOf` is not a function makes that conversion throw (a 500). No field of the API has such a name.
    let shadowing: string | undefined
    try {
      parsed = JSON.parse(text, (key, value) => {
        if (key === 'toString' || key === 'valueOf') shadowing = key
        return value
      })
    } catch {
      throw badRequest('Malformed JSON body')
    }
    if (shadowing) throw badRequest(`Field name not allowed: ${shadowing}`)
    // Every JSON body of the API is an object. The framework would read a string, number, array or boolean as an
    // empty object, so a body like `"x"` would pass for `{}` on routes whose fields are all optional.
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw badRequest('Expected a JSON object body')
    return parsed
  })
