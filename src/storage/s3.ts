import { S3Client, type S3File } from 'bun'
import { FORMATS, formatFromExt } from '../media/formats'
import {
  checkKey,
  type Storage,
  type StorageKey,
  StorageKeyTakenError,
  StorageUnavailableError,
  type StoredFile,
} from './index'

export interface S3StorageOptions {
  /** Empty: AWS S3 in `region`. */
  endpoint: string
  bucket: string
  region: string
  accessKeyId: string
  secretAccessKey: string
  /** Every key lives under it: empty or ending in `/`. */
  prefix: string
  /** Delays before each retry of a transient failure; its length is the number of retries. */
  retryDelaysMs?: readonly number[]
  /** Keys per ListObjectsV2 page (S3's maximum is 1000). */
  pageSize?: number
}

/** Bounded: a bucket that is down costs a request 1.3 s of waiting before it answers 503, not a hung connection. */
export const RETRY_DELAYS_MS = [100, 300, 900] as const
/**
 * Multipart upload above one part: 8 MiB parts, 4 in flight (at most 32 MiB buffered per upload). A 50 MB original
 * goes up as 7 parts; a thumbnail (well under 8 MiB) as one PUT.
 */
export const PART_SIZE = 8 * 1024 * 1024
const QUEUE_SIZE = 4
/** The health probe's bound: a balancer's check must not hang on a bucket that does not answer. */
const PROBE_TIMEOUT_MS = 2000
/** /cdn reads objects up to this size whole (one GET, a Content-Length); larger ones stream without buffering. */
const WHOLE_BODY_LIMIT = 4 * 1024 * 1024

/** Answers that mean "this will not change if you ask again"; anything else (network errors, 5xx, SlowDown) is retried. */
const PERMANENT = new Set([
  'NoSuchKey',
  'NotFound',
  'NoSuchBucket',
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidArgument',
  'InvalidRequest',
  'InvalidBucketName',
  'EntityTooLarge',
  'EntityTooSmall',
  'MalformedXML',
  'MethodNotAllowed',
])

const codeOf = (error: unknown) => String((error as { code?: unknown })?.code ?? '')
const isMissing = (error: unknown) => ['NoSuchKey', 'NotFound'].includes(codeOf(error))
const isTransient = (error: unknown) => {
  const code = codeOf(error)
  return !PERMANENT.has(code) && !code.startsWith('ERR_S3_')
}

function contentType(key: StorageKey): string {
  const ext = key.slice(key.lastIndexOf('.') + 1)
  const format = formatFromExt(ext)
  return format ? FORMATS[format].mime : 'application/octet-stream'
}

/**
 * Runs `operation`, retrying transient failures after each delay in turn; the last failure (or a permanent one) is
 * thrown as a StorageUnavailableError naming what was attempted. "No such key" is passed through as is: callers map it.
 */
async function withRetry<T>(
  what: string,
  operation: () => Promise<T>,
  delays: readonly number[] = RETRY_DELAYS_MS,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation()
    } catch (error) {
      if (isMissing(error)) throw error
      if (attempt >= delays.length || !isTransient(error)) {
        throw new StorageUnavailableError(
          `object store: ${what} failed after ${attempt + 1} attempt(s): ${codeOf(error) || String(error)}`,
          { cause: error },
        )
      }
      await Bun.sleep(delays[attempt])
    }
  }
}

export type S3Storage = Storage & {
  client: S3Client
  objectKey(key: StorageKey): string
  upload(key: StorageKey, localPath: string): Promise<void>
}

/**
 * Image files in an S3-compatible bucket, on Bun's built-in client (SigV4, multipart uploads, ranged reads).
 * Keys are the same validated keys as on disk, under `prefix`.
 */
export function createS3Storage(opts: S3StorageOptions): S3Storage {
  const client = new S3Client({
    bucket: opts.bucket,
    region: opts.region,
    accessKeyId: opts.accessKeyId,
    secretAccessKey: opts.secretAccessKey,
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    // One retry policy, ours (withRetry): Bun's own would multiply it and retry permanent errors too.
    retry: 0,
  })
  const delays = opts.retryDelaysMs ?? RETRY_DELAYS_MS
  const pageSize = opts.pageSize ?? 1000
  const objectKey = (key: StorageKey) => opts.prefix + checkKey(key)
  const retry = <T>(what: string, operation: () => Promise<T>) => withRetry(what, operation, delays)

  /** Streams a local file up (multipart above PART_SIZE) and checks the size sent; the local file stays. */
  async function upload(key: StorageKey, localPath: string) {
    const name = objectKey(key)
    const local = Bun.file(localPath)
    const size = local.size
    const written = await retry(`put ${name}`, () =>
      client.write(name, local, { type: contentType(key), partSize: PART_SIZE, queueSize: QUEUE_SIZE }),
    )
    // A PUT (or a completed multipart upload) is atomic: the object is whole or absent. This guards against a short read.
    if (written !== size) {
      await client.delete(name).catch(() => {})
      throw new StorageUnavailableError(`object store: ${written} bytes of ${name} sent, expected ${size}`)
    }
  }

  async function exists(key: StorageKey) {
    const name = objectKey(key)
    return retry(`exists ${name}`, () => client.exists(name))
  }

  return {
    client,
    objectKey,

    upload,

    /**
     * Uploads the local file (which stays). S3 has no "create only if absent" PUT everywhere, so an existing object is
     * looked for first: ids are random, so this guards a collision, not a race.
     */
    async put(key, localPath, opts = {}) {
      if (!opts.replace && (await exists(key))) throw new StorageKeyTakenError(key)
      await upload(key, localPath)
    },

    file: (key) => client.file(objectKey(key)) as S3File & StoredFile,

    async stat(key) {
      const name = objectKey(key)
      try {
        const info = await retry(`stat ${name}`, () => client.stat(name))
        return { size: info.size, modifiedAt: info.lastModified.getTime() }
      } catch (error) {
        if (isMissing(error)) return null
        throw error
      }
    },

    exists,

    async probe() {
      // One attempt, bounded: a bucket that is down shows at once, one that hangs within PROBE_TIMEOUT_MS.
      let timer: Timer | undefined
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS)
      })
      try {
        await Promise.race([client.list({ prefix: opts.prefix, maxKeys: 1 }), timeout])
      } catch (error) {
        throw new StorageUnavailableError('the object store did not answer a list of one key', { cause: error })
      } finally {
        clearTimeout(timer)
      }
    },

    async delete(key) {
      const name = objectKey(key)
      try {
        await retry(`delete ${name}`, () => client.delete(name))
      } catch (error) {
        // S3 answers 204 for a missing key; some compatible servers answer 404. Either way it is gone.
        if (!isMissing(error)) throw error
      }
    },

    async *list() {
      let continuationToken: string | undefined
      do {
        const page = await retry(`list ${opts.prefix}`, () =>
          client.list({ prefix: opts.prefix, maxKeys: pageSize, ...(continuationToken ? { continuationToken } : {}) }),
        )
        for (const object of page.contents ?? []) {
          const key = object.key.slice(opts.prefix.length)
          try {
            yield checkKey(key)
          } catch {
            // Not a name this service writes (another tool's object under the same prefix): not ours to list.
          }
        }
        continuationToken = page.isTruncated ? page.nextContinuationToken : undefined
      } while (continuationToken)
    },

    async openBody(file, length) {
      const s3file = file as S3File
      try {
        // Bun.serve sends a stream body chunked, dropping its Content-Length (oven-sh/bun#10507): bodies up to
        // WHOLE_BODY_LIMIT are read whole so they keep one; larger ones stream.
        if (length <= WHOLE_BODY_LIMIT)
          return new Uint8Array(await retry(`get ${s3file.name ?? ''}`, () => s3file.arrayBuffer()))
        return await retry(`get ${s3file.name ?? ''}`, async () => {
          const reader = s3file.stream().getReader()
          // The GET has answered (and with a success status) once the first chunk is here: only then commit to a 200/206.
          const first = await reader.read()
          return new ReadableStream<Uint8Array>({
            start(controller) {
              if (first.done) controller.close()
              else controller.enqueue(first.value)
            },
            async pull(controller) {
              const next = await reader.read()
              if (next.done) controller.close()
              else controller.enqueue(next.value)
            },
            cancel: (reason) => reader.cancel(reason),
          })
        })
      } catch (error) {
        if (isMissing(error)) return null
        throw error
      }
    },

    presign: (key, expiresIn) => client.presign(objectKey(key), { expiresIn, method: 'GET' }),
  }
}
