import { t } from 'elysia'
import { Nullable, NumericId, Timestamp } from '../../http/schemas'
import { ImageId } from '../images/model'

/** At most this many profiles per user (INTERFACE.md). */
export const MAX_EMBED_PROFILES = 25
/** At most this many images per bulk assignment (INTERFACE.md). */
export const MAX_BULK_EMBED = 100
/** A profile's name: 1 to this many characters. */
export const NAME_MAX = 100
/** The most characters of each text field (DECISIONS.md) and of `author_url`. */
export const TEXT_MAX = { title: 256, description: 2048, author_name: 256, site_name: 256 } as const
export const URL_MAX = 2048
/** The placeholders a profile's texts may hold, filled per image on the viewer page (DECISIONS.md). */
export const PLACEHOLDERS = ['filename', 'id', 'width', 'height', 'size', 'mime', 'date', 'views', 'username'] as const
/** A colour: `#rrggbb`. */
export const COLOR = '#[0-9a-fA-F]{6}'

export const EmbedProfileModel = t.Object(
  {
    id: t.Integer({ minimum: 1 }),
    name: t.String(),
    title: Nullable(t.String()),
    description: Nullable(t.String()),
    color: Nullable(t.String({ pattern: `^${COLOR}$`, examples: ['#3b82f6'] })),
    author_name: Nullable(t.String()),
    author_url: Nullable(
      t.String({ description: 'An http(s) URL, normalised (e.g. unsafe characters percent-encoded)' }),
    ),
    site_name: Nullable(t.String()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'EmbedProfile' },
)

const NullableWithError = <T extends import('@sinclair/typebox').TSchema>(s: T, error: string) =>
  t.Union([s, t.Null()], { error })

const text = (field: string, max: number, description: string) =>
  t.Optional(
    NullableWithError(
      t.String({
        maxLength: max,
        description: `${description} (at most ${max} characters; placeholders allowed; null or "" for the default)`,
      }),
      `${field} must be a string of at most ${max} characters, or null`,
    ),
  )

const fields = {
  title: text('title', TEXT_MAX.title, 'og:title'),
  description: text('description', TEXT_MAX.description, 'og:description'),
  color: t.Optional(
    NullableWithError(
      t.String({
        pattern: `^(${COLOR})?$`,
        examples: ['#3b82f6'],
        description: 'theme-color, `#rrggbb`; null or "" for the site colour',
      }),
      'color must be a hex colour like #3b82f6, or null',
    ),
  ),
  author_name: text('author_name', TEXT_MAX.author_name, 'oEmbed author_name'),
  author_url: t.Optional(
    NullableWithError(
      t.String({ maxLength: URL_MAX, description: 'oEmbed author_url: an http(s) URL; null or "" to clear' }),
      'author_url must be an http(s) URL, or null',
    ),
  ),
  site_name: text('site_name', TEXT_MAX.site_name, 'og:site_name and oEmbed provider_name'),
}

export const EmbedCreateBody = t.Object(
  {
    name: t.String({
      minLength: 1,
      maxLength: NAME_MAX,
      description: `Label of the profile, 1-${NAME_MAX} characters`,
    }),
    ...fields,
  },
  {
    description: `Text fields may hold placeholders filled per image: ${PLACEHOLDERS.map((p) => `{${p}}`).join(', ')}`,
  },
)
export const EmbedUpdateBody = t.Object(
  { name: t.Optional(t.String({ minLength: 1, maxLength: NAME_MAX })), ...fields },
  { description: 'Partial update: omitted fields stay unchanged' },
)

export const EmbedProfileResponse = t.Object({ success: t.Literal(true), profile: EmbedProfileModel })
export const EmbedProfileListResponse = t.Object({ success: t.Literal(true), profiles: t.Array(EmbedProfileModel) })
export const EmbedIdParams = t.Object({ id: NumericId() })

const ProfileRef = NullableWithError(
  t.Integer({ minimum: 1, description: 'An embed profile id of yours, or null for the default embed' }),
  'embed_profile_id must be a profile id (a positive integer) or null',
)
export const AssignBody = t.Object({ embed_profile_id: ProfileRef })
export const AssignResponse = t.Object({
  success: t.Literal(true),
  id: ImageId,
  embed_profile_id: Nullable(t.Integer()),
})
export const AssignParams = t.Object({ id: t.String() })

export const BulkAssignBody = t.Object({
  image_ids: t.Array(t.String({ maxLength: 64 }), {
    minItems: 1,
    maxItems: MAX_BULK_EMBED,
    description: `1-${MAX_BULK_EMBED} image ids of yours`,
  }),
  embed_profile_id: ProfileRef,
})
export const BulkAssignResponse = t.Object({
  success: t.Literal(true),
  updated: t.Integer({ description: 'Distinct images changed' }),
})
