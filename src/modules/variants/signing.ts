import { createHmac } from 'node:crypto'
import { forbidden } from '../../errors'
import { safeEqual } from '../../lib/crypto'
import type { VariantSpec } from '../../media'
import { isVariantFit, MAX_SIDE, MIN_SIDE } from './specs'

/** A signed size's path: /cdn/custom/<id>.<format>?<params>&s=<signature>. */
export const CUSTOM = 'custom'

const SIDE = /^[1-9]\d{1,3}$/
const BAD_SIGNATURE = 'Invalid or tampered variant signature'

/** The parameters in the one order and spelling that is signed. */
const paramsOf = (spec: VariantSpec) =>
  `w=${spec.width}${spec.height === undefined ? '' : `&h=${spec.height}`}&fit=${spec.fit}`

/** HMAC-SHA256 over everything the URL says: the image, the format and the parameters, exactly as written. */
const signatureOf = (secret: string, file: string, params: string) =>
  createHmac('sha256', secret).update(`${file}?${params}`).digest('base64url')

/** The path (from /cdn on) of an image's variant, signed: the server makes it for whoever holds the URL. */
export function signedVariantPath(secret: string, imageId: string, spec: VariantSpec): string {
  const file = `${imageId}.${spec.format}`
  const params = paramsOf(spec)
  return `/cdn/${CUSTOM}/${file}?${params}&s=${signatureOf(secret, file, params)}`
}

const side = (value: string | undefined) => {
  if (value === undefined) return undefined
  const n = SIDE.test(value) ? Number(value) : Number.NaN
  return n >= MIN_SIDE && n <= MAX_SIDE ? n : Number.NaN
}

/**
 * The spec a signed URL's query (`search`, without the `?`) carries for `file` (`<id>.<format>`); Forbidden when the
 * signature does not match every byte of the parameters, or they are not what `signedVariantPath` writes.
 */
export function verifyVariantQuery(
  secret: string,
  file: string,
  format: VariantSpec['format'],
  search: string,
): VariantSpec {
  const at = search.lastIndexOf('&s=')
  const params = at < 0 ? '' : search.slice(0, at)
  const given = at < 0 ? '' : search.slice(at + 3)
  if (!safeEqual(given, signatureOf(secret, file, params))) throw forbidden(BAD_SIGNATURE)
  const values = new URLSearchParams(params)
  const fit = values.get('fit') ?? ''
  const spec = { width: side(values.get('w') ?? ''), height: side(values.get('h') ?? undefined), fit, format }
  // Only this server signs, and only valid specs: anything else here means the secret is known or reused elsewhere.
  if (
    Number.isNaN(spec.width) ||
    Number.isNaN(spec.height) ||
    !isVariantFit(fit) ||
    paramsOf(spec as VariantSpec) !== params
  )
    throw forbidden(BAD_SIGNATURE)
  return spec as VariantSpec
}
