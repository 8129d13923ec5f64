import { badRequest } from '../../errors'
import { sizeText } from '../../lib/size'

/** Longest Upload-Metadata header accepted: a file name and a few options fit many times over. */
const MAX_METADATA_BYTES = 4096

const KEY = /^[\x21-\x2b\x2d-\x7e]+$/ // printable ASCII without space or comma
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/

/**
 * Parses a tus `Upload-Metadata` header: comma-separated `key base64value` pairs (the value may be absent).
 * Keys must be unique; values are decoded as UTF-8. Anything malformed is a 400.
 */
export function parseUploadMetadata(header: string | null | undefined): Record<string, string> {
  const out: Record<string, string> = Object.create(null)
  if (!header?.trim()) return out
  if (header.length > MAX_METADATA_BYTES)
    throw badRequest(`Upload-Metadata is too long: at most ${sizeText(MAX_METADATA_BYTES)}`)
  for (const pair of header.split(',')) {
    const parts = pair.trim().split(' ')
    const [key, value = ''] = parts
    if (parts.length > 2 || !key || !KEY.test(key))
      throw badRequest('Malformed Upload-Metadata: expected "key base64value" pairs separated by commas')
    if (key in out) throw badRequest(`Upload-Metadata: duplicate key ${key}`)
    if (!BASE64.test(value)) throw badRequest(`Upload-Metadata: the value of ${key} is not base64`)
    out[key] = Buffer.from(value, 'base64').toString('utf8')
  }
  return out
}
