import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { STATUS_CODES } from 'node:http'
import type { Image } from '../../db/schema'
import { badRequest, RateLimited } from '../../errors'
import { ipKey } from '../../http/client-ip'
import type { HttpError } from '../../http/errors'
import {
  discardFiles,
  fileTooLarge,
  type LimitsFor,
  type MultipartLimits,
  type ReceivedFile,
  type ReceivedUpload,
  tempUploadPath,
} from '../../http/multipart'
import { fetchToFile } from '../../net/fetch-url'
import type { ImageService } from '../images/service'
import { CHEVERETO_FORMATS, type CheveretoFormat } from './model'

/** Where the source is given: Chevereto's one field for a file, base64 text or a link. */
export const SOURCE_FIELD = 'source'

/** A data-URL prefix (`data:image/png;base64,`) is at most this long; base64 never holds a comma. */
const DATA_URL_PREFIX = /^\s*data:[^,]{0,200},/i
const BASE64_TEXT = /^[A-Za-z0-9+/=_-]*$/

/** The answer format: `format` in the body, else in the query; json by default. */
function answerFormat(fields: Record<string, string>, query: Record<string, string | undefined>) {
  const format = (fields.format ?? query.format ?? 'json').trim().toLowerCase()
  if (!(CHEVERETO_FORMATS as readonly string[]).includes(format))
    throw badRequest(`format must be one of ${CHEVERETO_FORMATS.join(', ')}`)
  return format as CheveretoFormat
}

/**
 * Chevereto's fields as the pipeline's: `album_id` is our album (an id, or a folder name), `nsfw` and `expiration`
 * (an ISO 8601 duration) ours as they are. `title` and `description` have no place here and are ignored, as are
 * `action` (always upload) and `key` and `format` (read by the door).
 */
export function pipelineFields(fields: Record<string, string>): Record<string, string> {
  const mapped: Record<string, string> = {}
  if (fields.album_id !== undefined) mapped.album = fields.album_id
  if (fields.nsfw !== undefined) mapped.nsfw = fields.nsfw
  if (fields.expiration !== undefined) mapped.expires = fields.expiration
  return mapped
}

/**
 * Decodes base64 text (whitespace and a data-URL prefix tolerated) into a file at `path`, refusing it (413) as soon as
 * the decoded bytes pass `maxSize`. Streams: only a chunk and at most three characters are held at a time.
 */
async function decodeBase64(
  text: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  path: string,
  maxSize: number | null,
) {
  const out = createWriteStream(path)
  // A write that failed (a full disk) fails the upload as it is, for the error model to answer (507).
  let writeError: Error | null = null
  out.on('error', (error) => {
    writeError = error
  })
  const hash = new Bun.CryptoHasher('sha256')
  let size = 0
  let head: string | null = ''
  let carry = ''
  const emit = async (bytes: Buffer) => {
    size += bytes.length
    if (maxSize !== null && size > maxSize) throw fileTooLarge(maxSize)
    hash.update(bytes)
    if (writeError) throw writeError
    // once() rejects if the stream fails while it waits.
    if (!out.write(bytes)) await once(out, 'drain')
  }
  const write = async (chars: string) => {
    // An unencoded `+` in a urlencoded body arrives as a space; line breaks are MIME's wrapping.
    const clean = carry + chars.replace(/ /g, '+').replace(/[\r\n\t]/g, '')
    if (!BASE64_TEXT.test(clean)) throw badRequest('source is neither a file, base64 nor an http(s) link')
    const whole = clean.length - (clean.length % 4)
    carry = clean.slice(whole)
    await emit(Buffer.from(clean.slice(0, whole), 'base64'))
  }
  try {
    for await (const chunk of text) {
      const chars = Buffer.from(chunk).toString('latin1')
      if (head === null) {
        await write(chars)
        continue
      }
      // Held until the prefix (if any) is whole: it is short, so this holds at most ~200 characters.
      head += chars
      if (head.length < 256 && !head.includes(',')) continue
      const rest = head.replace(DATA_URL_PREFIX, '')
      head = null
      await write(rest)
    }
    if (head !== null) await write(head.replace(DATA_URL_PREFIX, ''))
    // Unpadded base64 ends with 2 or 3 characters.
    if (carry) await emit(Buffer.from(carry, 'base64'))
    out.end()
    // A stream that failed has closed already.
    if (!out.closed) await once(out, 'close')
    if (writeError) throw writeError
    if (size === 0) throw badRequest('source is empty')
    return { size, sha256: hash.digest('hex') }
  } catch (error) {
    out.destroy()
    await rm(path, { force: true })
    throw error
  }
}

/**
 * The limits a multipart body's file is received under: the caller's when the key is known by then (upfront, or a `key`
 * field before the file), else `strictest`, what every key may send. PHP reads the whole form, so Chevereto's clients
 * send its fields in any order; the door asks for the caller's own limits (and checks the key) once the form is read.
 */
export const keyAnywhere =
  (limitsFor: LimitsFor, keyKnown: boolean, strictest: MultipartLimits, keyless: () => void): LimitsFor =>
  async (fields) => {
    if (keyKnown || fields.key !== undefined) return { ...(await limitsFor(fields)), maxFiles: 1 }
    keyless()
    return strictest
  }

/** How long a sender refused by the cap below should wait: a reception takes seconds. */
const KEYLESS_RETRY_SECONDS = 2

/**
 * The files being received before their key is read: no admission holds them yet (the key names the account), so at
 * most `cap` at once from one address (UPLOADS_IN_FLIGHT_PER_IP, the admission's own cap), past which a 429. `take`
 * answers the release, to call once the key is checked (or the request is over); safe to call twice.
 */
export function keylessReceptions(cap: number) {
  const held = new Map<string, number>()
  return {
    take(ip: string): () => void {
      const key = ipKey(ip)
      const count = held.get(key) ?? 0
      if (count >= cap) {
        throw new RateLimited(
          `Too many uploads at once: at most ${cap} from one address before their key is read; send the key first`,
          { limit: cap, remaining: 0, resetSeconds: KEYLESS_RETRY_SECONDS },
        )
      }
      held.set(key, count + 1)
      let released = false
      return () => {
        if (released) return
        released = true
        const left = (held.get(key) ?? 1) - 1
        if (left > 0) held.set(key, left)
        else held.delete(key)
      }
    },
  }
}

const isLink = (text: string) => /^\s*https?:\/\//i.test(text)

/**
 * The one place that decides what `source` is: a file part (as it is), a link, or base64 text (decoded into a temp
 * file under the caller's per-file limit). Takes what the body gave (a text part received as a file, or the text of a
 * urlencoded field) and answers the upload as the pipeline stores it, with the answer's format. The parts received
 * are the pipeline's to remove once returned, and removed here on a refusal.
 */
export async function resolveSource(
  received: ReceivedUpload,
  sourceText: string | undefined,
  limits: MultipartLimits,
  query: Record<string, string | undefined>,
  urlUploads: { timeoutMs: number; allowPrivate: boolean },
): Promise<ReceivedUpload & { format: CheveretoFormat }> {
  const [part] = received.files
  try {
    const format = answerFormat(received.fields, query)
    const fields = pipelineFields(received.fields)
    if (part && !part.text) return { files: [part], fields, format }
    const text = part ? Bun.file(part.path) : sourceText
    if (text === undefined)
      throw badRequest('Missing source: send the image as a file, base64 or an http(s) link in `source`')
    const start = typeof text === 'string' ? text.slice(0, 16) : await text.slice(0, 16).text()
    if (isLink(start)) {
      // A link is fetched like a `url` of /api/v1/upload: the same address rules, size limit and time budget.
      const url = (typeof text === 'string' ? text : await text.text()).trim()
      const fetched = await fetchToFile(url, { tmpDir: limits.tmpDir, maxBytes: limits.maxFileSize, ...urlUploads })
      if (part) await discardFiles([part])
      return { files: [fetched], fields, format }
    }
    const file: ReceivedFile = {
      path: part ? `${part.path}.bin` : tempUploadPath(limits.tmpDir),
      filename: 'image',
      size: 0,
      sha256: '',
    }
    const chunks = typeof text === 'string' ? [Buffer.from(text, 'latin1')] : text.stream()
    Object.assign(file, await decodeBase64(chunks, file.path, limits.maxFileSize))
    if (part) await discardFiles([part])
    return { files: [file], fields, format }
  } catch (error) {
    await discardFiles(received.files)
    throw error
  }
}

/** `2026-11-25 01:02:03`: Chevereto's date form (UTC for both of its dates here). */
const chevereto = (iso: string) => iso.slice(0, 19).replace('T', ' ')

/** A stored image in Chevereto's answer shape, with our links; `delete_url` is its delete page (a link clients open). */
export function cheveretoImage(images: Pick<ImageService, 'fields'>, image: Image, deletePage: string) {
  const f = images.fields(image)
  const dot = f.filename.lastIndexOf('.')
  const name = dot > 0 ? f.filename.slice(0, dot) : f.filename
  const thumb = { url: f.thumbnail, mime: 'image/webp', extension: 'webp' }
  return {
    id_encoded: f.id,
    name,
    extension: image.ext,
    filename: `${f.id}.${image.ext}`,
    original_filename: f.filename,
    size: f.size,
    width: f.width,
    height: f.height,
    date: chevereto(f.createdAt),
    date_gmt: chevereto(f.createdAt),
    expiration_date_gmt: f.expiresAt === null ? null : chevereto(f.expiresAt),
    mime: f.mime,
    url: f.url,
    url_viewer: f.viewer,
    display_url: f.thumbnail,
    thumb,
    medium: thumb,
    delete_url: deletePage,
    nsfw: f.nsfw ? 1 : 0,
    visibility: f.visibility,
  }
}

const statusText = (status: number) => STATUS_CODES[status] ?? 'Error'

export const cheveretoSuccess = (image: ReturnType<typeof cheveretoImage>) => ({
  status_code: 200,
  success: { message: 'image uploaded', code: 200 },
  image,
  status_txt: statusText(200),
})

/** A refusal (with the status our API gives it) in Chevereto's error shape; the code is the status. */
export const cheveretoError = (answer: HttpError) => ({
  status_code: answer.status,
  error: { message: answer.message, code: answer.status, ...answer.extra },
  status_txt: statusText(answer.status),
})
