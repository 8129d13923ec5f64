/** What `readChunk` answers when the client went away mid-body. */
export const INTERRUPTED = Symbol('interrupted')

/**
 * The next chunk of a request body, `null` at its end, or INTERRUPTED when the read fails (the client went away): the
 * upload doors (multipart, tus) answer that in words rather than as a fault.
 */
export async function readChunk(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): Promise<Uint8Array | null | typeof INTERRUPTED> {
  try {
    const { done, value } = await reader.read()
    return done ? null : value
  } catch {
    return INTERRUPTED
  }
}
