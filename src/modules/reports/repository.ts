import { aliasedTable, and, count, desc, eq, or, sql } from 'drizzle-orm'
import { type Db, q, type Step, type Tx } from '../../db/client'
import { type Image, type Report, reports } from '../../db/schema'
import { accounts } from '../auth/repository'
import { imageJoin } from '../images/repository'

/** Every query of the reports table. */

/** A report, its image while live, that image's owner (or the owner at report time), and the image's open reports. */
export type ReportRow = {
  report: Report
  image: Image | null
  owner: { id: number; username: string; banned: boolean } | null
  openReports: number
}

const owners = aliasedTable(accounts.table, 'owner')

// Qualified by hand: inside sql`` drizzle may render a column unqualified, and a bare image_id would be r2's own.
const openOfSameImage =
  sql<number>`(select count(*) from ${reports} r2 where r2.image_id = "reports"."image_id" and r2.status = 'open')`.mapWith(
    Number,
  )

/** The rows of one report by id, or of the reports with a status, newest first. */
export async function reportRows(
  db: Db,
  which: { id: number } | { status: Report['status'] },
  page?: { limit: number; offset: number },
): Promise<ReportRow[]> {
  const query = db
    .select({
      report: reports,
      image: imageJoin.table,
      owner: { id: owners.id, username: owners.username, banned: owners.banned },
      openReports: openOfSameImage,
    })
    .from(reports)
    // Only a live image is shown: an expired one is as gone to admins as to everyone else.
    .leftJoin(imageJoin.table, imageJoin.onLive(reports.imageId))
    .leftJoin(owners, eq(owners.id, sql`coalesce(${imageJoin.userId}, ${reports.imageOwnerId})`))
    .where('id' in which ? eq(reports.id, which.id) : eq(reports.status, which.status))
    .orderBy(desc(reports.createdAt), desc(reports.id))
  return (await (page ? query.limit(page.limit).offset(page.offset) : query)) as ReportRow[]
}

export const countReports = async (db: Db, status: Report['status']) =>
  (await db.select({ n: count() }).from(reports).where(eq(reports.status, status)))[0]?.n ?? 0

export const findReport = async (db: Db, id: number): Promise<Report | undefined> =>
  (await db.select().from(reports).where(eq(reports.id, id)))[0]

export function* insertReport(tx: Tx, values: typeof reports.$inferInsert): Step<Report> {
  return (yield* q(tx.insert(reports).values(values).returning()))[0]
}

/** Closes a report if it is still open. */
export const dismissReport = async (db: Db, id: number, adminId: number) =>
  await db
    .update(reports)
    .set({ status: 'dismissed', resolvedAt: new Date(), resolvedBy: adminId })
    .where(and(eq(reports.id, id), eq(reports.status, 'open')))

/** Marks the report and every open report of its image actioned; returns how many changed. */
export function* actionReports(tx: Tx, report: Report, adminId: number): Step<number> {
  return (yield* q(
    tx
      .update(reports)
      .set({ status: 'actioned', resolvedAt: new Date(), resolvedBy: adminId })
      .where(or(eq(reports.id, report.id), and(eq(reports.imageId, report.imageId), eq(reports.status, 'open'))))
      .returning({ id: reports.id }),
  )).length
}
