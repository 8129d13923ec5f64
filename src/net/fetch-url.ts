import { open, rm } from 'node:fs/promises'
import http, { type IncomingMessage } from 'node:http'
import https from 'node:https'
import { badRequest, DomainError } from '../errors'
import { faultOf } from '../faults'
import { type ReceivedFile, tempUploadPath } from '../lib/received-file'
import { sizeText } from '../lib/size'
import { batchedAppend } from '../lib/write-all'
import { parseHttpUrl, pinnedLookup, RefusedAddressError, type ResolvedAddress, resolvePublic } from './address'

/** Redirects followed for one URL at most; each target is checked like the first. */
export const MAX_REDIRECTS = 3
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
/** How much of a URL an error repeats: enough to tell which one failed. */
const SHOWN_URL_CHARS = 200

export interface FetchOptions {
  /** Where the temp file goes (the upload pipeline's temp directory). */
  tmpDir: string
  /** null: no size limit. */
  maxBytes: number | null
  /** The whole fetch: DNS, connect, redirects, headers and body. */
  timeoutMs: number
  /** Reach loopback, private and link-local addresses too (off: refused, SSRF). */
  allowPrivate: boolean
}

/** The name a file gets: Content-Disposition's, else the URL path's last segment, else "image". Untrusted either way. */
function filenameOf(response: IncomingMessage, url: URL): string {
  const disposition = response.headers['content-disposition'] ?? ''
  const encoded = /filename\*\s*=\s*[^']*'[^']*'([^;]+)/i.exec(disposition)?.[1]
  const plain = /filename\s*=\s*(?:"([^"]*)"|([^;]+))/i.exec(disposition)
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text)
    } catch {
      return text
    }
  }
  const candidates = [
    encoded && decode(encoded.trim()),
    plain && (plain[1] ?? plain[2]).trim(),
    decode(url.pathname.split('/').pop() ?? ''),
  ]
  for (const candidate of candidates) {
    // A name, never a path (as multipart parts are read).
    const name = candidate?.split(/[/\\]/).pop()?.trim()
    if (name) return name.slice(0, 255)
  }
  return 'image'
}

/** One GET to `url`, connected only to `addresses` (checked), with SNI and certificate checks on the URL's host name. */
function get(url: URL, addresses: ResolvedAddress[], signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(
      url,
      {
        method: 'GET',
        headers: { Accept: 'image/*,*/*;q=0.5', 'Accept-Encoding': 'identity', 'User-Agent': 'url-upload/1.0' },
        lookup: pinnedLookup(addresses),
        agent: false,
        signal,
      },
      resolve,
    )
    request.on('error', reject)
    request.end()
  })
}

/** Streams a response's body to `path` (never held whole), hashing it, and stops past `maxBytes`. */
async function save(response: IncomingMessage, path: string, maxBytes: number | null) {
  const out = await open(path, 'w')
  const file = batchedAppend(Promise.resolve(out))
  const hash = new Bun.CryptoHasher('sha256')
  let size = 0
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      size += chunk.length
      if (maxBytes !== null && size > maxBytes) throw tooBig(maxBytes)
      hash.update(chunk)
      file.add(chunk)
      await file.written
    }
    file.end()
    await file.written
  } finally {
    response.destroy()
    await file.written.catch(() => {})
    await out.close()
  }
  return { size, sha256: hash.digest('hex') }
}

const tooBig = (maxBytes: number) => badRequest(`too large: at most ${sizeText(maxBytes)} per file`)

/**
 * Fetches an untrusted http(s) URL to a temp file, SSRF-safe: every host (the first and each redirect's, at most
 * MAX_REDIRECTS) is resolved here and each of its addresses checked, then the connection is pinned to those checked
 * addresses, so a name that answers differently the second time (DNS rebinding) cannot pass. Under one time budget
 * and the size cap (a declared length over it is refused before reading). The bytes are not trusted: the pipeline
 * sniffs them like any upload. Throws Invalid saying which failure, with no temp file left behind.
 */
export async function fetchToFile(url: string, opts: FetchOptions): Promise<ReceivedFile> {
  const shown = url.length > SHOWN_URL_CHARS ? `${url.slice(0, SHOWN_URL_CHARS)}...` : url
  const path = tempUploadPath(opts.tmpDir)
  const controller = new AbortController()
  const slow = badRequest(`no complete answer within ${opts.timeoutMs} ms`)
  const timer = setTimeout(() => controller.abort(slow), opts.timeoutMs)
  // A lookup cannot be cancelled: the budget answers for it.
  const aborted = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(slow)))
  aborted.catch(() => {})
  try {
    let target = parseHttpUrl(url)
    for (let redirects = 0; ; redirects++) {
      const addresses = await Promise.race([resolvePublic(target.hostname, opts.allowPrivate), aborted])
      const response = await get(target, addresses, controller.signal)
      const status = response.statusCode ?? 0
      const location = response.headers.location
      if (REDIRECT_STATUSES.has(status) && location) {
        response.destroy()
        if (redirects >= MAX_REDIRECTS) throw badRequest(`more than ${MAX_REDIRECTS} redirects`)
        target = parseHttpUrl(location, target)
        continue
      }
      if (status < 200 || status > 299) {
        response.destroy()
        throw badRequest(`the server answered HTTP ${status}`)
      }
      const declared = Number(response.headers['content-length'])
      if (opts.maxBytes !== null && declared > opts.maxBytes) {
        response.destroy()
        throw tooBig(opts.maxBytes)
      }
      const saved = await save(response, path, opts.maxBytes)
      return { path, filename: filenameOf(response, target), ...saved }
    }
  } catch (error) {
    await rm(path, { force: true })
    // Our own disk failing (full, read-only) is not the URL's fault: the error model answers it (507).
    if (faultOf(error)) throw error
    // Past the budget, whatever broke (the socket, the stream) broke because of it.
    const cause = controller.signal.aborted && !(error instanceof DomainError) ? slow : error
    // A connection's own message names the address: only its code is repeated.
    const reason =
      cause instanceof DomainError || cause instanceof RefusedAddressError
        ? cause.message
        : `cannot fetch (${(cause as NodeJS.ErrnoException)?.code ?? 'connection failed'})`
    throw badRequest(`url ${shown}: ${reason}`)
  } finally {
    clearTimeout(timer)
  }
}
