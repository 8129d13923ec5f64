import { and, count, eq } from 'drizzle-orm'
import { type Db, q, type Step, type Tx } from '../../db/client'
import { type Webhook, webhooks } from '../../db/schema'

/** Every query of the webhooks table. */

export const findWebhook = async (db: Db, id: number): Promise<Webhook | undefined> =>
  (await db.select().from(webhooks).where(eq(webhooks.id, id)))[0]

/** The user's webhooks, oldest first. */
export const webhooksOf = async (db: Db, userId: number): Promise<Webhook[]> =>
  await db.select().from(webhooks).where(eq(webhooks.userId, userId)).orderBy(webhooks.id)

export function* countWebhooks(db: Db | Tx, userId: number): Step<number> {
  return (yield* q(db.select({ n: count() }).from(webhooks).where(eq(webhooks.userId, userId))))[0]!.n
}

export function* insertWebhook(tx: Tx, values: typeof webhooks.$inferInsert): Step<Webhook> {
  return (yield* q(tx.insert(webhooks).values(values).returning()))[0]
}

/** Notes the outcome of the last delivery. */
export const recordDelivery = async (db: Db, id: number, status: number, error: string | null) =>
  await db
    .update(webhooks)
    .set({ lastDeliveryAt: new Date(), lastStatus: status, lastError: error })
    .where(eq(webhooks.id, id))

/** Deletes one of the user's webhooks; returns whether there was one. */
export const deleteWebhook = async (db: Db, id: number, userId: number): Promise<boolean> =>
  (
    await db
      .delete(webhooks)
      .where(and(eq(webhooks.id, id), eq(webhooks.userId, userId)))
      .returning()
  ).length > 0
