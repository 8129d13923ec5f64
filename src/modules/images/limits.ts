import { and, eq, sql } from 'drizzle-orm'
import type { Config } from '../../config'
import type { Db } from '../../db/client'
import { images, uploadWindows, type User } from '../../db/schema'
import { HttpError } from '../../http/errors'
import { HOUR_MS } from '../../lib/time'
import { liveImage } from './live'

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

/** A fixed upload window: it starts at the first upload after the previous one ended. */
export interface WindowRule {
  key: string
  limit: number
  durationMs: number
  /** Admins are counted (so /me can report usage) but never refused. */
  enforce: boolean
  /** What is counted, plural, for the 429 message of windows other than uploads (e.g. `reports`). */
  counts?: string
}

export interface UploadPolicy {
  owner: User | null
  maxFiles: number
  /** null: unlimited */
  maxFileSize: number | null
  /** null: unlimited */
  storageLimit: number | null
  window: WindowRule
}

export function accountPolicy(config: Config, user: User): UploadPolicy {
  const admin = user.role === 'admin'
  const { limits } = config
  return {
    owner: user,
    maxFiles: admin ? limits.admin.maxFiles : limits.user.maxFiles,
    maxFileSize: admin ? null : limits.user.maxFileSize,
    storageLimit: admin ? null : user.emailVerified ? limits.storage.verified : limits.storage.unverified,
    window: { key: `user:${user.id}`, limit: limits.uploadsPerHour, durationMs: HOUR_MS, enforce: !admin },
  }
}

export function anonymousPolicy(config: Config, ip: string): UploadPolicy {
  const anon = config.limits.anonymous
  return {
    owner: null,
    maxFiles: anon.maxFiles,
    maxFileSize: anon.maxFileSize,
    storageLimit: null,
    window: { key: `ip:${ip}`, limit: anon.uploads, durationMs: anon.windowSeconds * 1000, enforce: true },
  }
}

export interface WindowState {
  limit: number
  used: number
  remaining: number
  resetSeconds: number
}

function currentWindow(db: Db | Tx, rule: WindowRule, now: number) {
  const row = db.select().from(uploadWindows).where(eq(uploadWindows.key, rule.key)).get()
  if (!row || row.windowStart.getTime() + rule.durationMs <= now) return { start: now, used: 0, fresh: true }
  return { start: row.windowStart.getTime(), used: row.used, fresh: false }
}

export function windowState(db: Db | Tx, rule: WindowRule, now = Date.now()): WindowState {
  const w = currentWindow(db, rule, now)
  return {
    limit: rule.limit,
    used: w.used,
    remaining: Math.max(0, rule.limit - w.used),
    // A window that has not started yet would last its full duration from the next upload.
    resetSeconds: w.fresh ? Math.ceil(rule.durationMs / 1000) : Math.max(0, Math.ceil((w.start + rule.durationMs - now) / 1000)),
  }
}

export function rateLimitHeaders(state: WindowState): Record<string, string> {
  return {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  }
}

export function rateLimited(state: WindowState, message: string) {
  return new HttpError(429, message, { retryAfter: state.resetSeconds }, { 'Retry-After': String(Math.max(1, state.resetSeconds)), ...rateLimitHeaders(state) })
}

/** Refuses a batch of `files` that does not fit in what the window has left. */
export function checkWindow(db: Db | Tx, rule: WindowRule, files: number, now = Date.now()) {
  const state = windowState(db, rule, now)
  if (rule.enforce && files > state.remaining) {
    throw rateLimited(
      state,
      rule.counts
        ? `Rate limit exceeded: ${state.remaining} of ${rule.limit} ${rule.counts} left in this window`
        : `Upload rate limit exceeded: ${state.remaining} of ${rule.limit} uploads left in this window`,
    )
  }
  return state
}

/** Checks and counts a batch in one step; must run inside the transaction that stores the batch. */
export function consumeWindow(tx: Tx, rule: WindowRule, files: number, now = Date.now()): WindowState {
  checkWindow(tx, rule, files, now)
  const w = currentWindow(tx, rule, now)
  tx.insert(uploadWindows)
    .values({ key: rule.key, windowStart: new Date(w.start), used: w.used + files })
    .onConflictDoUpdate({ target: uploadWindows.key, set: { windowStart: new Date(w.start), used: w.used + files } })
    .run()
  return windowState(tx, rule, now)
}

/** Bytes of the owner's live images: an expired image stops counting at once, before the sweeper removes it. */
export function storageUsed(db: Db | Tx, userId: number, now = Date.now()): number {
  return (
    db
      .select({ used: sql<number>`coalesce(sum(${images.size}), 0)` })
      .from(images)
      .where(and(eq(images.userId, userId), liveImage(now)))
      .get()?.used ?? 0
  )
}

/** Refuses a batch that would take the owner past their storage limit. */
export function checkQuota(db: Db | Tx, policy: UploadPolicy, incomingBytes: number) {
  if (!policy.owner || policy.storageLimit === null) return
  const used = storageUsed(db, policy.owner.id)
  if (used + incomingBytes > policy.storageLimit) {
    throw new HttpError(413, `Storage limit reached: ${Math.max(0, policy.storageLimit - used)} of ${policy.storageLimit} bytes left`)
  }
}
