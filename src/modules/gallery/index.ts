import { Elysia } from 'elysia'
import { errors } from '../../http/errors'
import { parsePage } from '../../http/pagination'
import {
  FEED_PAGE,
  FeedQuery,
  FeedResponse,
  ProfileResponse,
  SearchQuery,
  SearchResponse,
  UsernameParams,
} from './model'
import type { GalleryService } from './service'

/** Public feeds: gallery, search and user profiles. No credentials. */
export function galleryModule(gallery: GalleryService) {
  return new Elysia({ name: 'module-gallery' })
    .get('/api/gallery', ({ query }) => gallery.gallery(parsePage(query, FEED_PAGE)), {
      query: FeedQuery,
      response: { 200: FeedResponse, ...errors(400) },
      detail: {
        tags: ['Gallery'],
        summary: 'Public gallery, newest first',
        description: 'Public images that are not NSFW, not waiting for a content scan, and whose owner is not banned.',
      },
    })
    .get('/api/search', ({ query }) => gallery.search(query.q, parsePage(query, FEED_PAGE)), {
      query: SearchQuery,
      response: { 200: SearchResponse, ...errors(400) },
      detail: {
        tags: ['Gallery'],
        summary: 'Search the gallery by filename or public album title',
        description:
          'Case- and accent-insensitive. Every word of q must be the start of a word of the original filename, or every word the ' +
          'start of a word of the title of one public album holding the image. Words are split at every character that is not ' +
          'a letter or digit. An empty q, or one without any letter or digit: 400.',
      },
    })
    .get('/api/users/:username', ({ params, query }) => gallery.profile(params.username, parsePage(query, FEED_PAGE)), {
      params: UsernameParams,
      query: FeedQuery,
      response: { 200: ProfileResponse, ...errors(400, 404) },
      detail: {
        tags: ['Gallery'],
        summary: "A user's public profile and public images (NSFW ones included, flagged)",
        description: 'Unknown or banned users: 404. Private images and images waiting for a content scan are left out.',
      },
    })
}
