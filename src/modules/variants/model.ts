import type { TLiteral, TUnion } from '@sinclair/typebox'
import { t } from 'elysia'
import { MAX_SIDE, MIN_SIDE, VARIANT_FITS, VARIANT_FORMATS } from './specs'

const Side = t.Integer({ minimum: MIN_SIDE, maximum: MAX_SIDE })
/** One of the listed values (Elysia's UnionEnum lets a missing required field through). */
const OneOf = <T extends string>(values: readonly T[]) =>
  t.Union(values.map((value) => t.Literal(value))) as unknown as TUnion<TLiteral<T>[]>

export const VariantRequest = t.Object(
  {
    width: Side,
    height: t.Optional(Side),
    fit: t.Optional(OneOf(VARIANT_FITS)),
    format: OneOf(VARIANT_FORMATS),
  },
  { additionalProperties: false },
)

export const VariantResponse = t.Object({
  url: t.String({ description: 'The signed URL of the variant (made on its first request, then kept)' }),
})
