import { Elysia, t } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { Success } from '../../http/schemas'
import {
  AssignBody,
  AssignParams,
  AssignResponse,
  BulkAssignBody,
  BulkAssignResponse,
  EmbedCreateBody,
  EmbedIdParams,
  EmbedProfileListResponse,
  EmbedProfileResponse,
  EmbedUpdateBody,
} from './model'
import { type EmbedService, publicProfile } from './service'

const BulkNotFound = t.Object(
  { error: t.String(), ids: t.Optional(t.Array(t.String(), { description: 'The ids that are not images of yours' })) },
  {
    description: 'Some ids are not images of yours (named in `ids`), or the profile is not yours; nothing was changed',
  },
)

export function embedsModule(embeds: EmbedService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-embeds' })
    .use(guard)
    .group('/api/embeds', { detail: { tags: ['Embed profiles'] } }, (app) =>
      app
        .get(
          '',
          async ({ user }) => ({ success: true as const, profiles: (await embeds.list(user)).map(publicProfile) }),
          {
            session: true,
            response: { 200: EmbedProfileListResponse, ...errors(401, 403) },
            detail: { summary: 'List your embed profiles' },
          },
        )
        .post(
          '',
          async ({ user, body, set }) => {
            const profile = await embeds.create(user, body)
            set.status = 201
            return { success: true as const, profile: publicProfile(profile) }
          },
          {
            session: true,
            body: EmbedCreateBody,
            response: { 201: EmbedProfileResponse, ...errors(400, 401, 403) },
            detail: { summary: 'Create an embed profile (at most 25 per account; the 26th is a 400)' },
          },
        )
        .put(
          '/:id',
          async ({ user, params, body }) => ({
            success: true as const,
            profile: publicProfile(await embeds.update(user, params.id, body)),
          }),
          {
            session: true,
            params: EmbedIdParams,
            body: EmbedUpdateBody,
            response: { 200: EmbedProfileResponse, ...errors(400, 401, 403, 404) },
            detail: { summary: 'Update an embed profile (partial: omitted fields stay unchanged)' },
          },
        )
        .delete(
          '/:id',
          async ({ user, params }) => {
            await embeds.remove(user, params.id)
            return { success: true as const }
          },
          {
            session: true,
            params: EmbedIdParams,
            response: { 200: Success, ...errors(400, 401, 403, 404) },
            detail: { summary: 'Delete an embed profile; images that used it revert to the default embed' },
          },
        ),
    )
    .group('/api/images', { detail: { tags: ['Embed profiles'] } }, (app) =>
      app
        .patch('/bulk-embed', ({ user, body }) => embeds.bulkAssign(user, body.image_ids, body.embed_profile_id), {
          session: true,
          body: BulkAssignBody,
          response: { 200: BulkAssignResponse, ...errors(400, 401, 403), 404: BulkNotFound },
          detail: { summary: 'Assign a profile (or null for the default) to 1-100 of your images, all or nothing' },
        })
        .patch('/:id/embed', ({ user, params, body }) => embeds.assign(user, params.id, body.embed_profile_id), {
          session: true,
          params: AssignParams,
          body: AssignBody,
          response: { 200: AssignResponse, ...errors(400, 401, 403, 404) },
          detail: { summary: 'Assign an embed profile to one of your images (null: back to the default embed)' },
        }),
    )
}
