import { basename } from 'node:path'
import { Value } from '@sinclair/typebox/value'
import { type Command, InvalidArgumentError, Option } from 'commander'
import { loadConfig } from '../config'
import { localChangeFeed } from '../db/changes'
import { run } from '../db/client'
import { newPublicId, sha256Hex } from '../lib/crypto'
import { loadVariantSecret } from '../lib/secrets'
import { localMedia, MediaError } from '../media'
import { createNsfwClassifier } from '../moderation'
import { isImageId } from '../modules/images/model'
import { createPhashBackfill } from '../modules/images/phash-backfill'
import { createImageService } from '../modules/images/service'
import { createUploadPipeline } from '../modules/images/upload'
import { createImporter, type ImportStep } from '../modules/import/service'
import { VariantRequest } from '../modules/variants/model'
import { signedVariantPath } from '../modules/variants/signing'
import { MAX_SIDE, MIN_SIDE, VARIANT_FITS, VARIANT_FORMATS } from '../modules/variants/specs'
import { seed } from '../ops/seed'
import { mediaOptionsOf, mediaPoolFor } from '../workers/media-pool'
import { CliError, type Context, withContext } from './context'
import { progress } from './progress'

/** A whole number of at least 1, for options and arguments (commander reports the refusal as a usage error). */
export function positiveInt(value: string): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('not a whole number ≥ 1')
  return n
}

function imageId(value: string): string {
  if (!isImageId(value)) throw new InvalidArgumentError('not an image id')
  return value
}

/** What a dry run would do with a file, one line each. */
const planned = (step: ImportStep) =>
  step.action === 'import'
    ? `would import ${step.path}`
    : step.action === 'duplicate'
      ? `would skip ${step.path}: already imported${step.id ? ` as ${step.id}` : ' (same bytes as a file before it)'}`
      : `would skip ${step.path}: not an image`

interface ImportOptions {
  user: string
  album?: string
  visibility?: 'public' | 'private'
  dryRun?: boolean
  map?: string
}

async function importCommand(ctx: Context, dir: string, options: ImportOptions) {
  const { db, config, storage, blocklist } = ctx
  const user = await ctx.byName(options.user)
  const media = mediaPoolFor(config)
  const classifier = createNsfwClassifier({
    timeoutMs: config.nsfw.timeoutMs,
    maxQueue: config.nsfw.maxQueue,
    backend: config.nsfw.backend,
  })
  try {
    const store = storage()
    const images = createImageService({ db, config, storage: store, changes: localChangeFeed(db) })
    const pipeline = createUploadPipeline({
      db,
      config,
      storage: store,
      media,
      classifier,
      thresholds: config.nsfw.thresholds,
      blocks: blocklist(),
      images,
      instance: `cli-import-${newPublicId()}`,
    })
    const importFolder = createImporter({ db, pipeline, tmpDir: config.paths.tmpDir })
    const bar = progress('import')
    const summary = await importFolder(
      { dir, user, album: options.album, visibility: options.visibility, dryRun: options.dryRun, mapFile: options.map },
      (step, done, total, s) => {
        if (options.dryRun && step.action !== 'failed') console.error(planned(step))
        else bar.update(done, total, `${s.imported} imported, ${s.skipped} skipped, ${s.failed} failed`)
      },
    )
    bar.end()
    console.error(
      summary.quotaIgnored
        ? `${user.username} is an admin: no storage quota, upload window or file size limit was applied.`
        : `${user.username}'s storage quota, upload window and file size limit applied; a file they refused failed.`,
    )
    console.log(JSON.stringify(summary, null, 2))
    if (summary.failed > 0) process.exitCode = 2
  } finally {
    await media.close()
    await classifier.close()
  }
}

async function blockCommand({ db, config, blocklist }: Context, file: string, options: { reason?: string }) {
  if (!(await Bun.file(file).exists())) throw new CliError(`No such file: ${file}`)
  let phash: string | null
  try {
    phash = await localMedia(mediaOptionsOf(config)).perceptualHash(file)
  } catch (error) {
    if (error instanceof MediaError) throw new CliError(`${file}: ${error.message}`)
    throw error
  }
  const sha256 = sha256Hex(await Bun.file(file).bytes())
  const reason = options.reason?.trim() || `cli block ${basename(file)}`
  const id = await run(blocklist().record(db, { phash, sha256s: [sha256], reason, source: 'cli' }))
  console.log(
    phash
      ? `Blocked ${file} as block ${id}: perceptual hash ${phash}, SHA-256 ${sha256}`
      : `Blocked ${file} as block ${id} by its SHA-256 ${sha256} only: the picture is too plain for a perceptual hash`,
  )
}

async function importBlocklist({ blocklist }: Context, path: string, options: { json?: boolean }) {
  const file = Bun.file(path)
  if (!(await file.exists())) throw new CliError(`No such file: ${path}`)
  const result = await blocklist().importHashes(await file.text(), `imported from ${basename(path)}`)
  for (const bad of result.bad) console.error(`line ${bad.line}: not a 16-hex-digit hash: ${bad.text}`)
  if (options.json)
    console.log(JSON.stringify({ added: result.added, alreadyBlocked: result.alreadyBlocked, bad: result.bad }))
  else
    console.log(
      `${result.added} hashes blocked, ${result.alreadyBlocked} already blocked, ${result.bad.length} bad lines skipped`,
    )
  if (result.bad.length > 0) process.exitCode = 2
}

async function rehash({ db, config, storage }: Context, options: { json?: boolean }) {
  const media = mediaPoolFor(config)
  const bar = progress('rehash')
  try {
    const backfill = createPhashBackfill({ db, storage: storage(), media, tmpDir: config.paths.tmpDir })
    // Batch by batch (runToEnd's loop) so the line moves; how many are left is not known beforehand: a counter.
    const counts = { hashed: 0, plain: 0, failed: 0 }
    for (;;) {
      const batch = await backfill.step()
      if (batch.hashed + batch.plain + batch.failed === 0) break
      counts.hashed += batch.hashed
      counts.plain += batch.plain
      counts.failed += batch.failed
      bar.update(counts.hashed + counts.plain + counts.failed)
    }
    bar.end()
    if (options.json) console.log(JSON.stringify(counts))
    else
      console.log(
        `${counts.hashed} images hashed, ${counts.plain} too plain to hash, ${counts.failed} could not be read`,
      )
    if (counts.failed > 0) process.exitCode = 2
  } finally {
    await media.close()
  }
}

interface VariantOptions {
  width: number
  height?: number
  fit?: string
  format: string
}

/** The signed URL of `sign-variant`, checked against the endpoint's own schema. */
function signVariant(id: string, options: VariantOptions) {
  const config = loadConfig()
  const body = { ...options, fit: options.fit ?? 'inside' }
  if (!Value.Check(VariantRequest, body)) {
    const first = [...Value.Errors(VariantRequest, body)][0]
    const side = first?.path === '/width' || first?.path === '/height'
    throw new CliError(
      side ? `--${first.path.slice(1)} must be ${MIN_SIDE}-${MAX_SIDE} pixels` : `invalid: ${first?.message}`,
      2,
    )
  }
  const spec = { width: body.width, height: body.height, fit: body.fit, format: body.format }
  console.log(`${config.site.cdnUrl}${signedVariantPath(loadVariantSecret(config), id, spec)}`)
}

async function seedCommand(ctx: Context, rows: number, options: { from?: string; files: 'link' | 'none' }) {
  const bar = progress('seed')
  const report = await seed(ctx.db, ctx.storage(), { rows, from: options.from, files: options.files }, (done, total) =>
    bar.update(done, total),
  )
  bar.end()
  console.log(JSON.stringify(report))
}

/** import, block, import-blocklist, rehash, sign-variant, seed. */
export function imageCommands(program: Command) {
  program
    .command('import')
    .description('import every image under <dir> into an account (the server may be running); a JSON summary')
    .argument('<dir>')
    .requiredOption('--user <username>', 'the account the images go to')
    .option('--album <title>', "put them in the account's album of that title (made when missing)")
    .addOption(new Option('--visibility <visibility>', 'visibility of every image').choices(['public', 'private']))
    .option('--dry-run', 'list on stderr what would be imported or skipped; change nothing')
    .option('--map <file.csv>', 'write "old path,new id" per image (for LEGACY_REDIRECTS)')
    .action(withContext(importCommand))
  program
    .command('block')
    .description('block the picture in <file> from being uploaded (its perceptual hash and SHA-256)')
    .argument('<file>')
    .option('--reason <text>', 'why, kept with the block')
    .action(withContext(blockCommand))
  program
    .command('import-blocklist')
    .description('block the perceptual hashes in <file>, one 16-hex-digit hash a line')
    .argument('<file>')
    .option('--json', 'print the summary as JSON')
    .action(withContext(importBlocklist))
  program
    .command('rehash')
    .description('give a perceptual hash to every image stored without one')
    .option('--json', 'print the summary as JSON')
    .action(withContext(rehash))
  program
    .command('sign-variant')
    .description('print a signed URL of the image resized (as POST /api/v1/image/:id/variants answers it)')
    .argument('<id>', 'the image id', imageId)
    .requiredOption('--width <px>', 'width in pixels', positiveInt)
    .option('--height <px>', 'height in pixels', positiveInt)
    .addOption(new Option('--fit <fit>', 'how the picture fits the box').choices(VARIANT_FITS))
    .addOption(new Option('--format <format>', 'the format made').choices(VARIANT_FORMATS).makeOptionMandatory())
    .action(async (id: string, options: VariantOptions) => signVariant(id, options))
  program
    .command('seed')
    .description('FOR MEASURING ONLY: add <rows> made-up images cloned from one upload (bench/README.md)')
    .argument('<rows>', 'rows to add', positiveInt)
    .option('--from <image id>', 'the upload cloned (default the newest with an owner)', imageId)
    .addOption(new Option('--files <how>', 'how the clones get files').choices(['link', 'none']).default('link'))
    .action(withContext(seedCommand))
}
