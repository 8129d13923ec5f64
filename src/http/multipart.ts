import { createWriteStream, type WriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import Busboy, { type BusboyInstance } from '@fastify/busboy'
import { badRequest, DomainError, tooLarge } from '../errors'
import { newPublicId } from '../lib/crypto'

export interface ReceivedFile {
  /** Temporary file holding the uploaded bytes. */
  path: string
  /** Client-supplied name, untrusted: only ever shown escaped. */
  filename: string
  size: number
  sha256: string
  /** A text part received like a file (MultipartOptions.textAsFile): its bytes are text for the door to read. */
  text?: boolean
}

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
 * the fields read so far: a door that names its caller in the body (Chevereto's `key` field) decides them there.
 */
export type LimitsFor = (fields: Record<string, string>) => MultipartLimits

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

/** A fresh temp file name in `tmpDir` for one received file, whichever way it came (a multipart part, a URL). */
export const tempUploadPath = (tmpDir: string) => join(tmpDir, `upload-${newPublicId()}${newPublicId()}`)

export const tooManyFiles = (maxFiles: number) => badRequest(`Too many files: at most ${maxFiles} per upload`)
/** The refusal of a file past the per-file limit of its policy (413), for every way files arrive. */
export const fileTooLarge = (maxFileSize: number) => tooLarge(`File too large: at most ${maxFileSize} bytes per file`)
/**
 * The most characters a file of `bytes` takes as base64 text: 4 per 3 bytes, plus room for a data-URL prefix and line
 * breaks (MIME wraps at 76 characters).
 */
export const base64Bound = (bytes: number) => Math.ceil(bytes / 3) * 4 + Math.ceil(bytes / 32) + 1024

/** Removes the temp files of an upload; safe to call twice. */
export async function discardFiles(files: ReceivedFile[]) {
  await Promise.all(files.map((f) => rm(f.path, { force: true })))
}

/**
 * Streams a multipart body to temp files (never holding a whole file in memory), hashing as it goes.
 * Stops reading as soon as a limit is passed: too many files is 400, a file over the size limit 413.
 */
export function receiveMultipart(
  request: Request,
  limitsFor: LimitsFor,
  options: MultipartOptions = {},
): Promise<ReceivedUpload> {
  const contentType = request.headers.get('content-type') ?? ''
  const fileField = options.fileField ?? 'file'
  if (!contentType.toLowerCase().startsWith('multipart/form-data') || !request.body) {
    return Promise.reject(badRequest(`Expected a multipart/form-data body with one or more \`${fileField}\` fields`))
  }

  return new Promise<ReceivedUpload>((resolve, reject) => {
    const files: ReceivedFile[] = []
    const fields: Record<string, string> = {}
    const values: Record<string, string[]> = {}
    const writes: Promise<void>[] = []
    const outputs: WriteStream[] = []
    let failed: Error | null = null
    let parser: BusboyInstance
    let decided: MultipartLimits | null = null
    const limits = () => {
      decided ??= limitsFor(fields)
      return decided
    }
    const isPartAFile = (name: string | undefined, type: string | undefined, filename: string | undefined) =>
      filename !== undefined ||
      type === 'application/octet-stream' ||
      (options.textAsFile === true && name === options.fileField)

    try {
      parser = new Busboy({
        headers: { 'content-type': contentType },
        // No file count here: the limits may depend on the fields; files past them are refused as they arrive.
        limits: { fieldSize: MAX_FIELD_BYTES, fields: MAX_FIELDS },
        isPartAFile,
      })
    } catch {
      reject(badRequest('Malformed multipart body'))
      return
    }
    const source = Readable.fromWeb(request.body as unknown as import('node:stream/web').ReadableStream)

    const fail = (error: Error) => {
      if (failed) return
      failed = error
      source.unpipe(parser)
      source.destroy()
      // Close every temp file (a destroyed stream still emits 'close'), then remove them all.
      const closed = outputs.map((out) => (out.closed ? Promise.resolve() : new Promise((r) => out.once('close', r))))
      for (const out of outputs) out.destroy()
      void Promise.all(closed)
        .then(() => discardFiles(files))
        .then(() => reject(error))
    }

    parser.on('file', (field, stream, filename) => {
      if (failed) return void stream.resume()
      if (options.fileField !== undefined && field !== options.fileField) {
        stream.resume()
        return fail(badRequest(`Unexpected file field ${field.slice(0, 64)}: send the file as \`${fileField}\``))
      }
      let current: MultipartLimits
      try {
        current = limits()
      } catch (error) {
        stream.resume()
        return fail(error as Error)
      }
      if (files.length >= current.maxFiles) {
        stream.resume()
        return fail(tooManyFiles(current.maxFiles))
      }
      const text = filename === undefined && options.textAsFile === true
      // A text part holds base64 (or a link): bounded by what the largest allowed file takes as base64.
      const maxSize =
        current.maxFileSize === null ? null : text ? base64Bound(current.maxFileSize) : current.maxFileSize
      const file: ReceivedFile = {
        path: tempUploadPath(current.tmpDir),
        filename: (filename || 'image').slice(0, 255),
        size: 0,
        sha256: '',
        ...(text ? { text } : {}),
      }
      files.push(file)
      const hash = new Bun.CryptoHasher('sha256')
      const out = createWriteStream(file.path)
      outputs.push(out)
      writes.push(
        new Promise<void>((done) => {
          stream.on('data', (chunk: Buffer) => {
            file.size += chunk.length
            if (maxSize !== null && file.size > maxSize) {
              stream.resume()
              fail(fileTooLarge(current.maxFileSize!))
              return
            }
            hash.update(chunk)
            if (!out.write(chunk)) {
              stream.pause()
              out.once('drain', () => stream.resume())
            }
          })
          stream.on('end', () => {
            file.sha256 = hash.digest('hex')
            out.end()
          })
          // Done once the file is closed, not at end()'s callback: Bun calls that even when the last writes failed
          // (a full disk), and only then emits 'error', which fails the upload before this resolves.
          out.on('close', () => done())
          stream.on('error', (error) => {
            out.destroy()
            fail(badRequest(`Upload interrupted: ${error.message}`))
            done()
          })
          out.on('error', (error) => {
            fail(error)
            done()
          })
        }),
      )
    })
    parser.on('field', (name, value, _nameTruncated, valueTruncated) => {
      if (valueTruncated) return fail(badRequest(`Field ${name} is too long`))
      fields[name] = value
      values[name] = [...(values[name] ?? []), value]
    })
    parser.on('fieldsLimit', () => fail(badRequest('Too many form fields')))
    parser.on('error', (error: Error) =>
      fail(error instanceof DomainError ? error : badRequest('Malformed multipart body')),
    )
    parser.on('finish', () => {
      if (failed) return
      // A body with no file still has its limits decided: the caller is checked (and admitted) either way.
      try {
        limits()
      } catch (error) {
        return fail(error as Error)
      }
      Promise.all(writes).then(() => (failed ? undefined : resolve({ files, fields, values })))
    })
    source.on('error', () => fail(badRequest('Upload interrupted')))
    source.pipe(parser)
  })
}
