import { aliasedTable, and, count, desc, eq, or, sql } from 'drizzle-orm'
import type { Config } from '../../config'
import type { Db } from '../../db/client'
import { blockedHashes, type Image, images, type Report, reports, type User, users } from '../../db/schema'
import { badRequest, conflict, notFound } from '../../errors'
import { ipKey } from '../../http/client-ip'
import { pageCount } from '../../http/pagination'
import { HOUR_MS, iso } from '../../lib/time'
import { originalKey, type Storage } from '../../storage'
import { checkWindow, consumeWindow, type WindowRule } from '../images/limits'
import { liveImage } from '../images/live'
import type { ImageService } from '../images/service'
import type { REPORT_REASONS, REPORT_STATUSES } from './model'

export type ReportReason = (typeof REPORT_REASONS)[number]
export type ReportStatus = (typeof REPORT_STATUSES)[number]

export type ReportService = ReturnType<typeof createReportService>

/** SHA-256 (hex) of a stored file, streamed. */
async function hashOf(file: Blob): Promise<string> {
  const hasher = new Bun.CryptoHasher('sha256')
  for await (const chunk of file.stream()) hasher.update(chunk)
  return hasher.digest('hex')
}

export function createReportService(deps: {
  db: Db
  config: Config
  storage: Storage
  images: ImageService
  /** The report windows' clock (tests step it). */
  now?: () => number
}) {
  const { db, config, storage, images: imageService } = deps
  const windowNow = deps.now ?? Date.now
  const owners = aliasedTable(users, 'owner')

  /** Reports share the persisted fixed windows of uploads, keyed per IP. */
  const window = (ip: string): WindowRule => ({
    key: `report:${ipKey(ip)}`,
    limit: config.limits.reportsPerHour,
    durationMs: HOUR_MS,
    enforce: true,
    counts: 'reports',
  })

  type Row = {
    report: Report
    image: Image | null
    owner: { id: number; username: string; banned: boolean } | null
    openReports: number
  }

  // Qualified by hand: inside sql`` drizzle may render a column unqualified, and a bare image_id would be r2's own.
  const openOfSameImage = sql<number>`(select count(*) from ${reports} r2 where r2.image_id = "reports"."image_id" and r2.status = 'open')`

  function rows(where: ReturnType<typeof and>, page?: { limit: number; offset: number }): Row[] {
    const query = db
      .select({
        report: reports,
        image: images,
        owner: { id: owners.id, username: owners.username, banned: owners.banned },
        openReports: openOfSameImage,
      })
      .from(reports)
      // Only a live image is shown: an expired one is as gone to admins as to everyone else.
      .leftJoin(images, and(eq(images.id, reports.imageId), liveImage()))
      .leftJoin(owners, eq(owners.id, sql`coalesce(${images.userId}, ${reports.imageOwnerId})`))
      .where(where)
      .orderBy(desc(reports.createdAt), desc(reports.id))
    return (page ? query.limit(page.limit).offset(page.offset) : query).all() as Row[]
  }

  function adminView(row: Row) {
    const { report, image } = row
    const links = image ? imageService.links(image) : null
    return {
      id: report.id,
      imageId: report.imageId,
      reason: report.reason,
      details: report.details,
      status: report.status,
      createdAt: iso(report.createdAt),
      resolvedAt: report.resolvedAt ? iso(report.resolvedAt) : null,
      openReports: row.openReports,
      image:
        image && links
          ? {
              id: image.id,
              url: links.url,
              thumbnail: links.thumbnail,
              viewer: links.viewer,
              filename: image.filename,
              mime: image.mime,
              width: image.width,
              height: image.height,
              visibility: image.visibility,
              nsfw: image.nsfw,
              createdAt: iso(image.createdAt),
              expiresAt: image.expiresAt ? iso(image.expiresAt) : null,
            }
          : null,
      owner: row.owner && row.owner.id !== null ? row.owner : null,
    }
  }

  function viewOf(id: number) {
    const row = rows(eq(reports.id, id))[0]
    if (!row) throw notFound('Report not found')
    return adminView(row)
  }

  function get(id: number): Report {
    const report = db.select().from(reports).where(eq(reports.id, id)).get()
    if (!report) throw notFound('Report not found')
    return report
  }

  return {
    /** Files a report about a live image; limited per IP with the upload windows' mechanism. */
    create(input: { imageId: string; reason: ReportReason; details?: string }, ip: string) {
      const rule = window(ip)
      const now = windowNow()
      checkWindow(db, rule, 1, now)
      const image = imageService.find(input.imageId)
      if (!image) throw notFound('Image not found')
      const details = input.details?.trim() || null
      const { report, state } = db.transaction((tx) => {
        const state = consumeWindow(tx, rule, 1, now)
        const report = tx
          .insert(reports)
          .values({
            imageId: image.id,
            imageOwnerId: image.userId,
            imageSha256: image.sha256,
            reason: input.reason,
            details,
            reporterIp: ip,
          })
          .returning()
          .get()
        return { report, state }
      })
      return {
        report: { id: report.id, imageId: report.imageId, reason: report.reason, createdAt: iso(report.createdAt) },
        /** The report window after this one, for the answer's RateLimit-* headers. */
        window: state,
      }
    },

    list(opts: { status: ReportStatus; page: number; limit: number; offset: number }) {
      const where = eq(reports.status, opts.status)
      const total = db.select({ n: count() }).from(reports).where(where).get()?.n ?? 0
      return {
        success: true as const,
        reports: rows(where, opts).map(adminView),
        total,
        page: opts.page,
        limit: opts.limit,
        pages: pageCount(total, opts.limit),
      }
    },

    /** Closes an open report without doing anything to the image. */
    dismiss(admin: User, id: number) {
      const report = get(id)
      if (report.status !== 'open') throw conflict(`Report is already ${report.status}`)
      db.update(reports)
        .set({ status: 'dismissed', resolvedAt: new Date(), resolvedBy: admin.id })
        .where(and(eq(reports.id, id), eq(reports.status, 'open')))
        .run()
      return { success: true as const, report: viewOf(id) }
    },

    /**
     * Acts on a report in one step: deletes the image (files included), blocks its bytes from being uploaded again,
     * optionally bans its owner, and marks every open report of the image (and this one) actioned. It also works when
     * the image is already gone: the report kept its hash and owner.
     */
    async action(admin: User, id: number, opts: { banOwner?: boolean }) {
      const report = get(id)
      if (report.status === 'actioned') throw conflict('Report is already actioned')
      // Any row, live or expired-but-not-yet-swept: either way its files go now.
      const image = db.select().from(images).where(eq(images.id, report.imageId)).get() ?? null
      const ownerId = image ? image.userId : report.imageOwnerId
      const banOwner = (opts.banOwner ?? false) && ownerId !== null
      if (banOwner && ownerId === admin.id) throw badRequest('You cannot ban yourself')

      // The uploaded bytes, and the stored bytes when metadata stripping changed them: a copy saved from the direct
      // link and uploaded again is refused too.
      const hashes = new Set([report.imageSha256])
      if (image) {
        const file = storage.file(originalKey(image.id, image.ext))
        if (await file.exists()) hashes.add(await hashOf(file))
        hashes.add(image.sha256)
      }

      let reportsActioned = 0
      const apply = (tx: Parameters<Parameters<Db['transaction']>[0]>[0]) => {
        tx.insert(blockedHashes)
          .values([...hashes].map((sha256) => ({ sha256, imageId: report.imageId, reportId: report.id })))
          .onConflictDoNothing()
          .run()
        reportsActioned = tx
          .update(reports)
          .set({ status: 'actioned', resolvedAt: new Date(), resolvedBy: admin.id })
          .where(or(eq(reports.id, report.id), and(eq(reports.imageId, report.imageId), eq(reports.status, 'open'))))
          .returning({ id: reports.id })
          .all().length
        if (banOwner) tx.update(users).set({ banned: true }).where(eq(users.id, ownerId!)).run()
      }
      if (image) await imageService.remove(image, apply)
      else db.transaction(apply)

      return {
        success: true as const,
        report: viewOf(id),
        imageDeleted: image !== null,
        ownerBanned: banOwner,
        reportsActioned,
      }
    },
  }
}
