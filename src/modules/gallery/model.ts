import { t } from 'elysia'
import { AsOf, AsOfQuery, pageQuery, Timestamp } from '../../http/schemas'
import { ImageId } from '../images/model'

/** A profile page's path, `/u/<username>` (relative: pages link within the site). */
export const profilePath = (username: string) => `/u/${encodeURIComponent(username)}`

/** Longest accepted search text and most words in it: bounds the work one query can cause. */
export const MAX_QUERY_LENGTH = 256
export const MAX_QUERY_WORDS = 16
/**
 * How many matching search documents (filenames and album titles), the most recently indexed first, a search looks at:
 * its cost stays bounded however many match; `total` counts within them and `capped` says more matched.
 */
export const SEARCH_SCOPE = 1000

/** One image of a public feed (gallery, search, profile). */
export const FeedImage = t.Object({
  id: ImageId,
  url: t.String({ format: 'uri', description: 'Direct link' }),
  thumbnail: t.String({ format: 'uri' }),
  viewer: t.String({ format: 'uri' }),
  width: t.Integer(),
  height: t.Integer(),
  mime: t.String(),
  views: t.Integer(),
  created_at: Timestamp,
  username: t.Union([t.String(), t.Null()], { description: 'Uploader, null for anonymous uploads' }),
  nsfw: t.Boolean({ description: 'Always false in the gallery and search; profiles include NSFW images' }),
})

const pageFields = {
  images: t.Array(FeedImage),
  page: t.Integer(),
  totalPages: t.Integer({ description: 'ceil(total / limit), 0 when there are none' }),
  total: t.Integer(),
  asOf: AsOf,
}

export const FeedResponse = t.Object({ success: t.Literal(true), ...pageFields })

export const SearchResponse = t.Object({
  success: t.Literal(true),
  ...pageFields,
  total: t.Integer({
    description: `Matching gallery images among the ${SEARCH_SCOPE} most recently indexed matching documents (filenames, album titles)`,
  }),
  capped: t.Boolean({ description: `More than ${SEARCH_SCOPE} documents matched: total and the pages stop there` }),
})

/** Page size of the public feeds: default 20, larger values clamped to 40. */
export const FEED_PAGE = { limit: 20, maxLimit: 40 }
const feedPage = pageQuery(FEED_PAGE, 'Images')

export const FeedQuery = t.Object({ ...feedPage, asOf: AsOfQuery })

export const SearchQuery = t.Object({
  q: t.Optional(
    t.String({
      description:
        'Words to find (split at every character that is not a letter or digit); each must prefix a word of the filename or of one public album title',
    }),
  ),
  ...feedPage,
  asOf: AsOfQuery,
})

export const UsernameParams = t.Object({ username: t.String() })

export const ProfileResponse = t.Object({
  success: t.Literal(true),
  user: t.Object({
    username: t.String(),
    createdAt: Timestamp,
    publicImages: t.Integer({ description: 'Equals total' }),
  }),
  ...pageFields,
})
