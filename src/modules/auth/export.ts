import { type Db, run } from '../../db/client'
import type { Image, User } from '../../db/schema'
import { iso } from '../../lib/time'
import { type ZipEntry, zipStream } from '../../lib/zip'
import { originalKey, type Storage } from '../../storage'
import { albumImagesOf, albumsOf } from '../albums/repository'
import { profilesOf } from '../embeds/repository'
import { publicProfile } from '../embeds/service'
import { IMAGE_SHAPES } from '../images/model'
import { ownedImagesAfter } from '../images/repository'
import type { ImageService } from '../images/service'
import { pickImage } from '../images/view'
import { webhooksOf } from '../webhooks/repository'
import { publicPasskey } from './passkeys'
import { findTotp, keysOf, passkeysOf } from './repository'
import { publicApiKey, publicUser } from './service'

/** Rows read per query while the archive is written. */
const EXPORT_BATCH = 200

const encoder = new TextEncoder()
const jsonBytes = (value: unknown) => encoder.encode(`${JSON.stringify(value, null, 2)}\n`)

/** Where an image's original is in the archive. */
const archivePath = (image: Pick<Image, 'id' | 'ext'>) => `images/${image.id}.${image.ext}`

/** The archive's name in Content-Disposition. */
export const exportFileName = (user: User, at: number) =>
  `${user.username}-export-${new Date(at).toISOString().slice(0, 10)}.zip`

/**
 * An account's data as a zip (GET /api/account/export): `account.json`, `images.json`, `albums.json`, `embeds.json`
 * and every live original under `images/<id>.<ext>`, read from the store as the archive is read. What it never holds:
 * the password hash, key hashes, the two-factor secret and recovery codes, session tokens, webhook secrets.
 */
export function accountExport(deps: {
  db: Db
  storage: Storage
  images: Pick<ImageService, 'fields' | 'now'>
  /** Where the archive's central directory is spooled while it streams (the temp folder). */
  spoolDir: string
}) {
  const { db, storage, images } = deps

  /** The account's live images at `now`, oldest first, a batch at a time. */
  async function* liveImages(user: User, now: number) {
    let after: Image | null = null
    for (;;) {
      const batch: Image[] = await ownedImagesAfter(db, user.id, after, EXPORT_BATCH)
      for (const image of batch) if (image.expiresAt === null || image.expiresAt.getTime() > now) yield image
      if (batch.length < EXPORT_BATCH) return
      after = batch.at(-1)!
    }
  }

  /** images.json, written as the rows are read: `[`, one image a chunk, `]`. */
  function imagesJson(user: User, now: number): ReadableStream<Uint8Array> {
    const rows = liveImages(user, now)
    let first = true
    return new ReadableStream({
      async pull(controller) {
        const { done, value } = await rows.next()
        if (done) {
          controller.enqueue(encoder.encode(first ? '[]\n' : '\n]\n'))
          return controller.close()
        }
        const item = {
          ...pickImage(images.fields(value), IMAGE_SHAPES.listItem),
          sha256: value.sha256,
          file: archivePath(value),
        }
        controller.enqueue(encoder.encode(`${first ? '[\n' : ',\n'}${JSON.stringify(item)}`))
        first = false
      },
      async cancel() {
        await rows.return(undefined)
      },
    })
  }

  async function accountJson(user: User, now: number) {
    const totp = await run(findTotp(db, user.id))
    return {
      exportedAt: iso(now),
      user: publicUser(user),
      twoFactor: { enabled: Boolean(totp?.enabledAt) },
      apiKeys: (await keysOf(db, user.id)).map(publicApiKey),
      passkeys: (await passkeysOf(db, user.id)).map(publicPasskey),
      webhooks: (await webhooksOf(db, user.id)).map((w) => ({
        id: w.id,
        url: w.url,
        events: JSON.parse(w.events) as string[],
        createdAt: iso(w.createdAt),
      })),
    }
  }

  async function albumsJson(user: User, now: number) {
    const albums = []
    for (const album of await albumsOf(db, user.id)) {
      albums.push({
        id: album.id,
        title: album.title,
        description: album.description,
        isPublic: album.isPublic,
        hasPassword: album.passwordHash !== null,
        createdAt: iso(album.createdAt),
        updatedAt: iso(album.updatedAt),
        imageIds: (await albumImagesOf(db, album.id, 'owner', now)).map((image) => image.id),
      })
    }
    return albums
  }

  async function* entries(user: User, now: number): AsyncGenerator<ZipEntry> {
    const modified = new Date(now)
    yield { name: 'account.json', data: jsonBytes(await accountJson(user, now)), modified }
    yield { name: 'images.json', data: imagesJson(user, now), modified }
    yield { name: 'albums.json', data: jsonBytes(await albumsJson(user, now)), modified }
    yield { name: 'embeds.json', data: jsonBytes((await profilesOf(db, user.id)).map(publicProfile)), modified }
    for await (const image of liveImages(user, now)) {
      const file = storage.file(originalKey(image.id, image.ext))
      // Deleted since images.json listed it: left out rather than breaking the archive.
      if (!(await file.exists())) continue
      yield { name: archivePath(image), data: file.stream(), modified: image.createdAt }
    }
  }

  /** The archive as a stream, and its file name. */
  return (user: User) => {
    const now = images.now()
    return {
      body: zipStream(entries(user, now), { spoolDir: deps.spoolDir }),
      fileName: exportFileName(user, now),
    }
  }
}

export type AccountExport = ReturnType<typeof accountExport>
