/** The messages between a worker pool (pool.ts) and one of its workers (serve.ts), a process or a thread alike. */

/** To a worker: first its setup, then one job at a time, each only after the last was answered. */
export type PoolMessage = { setup: unknown } | { id: number; op: string; args: unknown[] }

/**
 * From a worker: ready (with what its start reports) or failed to start; then per job its value or its error, and
 * before either any `early` values (part of its result the caller can use while the job goes on).
 */
export type WorkerMessage =
  | { ready: true; info: unknown }
  | { failed: SerializedError }
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: SerializedError }
  | { id: number; early: unknown }

/** An error as plain fields: errors cross neither IPC nor postMessage as their classes. */
export interface SerializedError {
  name: string
  message: string
  code?: string
}

export function serializeError(error: unknown): SerializedError {
  const e = error as Error & { code?: string }
  return { name: e?.name ?? 'Error', message: e?.message ?? String(error), code: e?.code }
}

/** An error from a worker as an Error again, keeping its name and errno code for the callers' mapping. */
export function reviveError(error: SerializedError): Error {
  return Object.assign(new Error(error.message), { name: error.name, code: error.code })
}
