import type { Config } from '../../config'
import { type Db, run, type Tx, transaction } from '../../db/client'
import type { Report, User } from '../../db/schema'
import { badRequest, conflict, notFound } from '../../errors'
import { ipKey } from '../../http/client-ip'
import { pageCount } from '../../http/pagination'
import { HOUR_MS, iso } from '../../lib/time'
import { checkWindow, consumeWindow, type WindowRule } from '../../limits/windows'
import { deleteSessionsOf, setUserFields } from '../auth/repository'
import type { BlockService } from '../blocks/service'
import { IMAGE_SHAPES } from '../images/model'
import { anyImage } from '../images/repository'
import type { ImageService } from '../images/service'
import { pickImage } from '../images/view'
import type { REPORT_REASONS, REPORT_STATUSES } from './model'
import {
  actionReports,
  countReports,
  dismissReport,
  findReport,
  insertReport,
  type ReportRow,
  reportRows,
} from './repository'

export type ReportReason = (typeof REPORT_REASONS)[number]
export type ReportStatus = (typeof REPORT_STATUSES)[number]

export type ReportService = ReturnType<typeof createReportService>

export function createReportService(deps: {
  db: Db
  config: Config
  images: ImageService
  blocks: Pick<BlockService, 'pictureOf' | 'record'>
  /** The report windows' clock (tests step it). */
  now?: () => number
}) {
  const { db, config, images: imageService, blocks } = deps
  const windowNow = deps.now ?? Date.now

  /** Reports share the persisted fixed windows of uploads, keyed per IP. */
  const window = (ip: string): WindowRule => ({
    key: `report:${ipKey(ip)}`,
    limit: config.limits.reportsPerHour,
    durationMs: HOUR_MS,
    enforce: true,
    counts: 'reports',
  })

  function adminView(row: ReportRow) {
    const { report, image } = row
    return {
      id: report.id,
      imageId: report.imageId,
      reason: report.reason,
      details: report.details,
      status: report.status,
      createdAt: iso(report.createdAt),
      resolvedAt: report.resolvedAt ? iso(report.resolvedAt) : null,
      openReports: row.openReports,
      image: image ? pickImage(imageService.fields(image), IMAGE_SHAPES.reported) : null,
      owner: row.owner && row.owner.id !== null ? row.owner : null,
    }
  }

  async function viewOf(id: number) {
    const [row] = await reportRows(db, { id })
    if (!row) throw notFound('Report not found')
    return adminView(row)
  }

  async function get(id: number): Promise<Report> {
    const report = await findReport(db, id)
    if (!report) throw notFound('Report not found')
    return report
  }

  return {
    /** Files a report about a live image; limited per IP with the upload windows' mechanism. */
    async create(input: { imageId: string; reason: ReportReason; details?: string }, ip: string) {
      const rule = window(ip)
      const now = windowNow()
      await run(checkWindow(db, rule, 1, now))
      const image = await imageService.find(input.imageId)
      if (!image) throw notFound('Image not found')
      const details = input.details?.trim() || null
      const { report, state } = await transaction(db, function* (tx) {
        const state = yield* consumeWindow(tx, rule, 1, now)
        const report = yield* insertReport(tx, {
          imageId: image.id,
          imageOwnerId: image.userId,
          imageSha256: image.sha256,
          imagePhash: image.phash,
          reason: input.reason,
          details,
          reporterIp: ip,
        })
        return { report, state }
      })
      return {
        report: { id: report.id, imageId: report.imageId, reason: report.reason, createdAt: iso(report.createdAt) },
        /** The report window after this one, for the answer's RateLimit-* headers. */
        window: state,
      }
    },

    async list(opts: { status: ReportStatus; page: number; limit: number; offset: number }) {
      const [total, rows] = await Promise.all([
        countReports(db, opts.status),
        reportRows(db, { status: opts.status }, opts),
      ])
      return {
        success: true as const,
        reports: rows.map(adminView),
        total,
        page: opts.page,
        limit: opts.limit,
        pages: pageCount(total, opts.limit),
      }
    },

    /** Closes an open report without doing anything to the image. */
    async dismiss(admin: User, id: number) {
      const report = await get(id)
      if (report.status !== 'open') throw conflict(`Report is already ${report.status}`)
      await dismissReport(db, id, admin.id)
      return { success: true as const, report: await viewOf(id) }
    },

    /**
     * Acts on a report in one step: deletes the image (files included), blocks the picture from being uploaded again,
     * optionally bans its owner, and marks every open report of the image (and this one) actioned. It also works when
     * the image is already gone: the report kept its hash and owner.
     */
    async action(admin: User, id: number, opts: { banOwner?: boolean; keepThumbnail?: boolean }) {
      const report = await get(id)
      if (report.status === 'actioned') throw conflict('Report is already actioned')
      // Any row, live or expired-but-not-yet-swept: either way its files go now.
      const image = (await run(anyImage(db, report.imageId))) ?? null
      const ownerId = image ? image.userId : report.imageOwnerId
      const banOwner = (opts.banOwner ?? false) && ownerId !== null
      if (banOwner && ownerId === admin.id) throw badRequest('You cannot ban yourself')

      const picture = await blocks.pictureOf(
        image,
        { sha256: report.imageSha256, phash: report.imagePhash },
        opts.keepThumbnail,
      )

      let reportsActioned = 0
      const apply = function* (tx: Tx) {
        yield* blocks.record(tx, {
          ...picture,
          reason: `Abuse report #${report.id} (${report.reason})`,
          source: 'report',
          imageId: report.imageId,
          reportId: report.id,
        })
        reportsActioned = yield* actionReports(tx, report, admin.id)
        if (banOwner) {
          yield* setUserFields(tx, ownerId!, { banned: true })
          // A ban ends every session of the account, as in PATCH /api/admin/users/:id.
          yield* deleteSessionsOf(tx, ownerId!)
        }
      }
      if (image) await imageService.remove(image, apply)
      else await transaction(db, apply)

      return {
        success: true as const,
        report: await viewOf(id),
        imageDeleted: image !== null,
        ownerBanned: banOwner,
        reportsActioned,
      }
    },
  }
}
