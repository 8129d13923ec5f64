export type WalkRequest =
  | { type: 'start'; root: string; dirs: readonly string[]; batch: number; streamAbove: number }
  | { type: 'next' }
/** A batch of `<dir>/<name>`s (empty once the walk is over), or why the walk failed. */
export type WalkReply = { names: string[] } | { error: string }

/**
 * A directory whose own size passes this many bytes (its entries' blocks: 1 MiB is ~30,000 names on ext4) is listed
 * by `find` as a stream; a smaller one by Bun, whole (walk-worker.ts says why).
 */
export const STREAM_ABOVE = 1 << 20

/**
 * The names in `dirs` under `root`, as `<dir>/<name>`, `batch` at a time, read by a Worker of their own
 * (walk-worker.ts): the next batch is read only when this one has been taken, so memory stays bounded, and the cost of
 * reading a directory of a million names stays off the event loop. Ends the Worker when the walk ends or is left.
 */
export async function* walkInWorker(
  root: string,
  dirs: readonly string[],
  batch = 500,
  streamAbove = STREAM_ABOVE,
): AsyncGenerator<string[]> {
  const worker = new Worker(new URL('./walk-worker.ts', import.meta.url))
  let waiting: { resolve: (reply: WalkReply) => void; reject: (error: Error) => void } | undefined
  worker.onmessage = (event: MessageEvent<WalkReply>) => waiting?.resolve(event.data)
  worker.onerror = (event) => waiting?.reject(new Error(`directory walk failed: ${event.message}`))
  const next = () =>
    new Promise<WalkReply>((resolve, reject) => {
      waiting = { resolve, reject }
      worker.postMessage({ type: 'next' } satisfies WalkRequest)
    })
  try {
    worker.postMessage({ type: 'start', root, dirs, batch, streamAbove } satisfies WalkRequest)
    for (;;) {
      const reply = await next()
      if ('error' in reply) throw new Error(reply.error)
      if (reply.names.length === 0) return
      yield reply.names
    }
  } finally {
    worker.terminate()
  }
}
