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
}

export interface ReceivedUpload {
  files: ReceivedFile[]
  /** Each field's value (the last one when a field is sent more than once). */
  fields: Record<string, string>
  /** Every value of each field, in the order sent: for fields that may repeat (`url`). */
  values: Record<string, string[]>
}

export interface MultipartLimits {
  tmpDir: string
  maxFiles: number
  /** null: no per-file limit. */
  maxFileSize: number | null
}

/**
 * An upload's files and fields as the pipeline takes them: read only when asked (once the upload is let in), streamed
 * to temp files under the limits of its policy. A multipart door hands over `(limits) => receiveMultipart(request, limits)`.
 */
export type UploadSource = (limits: MultipartLimits) => Promise<ReceivedUpload>

const MAX_FIELD_BYTES = 4096
const MAX_FIELDS = 32

/** A fresh temp file name in `tmpDir` for one received file, whichever way it came (a multipart part, a URL). */
export const tempUploadPath = (tmpDir: string) => join(tmpDir, `upload-${newPublicId()}${newPublicId()}`)

export const tooManyFiles = (maxFiles: number) => badRequest(`Too many files: at most ${maxFiles} per upload`)
/** The refusal of a file past the per-file limit of its policy (413), for every way files arrive. */
export const fileTooLarge = (maxFileSize: number) => tooLarge(`File too large: at most ${maxFileSize} bytes per file`)

/** Removes the temp files of an upload; safe to call twice. */
export async function discardFiles(files: ReceivedFile[]) {
  await Promise.all(files.map((f) => rm(f.path, { force: true })))
}

/**
 * Streams a multipart body to temp files (never holding a whole file in memory), hashing as it goes.
 * Stops reading as soon as a limit is passed: too many files is 400, a file over the size limit 413.
 */
export function receiveMultipart(request: Request, limits: MultipartLimits): Promise<ReceivedUpload> {
  const contentType = request.headers.get('content-type') ?? ''
  if (!contentType.toLowerCase().startsWith('multipart/form-data') || !request.body) {
    return Promise.reject(badRequest('Expected a multipart/form-data body with one or more `file` fields'))
  }

  return new Promise<ReceivedUpload>((resolve, reject) => {
    const files: ReceivedFile[] = []
    const fields: Record<string, string> = {}
    const values: Record<string, string[]> = {}
    const writes: Promise<void>[] = []
    const outputs: WriteStream[] = []
    let failed: Error | null = null
    let parser: BusboyInstance

    try {
      parser = new Busboy({
        headers: { 'content-type': contentType },
        limits: { fieldSize: MAX_FIELD_BYTES, fields: MAX_FIELDS, files: limits.maxFiles + 1 },
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

    parser.on('file', (_field, stream, filename) => {
      if (failed) return void stream.resume()
      if (files.length >= limits.maxFiles) {
        stream.resume()
        return fail(tooManyFiles(limits.maxFiles))
      }
      const file: ReceivedFile = {
        path: tempUploadPath(limits.tmpDir),
        filename: (filename || 'image').slice(0, 255),
        size: 0,
        sha256: '',
      }
      files.push(file)
      const hash = new Bun.CryptoHasher('sha256')
      const out = createWriteStream(file.path)
      outputs.push(out)
      writes.push(
        new Promise<void>((done) => {
          stream.on('data', (chunk: Buffer) => {
            file.size += chunk.length
            if (limits.maxFileSize !== null && file.size > limits.maxFileSize) {
              stream.resume()
              fail(fileTooLarge(limits.maxFileSize))
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
      Promise.all(writes).then(() => (failed ? undefined : resolve({ files, fields, values })))
    })
    source.on('error', () => fail(badRequest('Upload interrupted')))
    source.pipe(parser)
  })
}
