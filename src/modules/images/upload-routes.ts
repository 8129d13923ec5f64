import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { UPLOAD_PATHS } from '../../http/body-limit'
import { errors } from '../../http/errors'
import { receiveMultipart, type UploadSource } from '../../http/multipart'
import { rateLimitHeaders } from '../../http/rate-limit'
import { MAX_REDIRECTS } from '../../net/fetch-url'
import { EXPIRES_DESCRIPTION, UploadResponse } from './model'
import type { UploadCaller, UploadEndpoint, UploadPipeline } from './upload'

/** The multipart body as OpenAPI sees it; the body itself is streamed by the pipeline, not parsed by the framework. */
function multipartBody(extra: Record<string, object> = {}, required = ['file']) {
  return {
    required: true,
    content: {
      'multipart/form-data': {
        schema: {
          type: 'object',
          required,
          properties: {
            file: {
              type: 'array',
              items: { type: 'string', format: 'binary' },
              description: 'One or more image files (repeat the field)',
            },
            visibility: { type: 'string', enum: ['public', 'private'], default: 'public' },
            private: { type: 'string', description: 'true, 1, yes or on: shorthand for visibility=private' },
            nsfw: { type: 'string', description: '"true" flags the upload as NSFW' },
            album: { type: 'string', description: 'Album id, or a folder name created on first use' },
            folder: { type: 'string', description: 'Alias of album' },
            expires: { type: 'string', description: EXPIRES_DESCRIPTION, examples: ['PT10M', 'P7D', 'P1DT2H', '3600'] },
            ...extra,
          },
        },
      },
    },
  }
}

/** The multipart uploads: with an API key, and the website's (anonymous or with a session). */
export function uploadRoutes(pipeline: UploadPipeline, guard: ReturnType<typeof authGuard>) {
  /** Streams the request's files into the pipeline and answers 201: one file a flat object, several `{ success, images }`. */
  async function upload(
    request: Request,
    endpoint: UploadEndpoint,
    caller: UploadCaller,
    set: { status?: number | string; headers: Record<string, unknown> },
  ) {
    const receive: UploadSource = (limits) => receiveMultipart(request, limits)
    // Only the API takes `url` fields: the web page uploads files.
    const result = await pipeline.upload(
      endpoint === 'api' ? pipeline.withUrls(receive) : receive,
      pipeline.optionsFor(endpoint, caller),
    )
    set.status = 201
    Object.assign(set.headers, rateLimitHeaders(result.window))
    return result.body
  }
  const uploadRoute = { parse: 'none' as const, response: { 201: UploadResponse, ...errors(400, 401, 403, 413, 429) } }

  return new Elysia({ name: 'module-images-upload' })
    .use(guard)
    .post(UPLOAD_PATHS.api, ({ request, user, clientIp, set }) => upload(request, 'api', { user, ip: clientIp }, set), {
      ...uploadRoute,
      apiKey: true,
      detail: {
        tags: ['Images'],
        summary: 'Upload one or more images with an API key',
        requestBody: multipartBody(
          {
            url: {
              type: 'array',
              items: { type: 'string', format: 'uri' },
              description:
                'One or more http(s) URLs of images to fetch and store (repeat the field), counted with the files against the per-upload count, each under the per-file size limit, stored after the files.' +
                ` Private, loopback and link-local addresses are refused (unless URL_UPLOAD_ALLOW_PRIVATE), at most ${MAX_REDIRECTS} redirects, URL_UPLOAD_TIMEOUT_MS per URL; a URL that fails is a 400 that says why.`,
            },
          },
          [],
        ) as never,
      },
    })
    .post(UPLOAD_PATHS.web, ({ request, user, clientIp, set }) => upload(request, 'web', { user, ip: clientIp }, set), {
      ...uploadRoute,
      optionalSession: true,
      detail: {
        tags: ['Images'],
        summary: 'Web upload: anonymous or with a JWT; every image is scanned for mature content',
        requestBody: multipartBody({
          expires: {
            type: 'string',
            description:
              EXPIRES_DESCRIPTION +
              ' Anonymous uploads that give none expire after ANON_DEFAULT_EXPIRY seconds when it is set (never by default), and may not ask for longer.',
            examples: ['PT10M', 'P7D', 'P1DT2H', '3600'],
          },
        }) as never,
      },
    })
}
