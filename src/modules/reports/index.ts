import { Elysia } from 'elysia'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { parsePage } from '../../http/pagination'
import { rateLimitHeaders } from '../../http/rate-limit'
import {
  AdminReportsQuery,
  AdminReportsResponse,
  DETAILS_MAX,
  REPORT_REASONS,
  ReportActionBody,
  ReportActionResponse,
  ReportBody,
  ReportCreatedResponse,
  ReportIdParams,
  ReportResponse,
} from './model'
import type { ReportService } from './service'

/** Abuse reports: anyone files one (rate limited per IP); admins list them and dismiss or act. */
export function reportsModule(reports: ReportService, guard: ReturnType<typeof authGuard>) {
  return new Elysia({ name: 'module-reports' })
    .use(guard)
    .post(
      '/api/reports',
      async ({ body, clientIp, set }) => {
        const result = await reports.create(body, clientIp)
        set.status = 201
        Object.assign(set.headers, rateLimitHeaders(result.window))
        return { success: true as const, report: result.report }
      },
      {
        body: ReportBody,
        response: { 201: ReportCreatedResponse, ...errors(400, 404, 429) },
        detail: {
          tags: ['Reports'],
          summary: 'Report an image (no account needed; rate limited per IP)',
          description:
            `reason is one of ${REPORT_REASONS.join(', ')}; details at most ${DETAILS_MAX} characters. ` +
            'An unknown, deleted or expired image: 404. REPORTS_PER_HOUR reports per IP per fixed hour (default 5); ' +
            'beyond it 429 with Retry-After and RateLimit-* headers.',
        },
      },
    )
    .group('/api/admin/reports', (admin) =>
      admin
        .get(
          '',
          ({ query }) =>
            reports.list({ status: query.status ?? 'open', ...parsePage(query, { limit: 20, maxLimit: 100 }) }),
          {
            admin: true,
            query: AdminReportsQuery,
            response: { 200: AdminReportsResponse, ...errors(400, 401, 403) },
            detail: { tags: ['Admin'], summary: 'List abuse reports by status (default open), newest first' },
          },
        )
        .post('/:id/dismiss', ({ params, user }) => reports.dismiss(user, params.id), {
          admin: true,
          params: ReportIdParams,
          response: { 200: ReportResponse, ...errors(400, 401, 403, 404, 409) },
          detail: { tags: ['Admin'], summary: 'Dismiss an open report (the image stays)' },
        })
        .post('/:id/action', ({ params, body, user }) => reports.action(user, params.id, body), {
          admin: true,
          params: ReportIdParams,
          body: ReportActionBody,
          response: { 200: ReportActionResponse, ...errors(400, 401, 403, 404, 409) },
          detail: {
            tags: ['Admin'],
            summary: 'Act on a report: delete the image, block the picture, optionally ban the owner',
            description:
              'Deletes the image with its files, adds its perceptual hash and SHA-256 (as uploaded, and as stored) to ' +
              'the blocklist (GET /api/admin/blocks) so the same picture is refused on upload, resized, re-encoded or ' +
              'slightly cropped or brightened too, bans the uploader when banOwner is true, and marks every open ' +
              'report of the image actioned. Works when the image is already gone. An actioned report: 409.',
          },
        }),
    )
}
