import type { Media } from '../../src/media'
import { createMediaPool, type MediaPoolOptions } from '../../src/workers/media-pool'
import { type Bytes, uploadForm } from '../fixtures'
import type { TestServer } from '../helpers'

export const pathOf = (url: string) => {
  const u = new URL(url)
  return u.pathname + u.search
}

/** Uploads one file with the key; the upload answer. */
export async function upload(
  t: TestServer,
  keyHeader: Record<string, string>,
  bytes: Bytes,
  name: string,
  fields: Record<string, string> = {},
) {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: keyHeader,
    body: uploadForm([{ bytes, name }], fields),
  })
  if (res.status !== 200 && res.status !== 201)
    throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as { id: string; url: string; thumbnail: string }
}

/** The real media pool with the default budgets (`opts` changes some). */
export const testMediaPool = (opts: Partial<MediaPoolOptions> = {}) =>
  createMediaPool({
    maxPixels: 100_000_000,
    maxDecodeBytes: 256 * 1024 * 1024,
    stripMetadata: 'gps',
    workers: 2,
    timeoutMs: 20_000,
    memoryBytes: 1024 * 1024 * 1024,
    maxQueue: 64,
    ...opts,
  })

/** The real media pool, counting the variant jobs it is given and keeping the files they read. */
export function countingMedia() {
  const pool = testMediaPool()
  const counter = { variantJobs: 0, sources: [] as string[] }
  const media: Media = {
    ...pool,
    variant(path, spec, dest, owner) {
      counter.variantJobs++
      counter.sources.push(path)
      return pool.variant(path, spec, dest, owner)
    },
  }
  return { media, counter }
}
