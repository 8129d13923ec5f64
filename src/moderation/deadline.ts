/** Rejected when a classifier call passes its deadline. */
export class DeadlineError extends Error {}

/**
 * Settles like `work`, or rejects with a DeadlineError after `ms`. The classifier enforces its own deadline too;
 * this one guarantees that callers never wait forever on any `Classifier` (an injected one included).
 */
export function withDeadline<T>(work: Promise<T>, ms: number, what = 'operation'): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`${what} timed out after ${ms} ms`)), ms)
  })
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer))
}
