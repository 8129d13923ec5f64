import type { Image } from '../../db/schema'
import { originalKey, readStored, type Storage, thumbnailKey } from '../../storage'
import type { NewBlock } from './repository'

/** What blocking a picture records, before the image (if any) goes: its hashes, and its thumbnail when kept. */
export type BlockedPicture = Pick<NewBlock, 'phash' | 'sha256s' | 'thumbnail'>

/** SHA-256 (hex) of a stored file, streamed. */
async function hashOf(file: Blob): Promise<string> {
  const hasher = new Bun.CryptoHasher('sha256')
  for await (const chunk of file.stream()) hasher.update(chunk)
  return hasher.digest('hex')
}

/**
 * What blocking this image records: its perceptual hash, the SHA-256 of its bytes as uploaded and as stored
 * (metadata stripping changes them: a copy saved from the direct link is refused too), and its thumbnail when
 * `keepThumbnail`. `known` is what a report kept of it, for an image already gone.
 */
export async function pictureOf(
  storage: Storage,
  image: Image | null,
  known: { sha256: string; phash: string | null },
  keepThumbnail = false,
): Promise<BlockedPicture> {
  const sha256s = new Set([known.sha256])
  let thumbnail: Buffer | null = null
  if (image) {
    sha256s.add(image.sha256)
    const original = originalKey(image.id, image.ext)
    if (await storage.exists(original))
      sha256s.add(await readStored(`hashing ${original}`, () => hashOf(storage.file(original))))
    const thumb = thumbnailKey(image.id)
    if (keepThumbnail && (await storage.exists(thumb)))
      thumbnail = Buffer.from(await readStored(`reading ${thumb}`, () => storage.file(thumb).arrayBuffer()))
  }
  return { phash: image?.phash ?? known.phash, sha256s: [...sha256s], thumbnail }
}
