import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Sharp } from 'sharp'

// HEIC files for the tests, made by Debian's heif-enc (libheif-examples, installed by .ci/run) from images sharp makes.

type Bytes = Uint8Array<ArrayBuffer>

/**
 * The HEIC heif-enc makes of an image (a JPEG's Exif, GPS included, is carried over into an Exif item), or of several:
 * one file holding them all, the first the primary picture.
 */
export async function heifEnc(images: Sharp | Sharp[], format: 'png' | 'jpeg' = 'png'): Promise<Bytes> {
  const dir = await mkdtemp(join(tmpdir(), 'heic-'))
  try {
    const sources: string[] = []
    for (const [i, image] of [images].flat().entries()) {
      sources.push(join(dir, `in${i}.${format === 'png' ? 'png' : 'jpg'}`))
      await image.toFormat(format).toFile(sources[i]!)
    }
    const out = join(dir, 'out.heic')
    const run = Bun.spawnSync(['heif-enc', '-q', '80', '-o', out, ...sources])
    if (run.exitCode !== 0) throw new Error(`heif-enc failed: ${run.stderr.toString()}`)
    return new Uint8Array(await Bun.file(out).arrayBuffer())
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Where the box `type` starts (its size field), by its type's bytes; heif-enc's files hold each of these once. */
function boxAt(b: Uint8Array, type: string): number {
  const at = Buffer.from(b).indexOf(type, 0, 'latin1') - 4
  if (at < 0) throw new Error(`no ${type} box`)
  return at
}

/**
 * The file with its picture turned 90 degrees anticlockwise, as a phone stores a portrait photo: heif-enc cannot write
 * an `irot` property, so its last property (`pixi`, 16 bytes, not needed to decode) becomes one of the same size.
 * The primary item's association with it is already marked essential, as irot must be.
 */
export function turnedHeic(b: Uint8Array): Bytes {
  const out = new Uint8Array(b)
  const at = boxAt(out, 'pixi')
  const size = new DataView(out.buffer).getUint32(at)
  out.fill(0, at + 4, at + size)
  out.set(new TextEncoder().encode('irot'), at + 4)
  out[at + 8] = 1 // angle * 90 degrees, anticlockwise
  return out
}

/** The file with the size its `ispe` property declares changed (the coded picture stays what it was). */
export function withDeclaredSize(b: Uint8Array, width: number, height: number): Bytes {
  const out = new Uint8Array(b)
  const at = boxAt(out, 'ispe')
  const view = new DataView(out.buffer)
  view.setUint32(at + 12, width)
  view.setUint32(at + 16, height)
  return out
}

/**
 * A file of two pictures from `heifEnc` with the second made the primary one (its `pitm` box names it): heif-enc
 * writes each picture as a grid item over a hidden tile item, so the pictures are items 2 and 4.
 */
export function secondPrimary(b: Uint8Array): Bytes {
  const out = new Uint8Array(b)
  const at = boxAt(out, 'pitm')
  const view = new DataView(out.buffer)
  if (view.getUint16(at + 12) !== 2) throw new Error('heif-enc wrote another layout')
  view.setUint16(at + 12, 4)
  return out
}
