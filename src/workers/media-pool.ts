import { fileURLToPath } from 'node:url'
import type { Config } from '../config'
import type { Media, MediaOptions } from '../media'
import { MediaError } from '../media/errors'
import { processWorkers } from './handles'
import { BudgetError, createWorkerPool, WorkerExitedError } from './pool'

export interface MediaPoolOptions extends MediaOptions {
  workers: number
  timeoutMs: number
  /** Resident memory of one worker process, its job included. */
  memoryBytes: number
  maxQueue: number
  idleMs?: number
  /** Told of every job as it starts (see WorkerPoolOptions.onStart). */
  onStart?(job: { op: string; owner: string }): void
}

/** A worker process idle this long exits: an idle server holds no decoder memory. */
const IDLE_MS = 30_000

/** What a media job needs of the configuration, wherever it runs. */
export function mediaOptionsOf(config: Config): MediaOptions {
  // Half the process budget: a decoder of ours allocates its pixels, and sharp takes a copy of them.
  return {
    maxPixels: config.limits.maxPixels,
    maxDecodeBytes: Math.floor(config.media.memoryBytes / 2),
    stripMetadata: config.media.stripMetadata,
  }
}

/** Inside the single binary the worker is the binary itself, told by the environment which part to run (src/binary.ts). */
const compiled = import.meta.path.startsWith('/$bunfs/')
const command = compiled
  ? [process.execPath]
  : [process.execPath, '--no-env-file', fileURLToPath(new URL('./media-worker.ts', import.meta.url))]

/**
 * What a worker process inherits of the server's environment: where to find programs and temporary space, the locale,
 * and libvips' and the allocator's own settings. Never the server's secrets (JWT_SECRET, S3 keys, SMTP_URL, the admin
 * password): a process that parses hostile files has no use for them.
 */
function workerEnvironment(): Record<string, string> {
  const kept = /^(PATH|HOME|TMPDIR|TMP|TEMP|LANG|LC_[A-Z]+|TZ|VIPS_[A-Z_]+|MALLOC_[A-Z_]+|LD_LIBRARY_PATH)$/
  return Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => kept.test(e[0]) && e[1] !== undefined),
  )
}

/** The failures of a job, as the pipeline shows them: whatever the bytes caused is a MediaError (a 400 naming the file). */
function asMediaError(error: unknown, timeoutMs: number): unknown {
  if (error instanceof BudgetError) {
    return new MediaError(
      error.budget === 'time'
        ? `Image took too long to process (over ${Math.round(timeoutMs / 100) / 10} s)`
        : 'Image needs too much memory to process',
    )
  }
  if (error instanceof WorkerExitedError) return new MediaError('Image could not be processed')
  if (error instanceof Error && error.name === 'MediaError') return new MediaError(error.message)
  return error
}

/** The server's `Media`: every job in a pool of worker processes, each under a time and a memory budget. */
export const mediaPoolFor = (config: Config) => createMediaPool({ ...mediaOptionsOf(config), ...config.media })

export function createMediaPool(opts: MediaPoolOptions): Media {
  const { workers, timeoutMs, memoryBytes, maxQueue, idleMs, onStart, ...mediaOptions } = opts
  const pool = createWorkerPool({
    start: processWorkers({
      command,
      env: { ...workerEnvironment(), IMGHOST_WORKER: 'media' },
      // Bun reads a `.env` in the working directory into a process's environment (the single binary always does): the
      // root directory holds none an unprivileged user could write, so the server's `.env` secrets stay out too.
      cwd: '/',
    }),
    setup: mediaOptions,
    size: workers,
    timeoutMs,
    memoryBytes,
    idleMs: idleMs ?? IDLE_MS,
    maxQueue,
    onStart,
  })
  const run = async <T>(op: keyof Media, args: unknown[], early?: (value: unknown) => void, owner?: string) => {
    try {
      return await pool.run<T>(op, args, { early, owner })
    } catch (error) {
      throw asMediaError(error, timeoutMs)
    }
  }
  return {
    // A function cannot cross the IPC: the worker is told whether to cut the input, and sends it ahead of the result.
    ingest: (path, { thumbPath, classifierInput, owner }) =>
      run(
        'ingest',
        [path, { thumbPath, classifierInput: !!classifierInput }],
        classifierInput as (v: unknown) => void,
        owner,
      ),
    thumbnail: (path, thumbPath) => run('thumbnail', [path, thumbPath]),
    variant: (path, spec, destPath, owner) => run('variant', [path, spec, destPath], undefined, owner),
    classifierInput: (path) => run('classifierInput', [path]),
    perceptualHash: (path) => run('perceptualHash', [path]),
    close: () => pool.close(),
  }
}
