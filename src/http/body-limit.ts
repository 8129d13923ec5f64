import { Elysia } from 'elysia'
import { HttpError, badRequest } from './errors'

/** JSON bodies are small settings objects; anything bigger is refused without reading it all. */
export const MAX_JSON_BYTES = 1024 * 1024

async function readCapped(request: Request, cap: number): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (declared > cap) throw new HttpError(413, `Request body too large: at most ${cap} bytes`)
  if (!request.body) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body) {
    size += chunk.byteLength
    if (size > cap) throw new HttpError(413, `Request body too large: at most ${cap} bytes`)
    chunks.push(chunk)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

/**
 * The API takes JSON bodies, parsed here with a size cap; any other body type on /api is a 400.
 * Upload routes opt out of parsing and stream their multipart bodies themselves.
 */
export const jsonBodyLimit = new Elysia({ name: 'json-body-limit' }).onParse({ as: 'global' }, async ({ request, contentType }) => {
  if (!contentType.toLowerCase().startsWith('application/json')) {
    if (new URL(request.url).pathname.startsWith('/api/')) throw badRequest('Expected an application/json body')
    return
  }
  const text = await readCapped(request, MAX_JSON_BYTES)
  try {
    return JSON.parse(text)
  } catch {
    throw badRequest('Malformed JSON body')
  }
})
