import { Elysia } from 'elysia'
import type { Config } from '../../config'
import { badRequest, unauthorized } from '../../errors'
import { type authGuard, type Callers, security } from '../../http/auth'
import { CHEVERETO_PATH, readCapped } from '../../http/body-limit'
import { jsonResponse, knownAnswer, NOSNIFF } from '../../http/errors'
import {
  base64Bound,
  discardFiles,
  type LimitsFor,
  type MultipartLimits,
  type ReceivedUpload,
  receiveMultipart,
  type UploadSource,
} from '../../http/multipart'
import { rateLimitHeaders } from '../../http/rate-limit'
import type { ImageService } from '../images/service'
import type { UploadPipeline } from '../images/upload'
import {
  CheveretoError,
  type CheveretoFormat,
  CheveretoGetQuery,
  CheveretoQuery,
  CheveretoSuccess,
  cheveretoBody,
} from './model'
import {
  cheveretoError,
  cheveretoImage,
  cheveretoSuccess,
  keyAnywhere,
  keylessReceptions,
  resolveSource,
  SOURCE_FIELD,
} from './service'

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
  /** What every key may send, so a file that comes before the key is received under it (admins: no per-file limit). */
  const strictest: MultipartLimits = {
    tmpDir: deps.config.paths.tmpDir,
    maxFiles: 1,
    maxFileSize: deps.config.limits.user.maxFileSize,
  }
  const keyless = keylessReceptions(deps.config.limits.inFlight.perIp)

  async function upload(request: Request, query: Record<string, string | undefined>, ip: string) {
    // The key as the guard reads it (X-API-Key), or as Chevereto's clients send it: ?key= or a `key` field.
    const optionsFor = async (secret: string | undefined) => {
      if (!secret) throw unauthorized('Missing API key: send it as the key field, ?key= or X-API-Key')
      return pipeline.optionsFor('api', { user: await auth.keyUser(secret), ip })
    }
    const upfront = request.headers.get('x-api-key') || query.key
    const choose = upfront ? await optionsFor(upfront) : (fields: Record<string, string>) => optionsFor(fields.key)
    let format = 'json' as CheveretoFormat
    const type = (request.headers.get('content-type') ?? '').toLowerCase()

    /** A source given as text fields (a urlencoded body, or the query of the GET form): base64 or a link. */
    const fromFields = async (fields: Record<string, string>, limitsFor: LimitsFor) => {
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
    const multipart: UploadSource = async (limitsFor) => {
      let release = () => {}
      const early = keyAnywhere(limitsFor, Boolean(upfront), strictest, () => {
        release = keyless.take(ip)
      })
      let received: ReceivedUpload
      let limits: MultipartLimits
      try {
        received = await receiveMultipart(request, early, { fileField: SOURCE_FIELD, textAsFile: true })
        try {
          // Asked again once the whole form is read: a key sent after the source is known only now.
          limits = { ...(await limitsFor(received.fields)), maxFiles: 1 }
        } catch (error) {
          await discardFiles(received.files)
          throw error
        }
      } finally {
        // Admitted (or refused) by now: the admission's own caps hold it from here.
        release()
      }
      const source = await resolveSource(received, undefined, limits, query, deps.config.urlUploads)
      format = source.format
      return source
    }
    const urlencoded: UploadSource = async (limitsFor) =>
      fromFields(
        Object.fromEntries(new URLSearchParams((await readCapped(request, maxFormBytes)).toString('utf8'))),
        limitsFor,
      )
    // Chevereto's GET form: everything in the query (a link, or short base64, in `source`).
    const fromQuery: UploadSource = async (limitsFor) =>
      fromFields(
        Object.fromEntries(Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined)),
        limitsFor,
      )
    const receive =
      request.method === 'GET'
        ? fromQuery
        : type.startsWith('multipart/form-data')
          ? multipart
          : type.startsWith('application/x-www-form-urlencoded')
            ? urlencoded
            : null
    // A key sent upfront was checked above; one inside a JSON body cannot be read, so the body's type is the answer.
    if (!receive) throw badRequest(notAForm(type))
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

  const answered = async (request: Request, query: Record<string, string | undefined>, ip: string) => {
    try {
      return await upload(request, query, ip)
    } catch (error) {
      const known = knownAnswer(error)
      if (!known) throw error
      return jsonResponse(cheveretoError(known), known.status, known.headers)
    }
  }
  const responses = Object.fromEntries([
    [200, CheveretoSuccess],
    ...[400, 401, 403, 413, 429].map((status) => [status, CheveretoError]),
  ])
  const keySecurity = [...security.apiKey, { apiKeyQuery: [] }] as unknown as Record<string, string[]>[]

  return new Elysia({ name: 'module-chevereto' })
    .use(deps.guard)
    .post(CHEVERETO_PATH, ({ request, query, clientIp }) => answered(request, query, clientIp), {
      parse: 'none',
      query: CheveretoQuery,
      response: responses,
      detail: {
        tags: ['Chevereto API'],
        summary: 'Upload one image, Chevereto API v1 style (ShareX, PicGo and other Chevereto clients)',
        description:
          'The key as the `key` field (anywhere in the form), `?key=` or `X-API-Key`; the image in `source` as a file, ' +
          'base64 or a link. Same limits, scan and webhooks as POST /api/v1/upload. Errors are ' +
          '`{ status_code, error: { message, code }, status_txt }`; a JSON body is a 400.',
        security: keySecurity,
        requestBody: cheveretoBody as never,
      },
    })
    .get(CHEVERETO_PATH, ({ request, query, clientIp }) => answered(request, query, clientIp), {
      query: CheveretoGetQuery,
      response: responses,
      detail: {
        tags: ['Chevereto API'],
        summary: "Upload one image from a link, Chevereto API v1's GET form (also at /api/1/upload/)",
        description:
          'Everything in the query: `?key=...&source=<http(s) link>&format=json`. The link is fetched like a `url` of ' +
          'POST /api/v1/upload (the same address rules, per-file limit and time budget); the answers are those of the POST.',
        security: keySecurity,
      },
    })
}

/** The 400 of a body that is not a form (JSON, text...): Chevereto's API reads form fields only. */
const notAForm = (type: string) =>
  `Expected a multipart/form-data or application/x-www-form-urlencoded body${type ? `, not ${type.split(';')[0]}` : ''}: ` +
  "Chevereto's API reads form fields (key, source, format), not JSON"
