import { Elysia, t } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { parsePage } from '../../http/pagination'
import { PageQuery, Success } from '../../http/schemas'
import { ImageIdParams } from '../images/model'
import type { ImageService } from '../images/service'
import { AdminBlocksResponse, BlockIdParams, BlockImageBody, BlockResponse } from './model'
import type { BlockService } from './service'

const MATCHING =
  'An upload is refused (400, the answer of a removed image) when its bytes have a blocked SHA-256 or its perceptual ' +
  'hash is within BLOCK_HAMMING_DISTANCE bits of a blocked one, on every upload path.'

/** The blocklist, for admins: list, lift, block an image; the thumbnails kept with blocks. */
export function blocksModule(deps: {
  blocks: BlockService
  images: ImageService
  guard: ReturnType<typeof authGuard>
}) {
  const { blocks, images } = deps
  return new Elysia({ name: 'module-blocks', prefix: '/api/admin' })
    .use(deps.guard)
    .get('/blocks', ({ query }) => blocks.list(parsePage(query, { limit: 20, maxLimit: 100 })), {
      admin: true,
      query: PageQuery,
      response: { 200: AdminBlocksResponse, ...errors(400, 401, 403) },
      detail: { tags: ['Admin'], summary: 'List blocked pictures, newest first', description: MATCHING },
    })
    .delete('/blocks/:id', ({ params }) => blocks.lift(params.id), {
      admin: true,
      params: BlockIdParams,
      response: { 200: Success, ...errors(400, 401, 403, 404) },
      detail: { tags: ['Admin'], summary: 'Lift a block: the picture may be uploaded again' },
    })
    .get(
      '/blocks/:id/thumbnail',
      async ({ params }) =>
        new Response(new Uint8Array(await blocks.thumbnail(params.id)), {
          headers: { 'content-type': 'image/webp', 'cache-control': 'private, no-store' },
        }),
      {
        admin: true,
        params: BlockIdParams,
        // Answered as a Response (WebP bytes), which Elysia does not validate: the schema is for the OpenAPI document.
        response: {
          200: t.String({ format: 'binary', description: 'The removed image’s thumbnail (WebP)' }),
          ...errors(400, 401, 403, 404),
        },
        detail: { tags: ['Admin'], summary: 'The thumbnail kept with a block (WebP)' },
      },
    )
    .post('/images/:id/block', ({ params, body }) => blocks.blockImage(images, params.id, body), {
      admin: true,
      params: ImageIdParams,
      body: BlockImageBody,
      response: { 200: BlockResponse, ...errors(400, 401, 403, 404) },
      detail: {
        tags: ['Admin'],
        summary: 'Delete an image and block it from coming back',
        description: `Deletes the image with its files and adds its perceptual hash and SHA-256 to the blocklist. ${MATCHING}`,
      },
    })
}
