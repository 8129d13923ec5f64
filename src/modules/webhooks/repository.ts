import { and, count, eq } from 'drizzle-orm'
import type { Db, Tx } from '../../db/client'
import { type Webhook, webhooks } from '../../db/schema'

/** Every query of the webhooks table. */

export const findWebhook = (db: Db, id: number): Webhook | undefined =>
  db.select().from(webhooks).where(eq(webhooks.id, id)).get()

/** The user's webhooks, oldest first. */
export const webhooksOf = (db: Db, userId: number): Webhook[] =>
  db.select().from(webhooks).where(eq(webhooks.userId, userId)).orderBy(webhooks.id).all()

export const countWebhooks = (db: Db | Tx, userId: number): number =>
  db.select({ n: count() }).from(webhooks).where(eq(webhooks.userId, userId)).get()!.n

export const insertWebhook = (tx: Tx, values: typeof webhooks.$inferInsert): Webhook =>
  tx.insert(webhooks).values(values).returning().get()

/** Notes the outcome of the last delivery. */
export const recordDelivery = (db: Db, id: number, status: number, error: string | null) =>
  db
    .update(webhooks)
    .set({ lastDeliveryAt: new Date(), lastStatus: status, lastError: error })
    .where(eq(webhooks.id, id))
    .run()

/** Deletes one of the user's webhooks; returns whether there was one. */
export const deleteWebhook = (db: Db, id: number, userId: number): boolean =>
  db
    .delete(webhooks)
    .where(and(eq(webhooks.id, id), eq(webhooks.userId, userId)))
    .returning()
    .get() !== undefined
