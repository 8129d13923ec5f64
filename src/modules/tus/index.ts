import { Elysia } from 'elysia'
import type { Config } from '../../config'
import type { TusUpload, User } from '../../db/schema'
import { badRequest } from '../../errors'
import type { authGuard } from '../../http/auth'
import { HttpError, INTERNAL_ERROR, jsonResponse, knownAnswer } from '../../http/errors'
import { rateLimitHeaders } from '../../http/rate-limit'
import { log } from '../../log'
import { TUS_EXTENSIONS, TUS_VERSION, TusIdParams, tusDocs } from './model'
import type { TusAnswer, TusCaller, TusEndpoint, TusService } from './service'

const OFFSET_STREAM = 'application/offset+octet-stream'
const DIGITS = /^\d+$/

/** A header that must be a non-negative integer; 400 otherwise (absent: null). */
function integerHeader(value: string | undefined, name: string): number | null {
  if (value === undefined) return null
  if (!DIGITS.test(value.trim())) throw badRequest(`${name} must be a non-negative integer`)
  const n = Number(value.trim())
  if (!Number.isSafeInteger(n)) throw badRequest(`${name} is too large`)
  return n
}

function requireTusResumable(headers: Record<string, string | undefined>) {
  if (headers['tus-resumable'] !== TUS_VERSION) {
    throw new HttpError(
      412,
      `Unsupported tus version: send Tus-Resumable: ${TUS_VERSION}`,
      {},
      { 'Tus-Version': TUS_VERSION },
    )
  }
}

/** The guard's `user` (the auth option is chosen per endpoint, which hides it from the handler's inferred type). */
const userOf = (ctx: object) => (ctx as { user?: User | null }).user ?? null

const httpDate = (date: Date) => date.toUTCString()

/** Headers describing an upload's state. */
function stateHeaders(upload: TusUpload): Record<string, string> {
  return {
    'Tus-Resumable': TUS_VERSION,
    'Cache-Control': 'no-store',
    'Upload-Offset': String(upload.offset),
    ...(upload.finishedAt ? {} : { 'Upload-Expires': httpDate(upload.expiresAt) }),
  }
}

/**
 * A finished upload's answer, kept for the last PATCH and GET: the pipeline's body with its window's headers, or the
 * refusal or fault as the error model would answer it; anything else a 500.
 */
export const finishedAnswer: TusAnswer = (id, outcome) => {
  if ('stored' in outcome) {
    return { status: 200, body: outcome.stored.body, headers: rateLimitHeaders(outcome.stored.window) }
  }
  const known = knownAnswer(outcome.error)
  if (known) return { status: known.status, body: { error: known.message, ...known.extra }, headers: known.headers }
  const { error } = outcome
  log.error('tus: finishing an upload failed', { id, error: String((error as Error)?.stack ?? error) })
  return { status: 500, body: { ...INTERNAL_ERROR }, headers: {} }
}

/**
 * tus 1.0 resumable uploads (core, creation, termination, expiration) at `/api/v1/tus` (API key) and `/api/tus`
 * (JWT or anonymous). The request bodies are streamed to disk by the service, never parsed by the framework.
 */
export function tusModule(deps: { config: Config; tus: TusService; guard: ReturnType<typeof authGuard> }) {
  const { config, tus } = deps

  function routes(
    prefix: string,
    endpoint: TusEndpoint,
    auth: { apiKey: true } | { optionalSession: true },
    authName: string,
  ) {
    const caller = (user: User | null, ip: string): TusCaller => ({ endpoint, user, ip })
    const uploadUrl = (id: string) => `${config.site.publicUrl}${prefix}/${id}`
    const tags = ['Resumable uploads']

    return new Elysia({ name: `module-tus-${endpoint}` })
      .use(deps.guard)
      .onTransform(({ set }) => {
        // On every answer, errors included.
        set.headers['tus-resumable'] = TUS_VERSION
        set.headers['cache-control'] = 'no-store'
      })
      .options(
        prefix,
        () =>
          new Response(null, {
            status: 204,
            headers: {
              'Tus-Resumable': TUS_VERSION,
              'Tus-Version': TUS_VERSION,
              'Tus-Extension': TUS_EXTENSIONS,
              'Tus-Max-Size': String(tus.maxSize(endpoint)),
            },
          }),
        { detail: { hide: true } },
      )
      .post(
        prefix,
        async (ctx) => {
          const { headers, clientIp } = ctx
          const user = userOf(ctx)
          requireTusResumable(headers)
          if (headers['upload-defer-length'] !== undefined)
            throw badRequest('Upload-Defer-Length is not supported: send Upload-Length')
          const length = integerHeader(headers['upload-length'], 'Upload-Length')
          if (length === null) throw badRequest('Upload-Length is required')
          if ((integerHeader(headers['content-length'], 'Content-Length') ?? 0) > 0) {
            throw badRequest('Send the data with PATCH requests (creation-with-upload is not supported)')
          }
          const upload = await tus.create(caller(user, clientIp), length, headers['upload-metadata'] ?? '')
          return new Response(null, {
            status: 201,
            headers: { ...stateHeaders(upload), Location: uploadUrl(upload.id) },
          })
        },
        { ...auth, parse: 'none', detail: { tags, ...tusDocs.create(authName) } as never },
      )
      .head(
        `${prefix}/:id`,
        async (ctx) => {
          const { params, headers, clientIp } = ctx
          const user = userOf(ctx)
          requireTusResumable(headers)
          const upload = await tus.status(caller(user, clientIp), params.id)
          return new Response(null, {
            status: 200,
            headers: {
              ...stateHeaders(upload),
              'Upload-Length': String(upload.length),
              ...(upload.metadata ? { 'Upload-Metadata': upload.metadata } : {}),
            },
          })
        },
        { ...auth, params: TusIdParams, detail: { tags, ...tusDocs.head } as never },
      )
      .patch(
        `${prefix}/:id`,
        async (ctx) => {
          const { params, headers, request, clientIp } = ctx
          const user = userOf(ctx)
          requireTusResumable(headers)
          if ((headers['content-type'] ?? '').split(';')[0].trim().toLowerCase() !== OFFSET_STREAM) {
            throw new HttpError(415, `Content-Type must be ${OFFSET_STREAM}`)
          }
          const offset = integerHeader(headers['upload-offset'], 'Upload-Offset')
          if (offset === null) throw badRequest('Upload-Offset is required')
          const contentLength = integerHeader(headers['content-length'], 'Content-Length')
          const { upload, result } = await tus.append(
            caller(user, clientIp),
            params.id,
            offset,
            contentLength,
            request.body,
          )
          if (result) return jsonResponse(result.body, result.status, { ...result.headers, ...stateHeaders(upload) })
          return new Response(null, { status: 204, headers: stateHeaders(upload) })
        },
        { ...auth, parse: 'none', params: TusIdParams, detail: { tags, ...tusDocs.patch } as never },
      )
      .delete(
        `${prefix}/:id`,
        async (ctx) => {
          const { params, headers, clientIp } = ctx
          const user = userOf(ctx)
          requireTusResumable(headers)
          await tus.terminate(caller(user, clientIp), params.id)
          return new Response(null, { status: 204, headers: { 'Tus-Resumable': TUS_VERSION } })
        },
        { ...auth, parse: 'none', params: TusIdParams, detail: { tags, ...tusDocs.terminate } as never },
      )
      .get(
        `${prefix}/:id`,
        async (ctx) => {
          const { params, clientIp } = ctx
          const user = userOf(ctx)
          const upload = await tus.status(caller(user, clientIp), params.id)
          const result = await tus.result(caller(user, clientIp), params.id)
          return jsonResponse(result.body, result.status, {
            ...result.headers,
            'Cache-Control': 'no-store',
            'Upload-Offset': String(upload.offset),
          })
        },
        { ...auth, params: TusIdParams, detail: { tags, ...tusDocs.result } as never },
      )
  }

  return new Elysia({ name: 'module-tus' })
    .use(routes('/api/v1/tus', 'api', { apiKey: true }, 'API key'))
    .use(routes('/api/tus', 'web', { optionalSession: true }, 'JWT or anonymous; scanned like POST /api/upload'))
}
