import { Elysia } from 'elysia'
import type { Config } from '../../config'
import { badRequest, unauthorized } from '../../errors'
import { type authGuard, type Callers, security } from '../../http/auth'
import { CHEVERETO_PATH, readCapped } from '../../http/body-limit'
import { jsonResponse, knownAnswer, NOSNIFF } from '../../http/errors'
import { base64Bound, type MultipartLimits, receiveMultipart, type UploadSource } from '../../http/multipart'
import { rateLimitHeaders } from '../../http/rate-limit'
import type { ImageService } from '../images/service'
import type { UploadPipeline } from '../images/upload'
import { CheveretoError, type CheveretoFormat, CheveretoQuery, CheveretoSuccess, cheveretoBody } from './model'
import { cheveretoError, cheveretoImage, cheveretoSuccess, resolveSource, SOURCE_FIELD } from './service'

/**
 * The bound of a urlencoded body, read whole before its key is known: base64 of the largest file an account may send
 * (MAX_FILE_SIZE; admins too: larger files go as a file part), percent-encoding of `+` and `/` (~6%), other fields.
 */
const formBound = (maxFileSize: number) => Math.ceil(base64Bound(maxFileSize) * 1.125) + 64 * 1024

/**
 * Chevereto's API v1 (`POST /api/1/upload`): another door to the upload pipeline, with the limits, policies, scan,
 * metrics and webhooks of `/api/v1/upload`, answered in Chevereto's shapes for the clients that speak it.
 */
export function cheveretoModule(deps: {
  config: Config
  images: ImageService
  pipeline: UploadPipeline
  auth: Pick<Callers, 'keyUser'>
  guard: ReturnType<typeof authGuard>
}) {
  const { images, pipeline, auth } = deps
  const maxFormBytes = formBound(deps.config.limits.user.maxFileSize)

  async function upload(request: Request, query: Record<string, string | undefined>, ip: string) {
    // The key as the guard reads it (X-API-Key), or as Chevereto's clients send it: ?key= or a `key` field.
    const optionsFor = async (secret: string | undefined) => {
      if (!secret) throw unauthorized('Missing API key: send it as the key field (before source), ?key= or X-API-Key')
      return pipeline.optionsFor('api', { user: await auth.keyUser(secret), ip })
    }
    const upfront = request.headers.get('x-api-key') || query.key
    const choose = upfront ? await optionsFor(upfront) : (fields: Record<string, string>) => optionsFor(fields.key)
    let format = 'json' as CheveretoFormat
    const type = (request.headers.get('content-type') ?? '').toLowerCase()

    const multipart: UploadSource = async (limitsFor) => {
      let limits: MultipartLimits | undefined
      const received = await receiveMultipart(
        request,
        async (fields) => {
          limits = { ...(await limitsFor(fields)), maxFiles: 1 }
          return limits
        },
        { fileField: SOURCE_FIELD, textAsFile: true },
      )
      const source = await resolveSource(received, undefined, limits!, query, deps.config.urlUploads)
      format = source.format
      return source
    }
    const urlencoded: UploadSource = async (limitsFor) => {
      const fields = Object.fromEntries(new URLSearchParams((await readCapped(request, maxFormBytes)).toString('utf8')))
      const source = await resolveSource(
        { files: [], fields },
        fields.source,
        await limitsFor(fields),
        query,
        deps.config.urlUploads,
      )
      format = source.format
      return source
    }
    const receive = type.startsWith('multipart/form-data')
      ? multipart
      : type.startsWith('application/x-www-form-urlencoded')
        ? urlencoded
        : null
    if (!receive) {
      // The key is checked first, as on every keyed route.
      if (!upfront) await optionsFor(undefined)
      throw badRequest('Expected a multipart/form-data or application/x-www-form-urlencoded body')
    }
    const result = await pipeline.upload(receive, choose)
    const image = result.rows[0]
    const headers = { ...rateLimitHeaders(result.window), ...NOSNIFF }
    const links = images.fields(image)
    if (format === 'txt')
      return new Response(links.url, { headers: { ...headers, 'content-type': 'text/plain; charset=utf-8' } })
    if (format === 'redirect')
      return new Response(null, { status: 303, headers: { ...headers, location: links.viewer } })
    return jsonResponse(cheveretoSuccess(cheveretoImage(images, image, result.views[0].deletePage)), 200, headers)
  }

  return new Elysia({ name: 'module-chevereto' }).use(deps.guard).post(
    CHEVERETO_PATH,
    async ({ request, query, clientIp }) => {
      try {
        return await upload(request, query, clientIp)
      } catch (error) {
        const known = knownAnswer(error)
        if (!known) throw error
        return jsonResponse(cheveretoError(known), known.status, known.headers)
      }
    },
    {
      parse: 'none',
      query: CheveretoQuery,
      response: Object.fromEntries([
        [200, CheveretoSuccess],
        ...[400, 401, 403, 413, 429].map((status) => [status, CheveretoError]),
      ]),
      detail: {
        tags: ['Chevereto API'],
        summary: 'Upload one image, Chevereto API v1 style (ShareX, PicGo and other Chevereto clients)',
        description:
          'The key as the `key` field, `?key=` or `X-API-Key`; the image in `source` as a file or base64. Same limits, ' +
          'scan and webhooks as POST /api/v1/upload. Errors are `{ status_code, error: { message, code }, status_txt }`.',
        security: [...security.apiKey, { apiKeyQuery: [] }] as unknown as Record<string, string[]>[],
        requestBody: cheveretoBody as never,
      },
    },
  )
}
