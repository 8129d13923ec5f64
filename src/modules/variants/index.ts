import { Elysia } from 'elysia'
import { notFound, Unprocessable } from '../../errors'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import type { VariantSpec } from '../../media'
import { ImageIdParams } from '../images/model'
import type { ImageService } from '../images/service'
import { VariantRequest, VariantResponse } from './model'
import type { VariantService } from './service'
import { MAX_SIDE, MIN_SIDE, VARIANT_FITS, VARIANT_FORMATS } from './specs'

/** POST /api/v1/image/:id/variants: a signed URL of a custom size of the caller's image (any image for an admin). */
export function variantsModule(deps: {
  images: ImageService
  variants: VariantService
  /** Where /cdn links point (CDN_URL, else the public URL). */
  publicUrl: string
  guard: ReturnType<typeof authGuard>
}) {
  const { images, variants } = deps
  return new Elysia({ name: 'module-variants' }).use(deps.guard).post(
    '/api/v1/image/:id/variants',
    async ({ params, body, user }) => {
      const image = await images.find(params.id)
      // Another account's image is as unknown as a missing one.
      if (!image || (image.userId !== user.id && user.role !== 'admin')) throw notFound('Image not found')
      // The schema checked both against the lists; its static type only knows them as strings.
      const spec: VariantSpec = {
        width: body.width,
        height: body.height,
        fit: (body.fit ?? 'inside') as VariantSpec['fit'],
        format: body.format as VariantSpec['format'],
      }
      // A URL that could only ever answer 422 is not signed: the size is refused here, with the same reason.
      const refused = await variants.refusal(image, spec, variants.keyOf(image.id, spec))
      if (refused) throw new Unprocessable(refused)
      return { url: `${deps.publicUrl}${variants.signedPath(image.id, spec)}` }
    },
    {
      apiKey: true,
      params: ImageIdParams,
      body: VariantRequest,
      response: { 200: VariantResponse, ...errors(400, 401, 403, 404, 422) },
      detail: {
        tags: ['Images'],
        summary: 'A signed URL of your image resized (made on its first request, then kept)',
        description:
          `width and height ${MIN_SIDE}-${MAX_SIDE} px (height optional: the width alone bounds it); ` +
          `fit one of ${VARIANT_FITS.join(', ')} (default inside); format one of ${VARIANT_FORMATS.join(', ')}. ` +
          'Never enlarged. Any change to the URL answers 403. A size that would take more than the media budget to make ' +
          '(a long animation in WebP), or that failed before, is refused with 422 and the reason.',
      },
    },
  )
}
