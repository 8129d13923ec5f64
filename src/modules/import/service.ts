import { createReadStream, createWriteStream } from 'node:fs'
import { open, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { basename, join, relative } from 'node:path'
import { pipeline as streamPipeline } from 'node:stream/promises'
import { type Db, run } from '../../db/client'
import type { User } from '../../db/schema'
import { badRequest } from '../../errors'
import { fileTooLarge, type ReceivedFile, tempUploadPath } from '../../http/multipart'
import { DETECT_HEAD_BYTES, detectFormat } from '../../media/detect'
import { ownedImageWithHash } from '../images/repository'
import type { UploadPipeline } from '../images/upload'
import { mapLine } from './model'

/** What the rows of imported images record as the uploader's address, and what the refused-upload windows key on. */
const IMPORT_IP = 'import'
/** As multipart keeps a client's file name. */
const FILENAME_MAX = 255

export interface ImportRequest {
  dir: string
  user: User
  album?: string
  visibility?: string
  dryRun?: boolean
  /** Where to write `old path,new id` lines (model.ts) for every file imported or already there; not on a dry run. */
  mapFile?: string
}

/** What happened to one file: `import` (on a dry run: would be), `duplicate` (already there), `not-image`, `failed`. */
export interface ImportStep {
  path: string
  action: 'import' | 'duplicate' | 'not-image' | 'failed'
  id?: string
  error?: string
}

export interface ImportSummary {
  imported: number
  /** Files already imported for the user (same bytes) and files that are not images. */
  skipped: number
  failed: number
  /** Of `skipped`: files whose bytes are not of an image format the service accepts. */
  notImages: number
  errors: { path: string; error: string }[]
  /** The account is an admin's: no storage quota, upload window or per-file size limit applied. */
  quotaIgnored: boolean
  dryRun: boolean
}

/** Every regular file under `dir`, in name order; symbolic links are not followed (no loops, nothing outside `dir`). */
async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = []
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))
  for (const entry of entries) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) found.push(...(await filesUnder(path)))
    else if (entry.isFile()) found.push(path)
  }
  return found
}

async function isImage(path: string) {
  const handle = await open(path, 'r')
  try {
    const head = new Uint8Array(DETECT_HEAD_BYTES)
    const { bytesRead } = await handle.read(head, 0, head.length, 0)
    return detectFormat(head.subarray(0, bytesRead)) !== null
  } finally {
    await handle.close()
  }
}

/** Reads a file once, hashing it and (when `copyTo` is given) copying it there, refusing past `maxSize` bytes. */
async function hashFile(path: string, maxSize: number | null, copyTo: string | null) {
  const hash = new Bun.CryptoHasher('sha256')
  let size = 0
  async function* hashing(source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      size += chunk.length
      if (maxSize !== null && size > maxSize) throw fileTooLarge(maxSize)
      hash.update(chunk)
      yield chunk
    }
  }
  if (copyTo) await streamPipeline(createReadStream(path), hashing, createWriteStream(copyTo, { flags: 'wx' }))
  else for await (const _ of hashing(createReadStream(path)));
  return { sha256: hash.digest('hex'), size }
}

/**
 * Imports a folder of images into an account (`bun run cli import`): each file on its own through the upload pipeline
 * (policy, scan, metadata, thumbnails, album, quota and window), so a refusal fails that file only. Runs beside a
 * server on the same DATA_DIR: it only inserts rows, which the server reads like its own (no cache holds a miss), and
 * its temp and stored files are younger than the server's orphan sweep spares.
 */
export function createImporter(deps: { db: Db; pipeline: UploadPipeline; tmpDir: string }) {
  const { db, pipeline, tmpDir } = deps

  return async function importFolder(
    request: ImportRequest,
    /** After each file: what happened, how many of how many are done, the counts so far. */
    onStep: (step: ImportStep, done: number, total: number, summary: ImportSummary) => void = () => {},
  ): Promise<ImportSummary> {
    const { dir, user } = request
    const info = await stat(dir).catch(() => null)
    if (!info?.isDirectory()) throw badRequest(`${dir} is not a directory`)
    const fields: Record<string, string> = {}
    if (request.album !== undefined) fields.album = request.album
    if (request.visibility !== undefined) fields.visibility = request.visibility
    const opts = pipeline.optionsFor('api', { user, ip: IMPORT_IP })
    pipeline.checkFields(fields, opts.policy)
    const dryRun = request.dryRun ?? false
    // Created (emptied) first: a map that cannot be written is refused before anything is imported.
    if (request.mapFile && !dryRun) {
      await writeFile(request.mapFile, '').catch((error) => {
        throw badRequest(`Cannot write the map ${request.mapFile}: ${(error as Error).message}`)
      })
    }
    const summary: ImportSummary = {
      imported: 0,
      skipped: 0,
      failed: 0,
      notImages: 0,
      errors: [],
      quotaIgnored: opts.policy.storageLimit === null,
      dryRun,
    }
    const map: string[] = []
    /** A dry run stores nothing, so the files it would import are remembered here to find duplicates among them. */
    const planned = new Set<string>()

    async function importOne(path: string): Promise<ImportStep> {
      const rel = relative(dir, path)
      if (!(await isImage(path))) return { path: rel, action: 'not-image' }
      const { mtimeMs } = await stat(path)
      const file: ReceivedFile = {
        path: tempUploadPath(tmpDir),
        filename: basename(path).slice(0, FILENAME_MAX),
        size: 0,
        sha256: '',
      }
      try {
        Object.assign(file, await hashFile(path, opts.policy.maxFileSize, dryRun ? null : file.path))
      } catch (error) {
        await rm(file.path, { force: true })
        throw error
      }
      const existing = await run(ownedImageWithHash(db, user.id, file.sha256))
      if (existing || planned.has(file.sha256)) return { path: rel, action: 'duplicate', id: existing }
      if (dryRun) {
        planned.add(file.sha256)
        return { path: rel, action: 'import' }
      }
      const admitted = await pipeline.admit(opts)
      try {
        const { body } = await pipeline.store([file], fields, { ...opts, uploadedAt: mtimeMs }, admitted)
        // One file: the flat answer of one image.
        return { path: rel, action: 'import', id: (body as { id: string }).id }
      } finally {
        admitted.release()
      }
    }

    const paths = await filesUnder(dir)
    for (const [i, path] of paths.entries()) {
      const step = await importOne(path).catch(
        (error): ImportStep => ({ path: relative(dir, path), action: 'failed', error: (error as Error).message }),
      )
      if (step.action === 'import') summary.imported++
      else if (step.action === 'failed') {
        summary.failed++
        summary.errors.push({ path: step.path, error: step.error! })
      } else {
        summary.skipped++
        if (step.action === 'not-image') summary.notImages++
      }
      if (step.id && !dryRun) map.push(mapLine(step.path, step.id))
      onStep(step, i + 1, paths.length, summary)
    }
    if (request.mapFile && !dryRun) await writeFile(request.mapFile, map.join(''))
    return summary
  }
}
