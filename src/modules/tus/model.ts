import { t } from 'elysia'
import { errorResponses, jsonContent as json } from '../../http/errors'
import { UploadResponse } from '../images/model'

export const TUS_VERSION = '1.0.0'
export const TUS_EXTENSIONS = 'creation,termination,expiration'

/** Upload ids: 32 random characters of [A-Za-z0-9] (the service makes and checks them; the document shows the form). */
export const TUS_ID_LENGTH = 32
export const TUS_ID_PATTERN = `[A-Za-z0-9]{${TUS_ID_LENGTH}}`

export const TusIdParams = t.Object({ id: t.String({ description: 'Upload id (from the Location of the creation)' }) })

/** The tus routes answer with headers (and no body) as the protocol says; this is their OpenAPI description. */
const header = (description: string, type: 'string' | 'integer' = 'string') => ({ description, schema: { type } })

const common = {
  'Tus-Resumable': header('Always 1.0.0'),
}
const state = {
  ...common,
  'Upload-Offset': header('Bytes received so far', 'integer'),
  'Upload-Expires': header('When an unfinished upload is removed (RFC 7231 date)'),
}

export const tusDocs = {
  create: (auth: string) => ({
    summary: `Create a resumable (tus 1.0) upload (${auth})`,
    description:
      'tus 1.0 with the creation, termination and expiration extensions (OPTIONS lists them with Tus-Max-Size). Headers: ' +
      '`Tus-Resumable: 1.0.0`, `Upload-Length` (bytes; over the per-file limit: 413; also checked: storage quota 413, rate ' +
      'window 429), optional `Upload-Metadata` (`filename`, and the upload fields `visibility`, `private`, `nsfw`, `album`/`folder`, ' +
      '`expires`, base64 values). Answers 201 with `Location`. Then `HEAD` the location for the offset, `PATCH` it with ' +
      '`Content-Type: application/offset+octet-stream` and `Upload-Offset`; the last PATCH answers 200 with the same body as ' +
      'a multipart upload, and `GET` on the location returns it again until the upload expires (24 hours after creation).',
    responses: {
      '201': { description: 'Created', headers: { ...state, Location: header('The upload URL') } },
      ...errorResponses(400, 401, 403, 412, 413, 429),
    },
  }),
  head: {
    summary: 'Offset of a resumable upload (tus)',
    responses: {
      '200': {
        description: 'The upload state, in headers only',
        headers: {
          ...state,
          'Upload-Length': header('Total bytes', 'integer'),
          'Upload-Metadata': header('As sent at creation'),
        },
      },
      ...errorResponses(401, 403, 404, 410, 412),
    },
  },
  patch: {
    summary: 'Append a chunk to a resumable upload (tus)',
    requestBody: {
      required: true,
      content: { 'application/offset+octet-stream': { schema: { type: 'string', format: 'binary' } } },
    },
    responses: {
      '200': {
        description: 'The last chunk: the upload answer (as POST /api/v1/upload)',
        headers: state,
        content: json(UploadResponse),
      },
      '204': { description: 'Chunk stored', headers: state },
      ...errorResponses(400, 401, 403, 404, 409, 410, 412, 413, 415, 423, 429),
    },
  },
  terminate: {
    summary: 'Terminate a resumable upload (tus termination)',
    responses: { '204': { description: 'Removed', headers: common }, ...errorResponses(401, 403, 404, 410, 412, 423) },
  },
  result: {
    summary: 'The answer of a finished resumable upload (as the last PATCH); 409 while unfinished',
    responses: {
      '200': { description: 'As POST /api/v1/upload', content: json(UploadResponse) },
      ...errorResponses(400, 401, 403, 404, 409, 410, 413, 429),
    },
  },
}
