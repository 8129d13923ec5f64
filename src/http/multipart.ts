import { type FileHandle, open, rm } from 'node:fs/promises'
import Busboy, { type BusboyInstance } from '@fastify/busboy'
import { badRequest, DomainError, tooLarge } from '../errors'
import { INTERRUPTED, readChunk } from '../lib/read-chunk'
import { type ReceivedFile, tempUploadPath } from '../lib/received-file'
import { sizeText } from '../lib/size'
import { batchedAppend } from '../lib/write-all'

// The files every door hands the pipeline, declared in src/lib so a URL fetch (src/net) needs no HTTP code.
export { type ReceivedFile, tempUploadPath } from '../lib/received-file'

/** The longest file name kept (longer client names are cut; a rename is held to it too). */
export const FILENAME_MAX = 255

export interface ReceivedUpload {
  files: ReceivedFile[]
  /** Each field's value (the last one when a field is sent more than once). */
  fields: Record<string, string>
  /** Every value of each field, in the order sent, where a door keeps repeated fields (multipart: `url`). */
  values?: Record<string, string[]>
}

export interface MultipartLimits {
  tmpDir: string
  maxFiles: number
  /** null: no per-file limit. */
  maxFileSize: number | null
}

/**
 * The limits of an upload, asked for once, before the first file is written (or at the end of a body with none), with
 * the fields read so far: a door that names its caller in the body (Chevereto's `key` field) decides them there (an
 * API key looked up: the body is not read further until they are known).
 */
export type LimitsFor = (fields: Record<string, string>) => MultipartLimits | Promise<MultipartLimits>

/**
 * An upload's files and fields as the pipeline takes them: read only when asked (once the upload is let in), streamed
 * to temp files under the limits of its policy. A multipart door hands over `(limits) => receiveMultipart(request, limits)`.
 */
export type UploadSource = (limitsFor: LimitsFor) => Promise<ReceivedUpload>

export interface MultipartOptions {
  /** The one field name a file may come in; a file part under any other name is refused. Unset: any name. */
  fileField?: string
  /** A text part named `fileField` is received like a file too (base64 or a link, for the door to read). */
  textAsFile?: boolean
}

const MAX_FIELD_BYTES = 4096
const MAX_FIELDS = 32

export const tooManyFiles = (maxFiles: number) => badRequest(`Too many files: at most ${maxFiles} per upload`)
/** The refusal of a file past the per-file limit of its policy (413), for every way files arrive. */
export const fileTooLarge = (maxFileSize: number) =>
  tooLarge(`File too large: at most ${sizeText(maxFileSize)} per file`)
/**
 * The most characters a file of `bytes` takes as base64 text: 4 per 3 bytes, plus room for a data-URL prefix and line
 * breaks (MIME wraps at 76 characters).
 */
export const base64Bound = (bytes: number) => Math.ceil(bytes / 3) * 4 + Math.ceil(bytes / 32) + 1024

/**
 * A file part's name as the user named it. Browsers (the HTML standard) and curl send a `"` in a quoted filename as
 * %22 and nothing else percent-encoded (a `%` goes as it is), so %22 is the one sequence to decode; RFC 5987's
 * `filename*=UTF-8''...` form arrives decoded by the parser. CR and LF (sent as %0D, %0A) stay encoded: a name
 * is one line wherever it is shown.
 */
const sentFilename = (filename: string) => filename.replace(/%22/gi, '"')

/** Removes the temp files of an upload; safe to call twice. */
export async function discardFiles(files: ReceivedFile[]) {
  await Promise.all(files.map((f) => rm(f.path, { force: true })))
}

/** Closes every file's handle; a close (or an open) that fails fails the upload. */
const closeAll = (sinks: { handle: Promise<FileHandle> }[], fail: (error: Error) => void) =>
  Promise.all(
    sinks.map((s) =>
      s.handle.then(
        (h) => h.close().catch((error: Error) => fail(error)),
        (error: Error) => fail(error),
      ),
    ),
  )

/** busboy over the request's multipart body (a 400 if it is none), file parts told from fields as the door says. */
function multipartParser(request: Request, options: MultipartOptions) {
  const fileField = options.fileField ?? 'file'
  const contentType = request.headers.get('content-type') ?? ''
  const body = request.body
  if (!contentType.toLowerCase().startsWith('multipart/form-data') || !body) {
    throw badRequest(`Expected a multipart/form-data body with one or more \`${fileField}\` fields`)
  }
  const isPartAFile = (name: string | undefined, type: string | undefined, filename: string | undefined) =>
    filename !== undefined ||
    type === 'application/octet-stream' ||
    (options.textAsFile === true && name === options.fileField)
  try {
    const parser: BusboyInstance = new Busboy({
      headers: { 'content-type': contentType },
      // No file count here: the limits may depend on the fields; files past them are refused as they arrive.
      limits: { fieldSize: MAX_FIELD_BYTES, fields: MAX_FIELDS },
      isPartAFile,
    })
    return { parser, body }
  } catch {
    throw badRequest('Malformed multipart body')
  }
}

/** A file part on its way to disk: its handle, its writes so far (in order) and the end of its part. */
interface Sink {
  handle: Promise<FileHandle>
  file: ReturnType<typeof batchedAppend>
  ended: Promise<void>
}

/**
 * A file part's bytes to its temp file: counted against `maxSize` (413 past it, naming `perFile`), hashed, and
 * written a megabyte at a time. Once the upload has failed, nothing more is written: its files are closed and removed.
 */
function sinkFile(
  file: ReceivedFile,
  stream: NodeJS.ReadableStream,
  { maxSize, perFile }: { maxSize: number | null; perFile: number | null },
  upload: { failed(): boolean; fail(error: Error): void },
): Sink {
  const hash = new Bun.CryptoHasher('sha256')
  const handle = open(file.path, 'w')
  const sink = { handle, file: batchedAppend(handle), ended: new Promise<void>((r) => stream.on('end', r)) }
  stream.on('data', (chunk: Buffer) => {
    if (upload.failed()) return
    file.size += chunk.length
    if (maxSize !== null && file.size > maxSize) return upload.fail(fileTooLarge(perFile!))
    hash.update(chunk)
    sink.file.add(chunk)
  })
  stream.on('end', () => {
    file.sha256 = hash.digest('hex')
    if (!upload.failed()) sink.file.end()
  })
  stream.on('error', (error) => upload.fail(badRequest(`Upload interrupted: ${error.message}`)))
  return sink
}

/**
 * Streams a multipart body to temp files (never holding a whole file in memory), hashing as it goes.
 * Stops reading as soon as a limit is passed: too many files is 400, a file over the size limit 413.
 *
 * The body's chunks go from its reader straight into the parser, and each file's bytes to its file handle, a megabyte
 * a write (batchedAppend); the next chunk is read once what was handed to the disk is written (the back-pressure). A
 * Node stream adapter around the body and a write stream per file cost a third of the receiving (bench/README.md,
 * "Where an upload's time goes").
 */
export async function receiveMultipart(
  request: Request,
  limitsFor: LimitsFor,
  options: MultipartOptions = {},
): Promise<ReceivedUpload> {
  const fileField = options.fileField ?? 'file'
  const { parser, body } = multipartParser(request, options)

  const files: ReceivedFile[] = []
  const fields: Record<string, string> = {}
  const values: Record<string, string[]> = {}
  const sinks: Sink[] = []
  let failed: Error | null = null
  const fail = (error: Error) => {
    failed ??= error
  }
  let decided: MultipartLimits | Promise<MultipartLimits> | null = null
  const limits = () => {
    decided ??= limitsFor(fields)
    return decided
  }
  /** While the limits are being decided: the body is not fed to the parser again until they are. */
  let deciding: Promise<void> | null = null

  parser.on('file', (field, stream, filename) => {
    if (failed) return void stream.resume()
    if (options.fileField !== undefined && field !== options.fileField) {
      stream.resume()
      return fail(badRequest(`Unexpected file field ${field.slice(0, 64)}: send the file as \`${fileField}\``))
    }
    let current: MultipartLimits | Promise<MultipartLimits>
    try {
      current = limits()
    } catch (error) {
      stream.resume()
      return fail(error as Error)
    }
    if (current instanceof Promise) {
      // The part's bytes wait in its stream (paused) until the limits are known.
      stream.pause()
      deciding = current.then(
        (known) => {
          decided = known
          receiveFile(known, stream, filename)
          stream.resume()
        },
        (error: Error) => {
          stream.resume()
          fail(error)
        },
      )
      return
    }
    receiveFile(current, stream, filename)
  })

  function receiveFile(current: MultipartLimits, stream: NodeJS.ReadableStream, filename: string | undefined) {
    if (failed) return void stream.resume()
    if (files.length >= current.maxFiles) {
      stream.resume()
      return fail(tooManyFiles(current.maxFiles))
    }
    const text = filename === undefined && options.textAsFile === true
    // A text part holds base64 (or a link): bounded by what the largest allowed file takes as base64.
    const perFile = current.maxFileSize
    const maxSize = perFile === null ? null : text ? base64Bound(perFile) : perFile
    const file: ReceivedFile = {
      path: tempUploadPath(current.tmpDir),
      filename: (sentFilename(filename ?? '') || 'image').slice(0, FILENAME_MAX),
      size: 0,
      sha256: '',
      ...(text ? { text } : {}),
    }
    files.push(file)
    sinks.push(sinkFile(file, stream, { maxSize, perFile }, { failed: () => failed !== null, fail }))
  }
  parser.on('field', (name, value, _nameTruncated, valueTruncated) => {
    if (valueTruncated) return fail(badRequest(`Field ${name} is too long`))
    fields[name] = value
    values[name] = [...(values[name] ?? []), value]
  })
  parser.on('fieldsLimit', () => fail(badRequest('Too many form fields')))
  const parsed = new Promise<void>((resolve) => {
    parser.on('finish', resolve)
    parser.on('error', (error: Error) => {
      fail(error instanceof DomainError ? error : badRequest('Malformed multipart body'))
      resolve()
    })
  })
  /** Waits for every write issued so far; a failed one (a full disk) fails the upload as it is. */
  const flushed = () => Promise.all(sinks.map((s) => s.file.written.catch((error: Error) => fail(error))))

  const reader = body.getReader()
  try {
    for (;;) {
      const chunk = await readChunk(reader)
      if (chunk === INTERRUPTED) {
        fail(badRequest('Upload interrupted'))
        break
      }
      if (chunk === null) {
        parser.end()
        await parsed
        break
      }
      parser.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
      if (deciding) {
        await deciding
        deciding = null
      }
      await flushed()
      if (failed) break
    }
    // The parser may finish before the last part's end reaches its listeners (which digest the hash).
    if (!failed) await Promise.all(sinks.map((s) => s.ended))
    // A body with no file still has its limits decided: the caller is checked (and admitted) either way.
    if (!failed) {
      try {
        await limits()
      } catch (error) {
        fail(error as Error)
      }
    }
  } finally {
    if (failed) reader.cancel().catch(() => {})
    // Every file closed before any is removed; a close can still report a failed write.
    await flushed()
    await closeAll(sinks, fail)
  }
  if (failed) {
    await discardFiles(files)
    throw failed
  }
  return { files, fields, values }
}
