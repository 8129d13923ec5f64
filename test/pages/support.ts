import { expect } from 'bun:test'
import { makeImage, type UploadPart, uploadForm } from '../fixtures'
import { jsonBody, startTestServer, type TestServer } from '../helpers'

/** Albums, embeds and pages never need the real model: startTestServer's neutral classifier does. */
export const startServer = (env: Record<string, string> = {}) => startTestServer(env)

let seed = 0

/** Uploads one image with an API key and returns the upload answer (201 asserted). */
export async function uploadImage(
  t: TestServer,
  keyHeader: Record<string, string>,
  fields: Record<string, string> = {},
  part: Partial<UploadPart> & { width?: number; height?: number } = {},
) {
  const bytes = part.bytes ?? (await makeImage('png', part.width ?? 64, part.height ?? 48, ++seed))
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: keyHeader,
    body: uploadForm([{ bytes, name: part.name ?? `photo-${seed}.png`, type: part.type }], fields),
  })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as {
    id: string
    url: string
    thumbnail: string
    viewer: string
    width: number
    height: number
    size: number
    filename: string
  }
}

export const send = (method: string, body: unknown, headers: Record<string, string>): RequestInit => ({
  method,
  ...jsonBody(body, headers),
})

export const expectError = (res: { status: number; body: any }, status: number) => {
  expect(res.status).toBe(status)
  expect(typeof res.body.error).toBe('string')
}
