import { type Db, run, transaction } from '../../db/client'
import type { EmbedProfile, Image, User } from '../../db/schema'
import { badRequest, notFound } from '../../errors'
import { humanSize } from '../../lib/size'
import { iso } from '../../lib/time'
import { isImageId } from '../images/model'
import { ownedLiveIds, setEmbedProfile } from '../images/repository'
import type { ImageService } from '../images/service'
import { COLOR, MAX_BULK_EMBED, MAX_EMBED_PROFILES, NAME_MAX, PLACEHOLDERS, TEXT_MAX, URL_MAX } from './model'
import {
  deleteProfile,
  findOwnedProfile,
  findProfile,
  insertProfileWithin,
  profilesOf,
  updateProfile,
} from './repository'

const COLOR_RE = new RegExp(`^${COLOR}$`)

/** The editable text fields of a profile, as the API names them, with their maximum lengths. */
const TEXT_FIELDS = {
  title: { column: 'title', max: TEXT_MAX.title },
  description: { column: 'description', max: TEXT_MAX.description },
  author_name: { column: 'authorName', max: TEXT_MAX.author_name },
  site_name: { column: 'siteName', max: TEXT_MAX.site_name },
} as const

export interface ProfileInput {
  name?: string
  title?: string | null
  description?: string | null
  color?: string | null
  author_name?: string | null
  author_url?: string | null
  site_name?: string | null
}

export function publicProfile(p: EmbedProfile) {
  return {
    id: p.id,
    name: p.name,
    title: p.title,
    description: p.description,
    color: p.color,
    author_name: p.authorName,
    author_url: p.authorUrl,
    site_name: p.siteName,
    createdAt: iso(p.createdAt),
    updatedAt: iso(p.updatedAt),
  }
}

/** "" and null both mean "not set" (the default applies); anything else is kept as sent. */
const blankToNull = (value: string | null | undefined) =>
  value === undefined ? undefined : value === null || value.trim() === '' ? null : value

/** The normalised form of an http(s) URL (as `URL` serialises it), or null when it is not one. */
function httpUrl(value: string): string | null {
  if (!/^https?:\/\/[^/?#\s]/i.test(value)) return null
  try {
    const url = new URL(value)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' ? url.href : null
  } catch {
    return null
  }
}

/** Checks an input and turns it into column values; only the fields present are returned (partial updates). */
function toColumns(input: ProfileInput, creating: boolean): Partial<EmbedProfile> {
  const out: Partial<EmbedProfile> = {}
  if (input.name !== undefined || creating) {
    const name = (input.name ?? '').trim()
    if (name.length < 1 || name.length > NAME_MAX) throw badRequest(`name must be 1-${NAME_MAX} characters`)
    out.name = name
  }
  for (const [field, spec] of Object.entries(TEXT_FIELDS)) {
    const value = blankToNull(input[field as keyof typeof TEXT_FIELDS])
    if (value === undefined) continue
    if (value !== null && value.length > spec.max) throw badRequest(`${field} must be at most ${spec.max} characters`)
    ;(out as Record<string, unknown>)[spec.column] = value
  }
  const color = blankToNull(input.color)
  if (color !== undefined) {
    if (color !== null && !COLOR_RE.test(color)) throw badRequest('color must be a hex colour like #3b82f6')
    out.color = color
  }
  const authorUrl = blankToNull(input.author_url)
  if (authorUrl !== undefined) {
    const normalised = authorUrl === null ? null : httpUrl(authorUrl.trim())
    if (authorUrl !== null && (normalised === null || normalised.length > URL_MAX))
      throw badRequest('author_url must be an http(s) URL')
    out.authorUrl = normalised
  }
  return out
}

export interface PlaceholderValues {
  filename: string
  id: string
  width: number
  height: number
  size: number
  mime: string
  date: Date
  views: number
  username: string | null
}

const PLACEHOLDER = new RegExp(`\\{(${PLACEHOLDERS.join('|')})\\}`, 'g')

/**
 * Fills `{filename}`, `{id}`, `{width}`, `{height}`, `{size}`, `{mime}`, `{date}`, `{views}`, `{username}` in one
 * pass, so a value that itself looks like a placeholder (a filename "{id}.png") is never expanded again.
 * The result is plain text: pages escape it when they render it.
 */
export function fillPlaceholders(text: string, v: PlaceholderValues): string {
  return text.replace(PLACEHOLDER, (_, name: string) => {
    switch (name) {
      case 'filename':
        return v.filename
      case 'id':
        return v.id
      case 'width':
        return String(v.width)
      case 'height':
        return String(v.height)
      case 'size':
        return humanSize(v.size)
      case 'mime':
        return v.mime
      case 'date':
        return iso(v.date).slice(0, 10)
      case 'views':
        return String(v.views)
      default:
        return v.username ?? 'anonymous'
    }
  })
}

/** What an image looks like when previewed: the profile's fields with placeholders filled, else the defaults. */
export interface ResolvedEmbed {
  title: string
  description: string
  siteName: string
  color: string
  authorName: string | null
  authorUrl: string | null
}

export function resolveEmbed(
  image: Pick<Image, 'id' | 'filename' | 'width' | 'height' | 'size' | 'mime' | 'createdAt'>,
  profile: EmbedProfile | null | undefined,
  ctx: { siteName: string; siteColor: string; username: string | null; views: () => number },
): ResolvedEmbed {
  let views: number | undefined
  const values: PlaceholderValues = {
    filename: image.filename,
    id: image.id,
    width: image.width,
    height: image.height,
    size: image.size,
    mime: image.mime,
    date: image.createdAt,
    // Views cost a lookup of the buffered count; only read when a profile asks for them.
    get views() {
      views ??= ctx.views()
      return views
    },
    username: ctx.username,
  }
  const fill = (text: string | null | undefined) => (text ? fillPlaceholders(text, values) : null)
  return {
    title: fill(profile?.title) || image.filename,
    description: fill(profile?.description) || `${image.width}×${image.height} · ${humanSize(image.size)}`,
    siteName: fill(profile?.siteName) || ctx.siteName,
    color: profile?.color || ctx.siteColor,
    authorName: fill(profile?.authorName),
    authorUrl: profile?.authorUrl || null,
  }
}

export type EmbedService = ReturnType<typeof createEmbedService>

export function createEmbedService(deps: { db: Db; images: ImageService }) {
  const { db, images: imageService } = deps

  async function findOwned(user: User, id: number): Promise<EmbedProfile> {
    const profile = await findOwnedProfile(db, user.id, id)
    if (!profile) throw notFound('Embed profile not found')
    return profile
  }

  /** A profile id the caller may assign: null (back to default) or one of their profiles. */
  async function assignable(user: User, profileId: number | null): Promise<number | null> {
    if (profileId === null) return null
    return (await findOwned(user, profileId)).id
  }

  return {
    findOwned,

    /** The profile of an image, for its pages (null when it has none). */
    async find(id: number | null): Promise<EmbedProfile | null> {
      if (id === null) return null
      return (await findProfile(db, id)) ?? null
    },

    list(user: User) {
      return profilesOf(db, user.id)
    },

    create(user: User, input: ProfileInput): Promise<EmbedProfile> {
      const values = toColumns(input, true)
      return insertProfileWithin(db, { ...values, name: values.name!, userId: user.id }, MAX_EMBED_PROFILES, () =>
        badRequest(`At most ${MAX_EMBED_PROFILES} embed profiles per account`),
      )
    },

    async update(user: User, id: number, input: ProfileInput): Promise<EmbedProfile> {
      const values = toColumns(input, false)
      if (Object.keys(values).length === 0) throw badRequest('Supply at least one profile field')
      const profile = await findOwned(user, id)
      return updateProfile(db, profile.id, { ...values, updatedAt: new Date() })
    },

    async remove(user: User, id: number) {
      const profile = await findOwned(user, id)
      await deleteProfile(db, profile.id)
    },

    async assign(user: User, imageId: string, profileId: number | null) {
      const image = await imageService.findOwned(user, imageId)
      const embedProfileId = await assignable(user, profileId)
      await run(setEmbedProfile(db, [image.id], embedProfileId))
      return { success: true as const, id: image.id, embed_profile_id: embedProfileId }
    },

    /** All or nothing: any id that is not one of the caller's images makes it a 404 naming them, and nothing changes. */
    async bulkAssign(user: User, imageIds: string[], profileId: number | null) {
      if (imageIds.length < 1 || imageIds.length > MAX_BULK_EMBED)
        throw badRequest(`image_ids must hold 1-${MAX_BULK_EMBED} ids`)
      const ids = [...new Set(imageIds)]
      const embedProfileId = await assignable(user, profileId)
      return transaction(db, function* (tx) {
        const wellFormed = ids.filter(isImageId)
        const owned = new Set(wellFormed.length === 0 ? [] : yield* ownedLiveIds(tx, user.id, wellFormed))
        const missing = ids.filter((id) => !owned.has(id))
        if (missing.length > 0) throw notFound(`Images not found: ${missing.join(', ')}`, { ids: missing })
        yield* setEmbedProfile(tx, ids, embedProfileId)
        return { success: true as const, updated: ids.length }
      })
    },
  }
}
