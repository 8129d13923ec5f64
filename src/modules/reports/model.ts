import { t } from 'elysia'
import { Nullable, NumericId, PageQuery, Timestamp, Visibility } from '../../http/schemas'

export const REPORT_REASONS = ['illegal', 'nsfw', 'copyright', 'spam', 'other'] as const
export const REPORT_STATUSES = ['open', 'dismissed', 'actioned'] as const
export const DETAILS_MAX = 1000

export const ReportReason = t.Union(
  [t.Literal('illegal'), t.Literal('nsfw'), t.Literal('copyright'), t.Literal('spam'), t.Literal('other')],
  { error: `reason must be one of ${REPORT_REASONS.join(', ')}`, description: 'Why the image is reported' },
)
export const ReportStatus = t.Union([t.Literal('open'), t.Literal('dismissed'), t.Literal('actioned')], {
  error: `status must be one of ${REPORT_STATUSES.join(', ')}`,
})

export const ReportBody = t.Object({
  imageId: t.String({ maxLength: 64, description: 'The 8-character id of the reported image' }),
  reason: ReportReason,
  details: t.Optional(
    t.String({
      maxLength: DETAILS_MAX,
      error: `details must be at most ${DETAILS_MAX} characters`,
      description: `Free text, at most ${DETAILS_MAX} characters`,
    }),
  ),
})

/** What the reporter gets back. */
export const PublicReport = t.Object({
  id: t.Integer(),
  imageId: t.String(),
  reason: ReportReason,
  createdAt: Timestamp,
})
export const ReportCreatedResponse = t.Object({ success: t.Literal(true), report: PublicReport })

/** The reported image as an admin sees it; null once it is gone (deleted, expired or removed by an action). */
export const ReportedImage = t.Object({
  id: t.String(),
  url: t.String({ format: 'uri' }),
  thumbnail: t.String({ format: 'uri' }),
  viewer: t.String({ format: 'uri' }),
  filename: t.String(),
  mime: t.String(),
  width: t.Integer(),
  height: t.Integer(),
  visibility: Visibility,
  nsfw: t.Boolean(),
  createdAt: Timestamp,
  expiresAt: Nullable(Timestamp),
})

export const AdminReport = t.Object({
  id: t.Integer(),
  imageId: t.String(),
  reason: ReportReason,
  details: Nullable(t.String()),
  status: ReportStatus,
  createdAt: Timestamp,
  resolvedAt: Nullable(Timestamp),
  /** Open reports about the same image, this one included when open. */
  openReports: t.Integer({ description: 'Open reports about the same image' }),
  image: Nullable(ReportedImage),
  owner: Nullable(
    t.Object(
      { id: t.Integer(), username: t.String(), banned: t.Boolean() },
      { description: 'The uploader; null for anonymous uploads' },
    ),
  ),
})

export const AdminReportsQuery = t.Composite([PageQuery, t.Object({ status: t.Optional(ReportStatus) })])

export const AdminReportsResponse = t.Object({
  success: t.Literal(true),
  reports: t.Array(AdminReport),
  total: t.Integer(),
  page: t.Integer(),
  limit: t.Integer(),
  pages: t.Integer(),
})

export const ReportIdParams = t.Object({ id: NumericId() })

export const ReportResponse = t.Object({ success: t.Literal(true), report: AdminReport })

export const ReportActionBody = t.Object({
  deleteImage: t.Literal(true, { description: 'Delete the image, files included (the only action so far)' }),
  banOwner: t.Optional(t.Boolean({ description: 'Also ban the uploader (default false)' })),
  keepThumbnail: t.Optional(
    t.Boolean({ description: 'Keep the image’s thumbnail with its block, for admins to see (default false)' }),
  ),
})

export const ReportActionResponse = t.Object({
  success: t.Literal(true),
  report: AdminReport,
  imageDeleted: t.Boolean({ description: 'false when the image was already gone' }),
  ownerBanned: t.Boolean(),
  /** Reports of the image moved to `actioned` by this action, this one included. */
  reportsActioned: t.Integer(),
})
