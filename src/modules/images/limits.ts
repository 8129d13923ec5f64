import type { Config } from '../../config'
import { type Db, run, type Step, type Tx } from '../../db/client'
import type { User } from '../../db/schema'
import { QuotaExceeded, RateLimited } from '../../errors'
import { ipKey } from '../../http/client-ip'
import { sizeText } from '../../lib/size'
import { HOUR_MS } from '../../lib/time'
import { refuseOverWindow, tally, type WindowRule, type WindowState, windowState } from '../../limits/windows'
import { findUserById } from '../auth/repository'
import { ownerTotals } from './counts'
import { anyImage } from './repository'

/**
 * The upload limits and which apply to whom: an account's or an address's policy (files, sizes, storage quota, its
 * upload window), the refused-uploads windows, and what lets an upload start. The windows themselves: src/limits.
 */

export interface UploadPolicy {
  owner: User | null
  maxFiles: number
  /** null: unlimited */
  maxFileSize: number | null
  /** null: unlimited */
  storageLimit: number | null
  window: WindowRule
}

/** An account's storage limit (bytes) and uploads per hour; null: unlimited. */
export interface AccountLimits {
  storageLimit: number | null
  uploadsPerHour: number | null
}

/**
 * The account's limits: an admin's override on the account (PATCH /api/admin/users/:id) where it has one, else its
 * tier's (admin: unlimited; verified or unverified email). An override binds admins' accounts too: an operator who set
 * one meant it. Read from the account's row on every request, so a change applies to the next upload.
 */
export function accountLimits(config: Config, user: User): AccountLimits {
  const { limits } = config
  const admin = user.role === 'admin'
  const tierStorage = admin ? null : user.emailVerified ? limits.storage.verified : limits.storage.unverified
  return {
    storageLimit: user.storageLimit ?? tierStorage,
    uploadsPerHour: user.uploadsPerHour ?? (admin ? null : limits.uploadsPerHour),
  }
}

export function accountPolicy(config: Config, user: User): UploadPolicy {
  const admin = user.role === 'admin'
  const { limits } = config
  const { storageLimit, uploadsPerHour } = accountLimits(config, user)
  return {
    owner: user,
    maxFiles: admin ? limits.admin.maxFiles : limits.user.maxFiles,
    maxFileSize: admin ? null : limits.user.maxFileSize,
    storageLimit,
    // An unlimited window is still counted against the configured figure, so /api/v1/me can report usage.
    window: {
      key: `user:${user.id}`,
      limit: uploadsPerHour ?? limits.uploadsPerHour,
      durationMs: HOUR_MS,
      enforce: uploadsPerHour !== null,
    },
  }
}

export function anonymousPolicy(config: Config, ip: string): UploadPolicy {
  const anon = config.limits.anonymous
  return {
    owner: null,
    maxFiles: anon.maxFiles,
    maxFileSize: anon.maxFileSize,
    storageLimit: null,
    window: { key: `ip:${ipKey(ip)}`, limit: anon.uploads, durationMs: anon.windowSeconds * 1000, enforce: true },
  }
}

/**
 * Refuses a batch of `incomingBytes` that would take the owner past their storage limit, given `used` bytes stored
 * and `held` bytes of admitted uploads set aside.
 */
function refuseOverQuota(policy: UploadPolicy, used: number, incomingBytes: number, held: number) {
  if (policy.storageLimit === null) return
  const counted = used + held
  if (counted + incomingBytes > policy.storageLimit) {
    throw new QuotaExceeded(
      `Storage limit reached: ${sizeText(Math.max(0, policy.storageLimit - counted))} of ${sizeText(policy.storageLimit)} left`,
    )
  }
}

/** The bytes the policy's owner stores now, or null when no quota applies (anonymous, unlimited). */
function* quotaUsed(db: Db | Tx, policy: UploadPolicy): Step<number | null> {
  if (!policy.owner || policy.storageLimit === null) return null
  return (yield* ownerTotals(db, policy.owner.id, Date.now())).bytes
}

/** Refuses a batch that would take the owner past their storage limit, `held` bytes of admitted uploads set aside. */
export function* checkQuota(db: Db | Tx, policy: UploadPolicy, incomingBytes: number, held = 0): Step<void> {
  const used = yield* quotaUsed(db, policy)
  if (used !== null) refuseOverQuota(policy, used, incomingBytes, held)
}

/**
 * The refused-work windows of a sender: its address (when known: rows older than the column have none) and its
 * account. Admins are trusted like the operator: their refused work counts against nothing.
 */
function refusedRules(config: Config, owner: User | null, ip: string | null): WindowRule[] {
  if (owner?.role === 'admin') return []
  const { perWindow, windowSeconds } = config.limits.refused
  const rule = (key: string, who: string): WindowRule => ({
    key,
    limit: perWindow,
    durationMs: windowSeconds * 1000,
    enforce: true,
    message: `Too many refused uploads from this ${who} (files that were not images the service could accept)`,
  })
  const rules = ip === null ? [] : [rule(`refused:ip:${ipKey(ip)}`, 'address')]
  if (owner) rules.push(rule(`refused:user:${owner.id}`, 'account'))
  return rules
}

/**
 * Counts work refused once it began against its sender's address and account: an upload whose files were refused
 * after processing began (or were blocked), or a size of a stored image that could not be made (src/modules/variants).
 */
export async function countRefused(
  db: Db,
  config: Config,
  sender: { owner: User | null; ip: string | null },
  now: number,
) {
  await tally(db, refusedRules(config, sender.owner, sender.ip), 1, now)
}

/**
 * Charges a size of a stored image that could not be made to the image's sender, as a refused upload: the address it
 * was uploaded from and its account.
 */
export function imageSenderCharge(db: Db, config: Config, now: () => number) {
  return async (imageId: string) => {
    const image = await run(anyImage(db, imageId))
    if (!image) return
    const owner = image.userId === null ? null : ((await run(findUserById(db, image.userId))) ?? null)
    await countRefused(db, config, { owner, ip: image.uploaderIp }, now())
  }
}

/** How long a client refused by the in-flight cap should wait: an upload takes about a second to process. */
const IN_FLIGHT_RETRY_SECONDS = 2

/** An admitted upload's share of the in-flight caps, the window and the quota, until it ends. */
export interface AdmittedUpload {
  /**
   * The body is read: `files` files of `bytes` bytes replace the one file held so far. Refuses (429, 413) before any
   * decoding what no longer fits beside what other admitted uploads hold.
   */
  hold(files: number, bytes: number): Promise<void>
  /** The batch is committed: the database counts it now, so it holds nothing more in memory. */
  committed(): void
  /** The request is over (stored, refused, failed or cut off); safe to call more than once. */
  release(): void
}

/**
 * What lets an upload start, before its body is read, for every upload door (both multipart endpoints, tus):
 * - the refused-uploads windows: files refused after processing began count per IP and per account, and past the
 *   limit that IP or account may not start another upload (the upload windows themselves count only stored files);
 * - the in-flight caps per IP and per account (admins: the IP cap only);
 * - the upload window and the storage quota, counting what admitted uploads will use: one file each until their body
 *   is read, then their real files and bytes. The transaction that stores a batch stays the exact, final check.
 * Holds and in-flight counts live in this process's memory; everything counted for good is in the database.
 * `now` is the windows' clock (tests step it).
 */
export function createUploadAdmission(db: Db, config: Config, now: () => number) {
  const inFlight = new Map<string, number>()
  /** Files that admitted uploads will count, per window key. */
  const heldFiles = new Map<string, number>()
  /** Bytes that admitted uploads will store, per owner. */
  const heldBytes = new Map<number, number>()

  function add<K>(map: Map<K, number>, key: K, delta: number) {
    const n = (map.get(key) ?? 0) + delta
    if (n > 0) map.set(key, n)
    else map.delete(key)
  }

  const isAdmin = (policy: UploadPolicy) => policy.owner?.role === 'admin'

  function slotsOf(policy: UploadPolicy, ip: string) {
    const { perIp, perAccount } = config.limits.inFlight
    const slots = [{ key: `ip:${ipKey(ip)}`, cap: perIp, per: 'from one address' }]
    if (policy.owner && !isAdmin(policy))
      slots.push({ key: `user:${policy.owner.id}`, cap: perAccount, per: 'per account' })
    return slots
  }

  const bytesHeld = (policy: UploadPolicy) => (policy.owner ? (heldBytes.get(policy.owner.id) ?? 0) : 0)

  /**
   * What the database holds for an upload's checks, read in one step: the refused windows' states, the upload window's
   * and (with `quota`) the bytes the owner stores. The checks themselves then run synchronously against the in-memory
   * holds, so a check and the hold it allows never interleave with another upload's.
   */
  function* countsOf(policy: UploadPolicy, ip: string, at: number, quota: boolean) {
    const refused: [WindowRule, WindowState][] = []
    for (const rule of refusedRules(config, policy.owner, ip)) refused.push([rule, yield* windowState(db, rule, at)])
    const window = yield* windowState(db, policy.window, at)
    const used = quota ? yield* quotaUsed(db, policy) : null
    return { refused, window, used }
  }

  function refuseRefused(refused: [WindowRule, WindowState][]) {
    for (const [rule, state] of refused) refuseOverWindow(rule, state, 1)
  }

  return {
    /**
     * Whether an upload of `bytes` could start now (a tus creation, which sends no data): the refused windows, the
     * upload window and the quota beside what admitted uploads hold. Holds nothing.
     */
    async check(policy: UploadPolicy, ip: string, bytes: number) {
      const counts = await run(countsOf(policy, ip, now(), true))
      refuseRefused(counts.refused)
      refuseOverWindow(policy.window, counts.window, 1, heldFiles.get(policy.window.key) ?? 0)
      if (counts.used !== null) refuseOverQuota(policy, counts.used, bytes, bytesHeld(policy))
    },

    /** Lets an upload start before its body is read (429 otherwise), holding one file of its window. */
    async admit(policy: UploadPolicy, ip: string): Promise<AdmittedUpload> {
      const counts = await run(countsOf(policy, ip, now(), false))
      // Synchronous from here: the in-flight counts and holds are checked and taken in one step.
      refuseRefused(counts.refused)
      const slots = slotsOf(policy, ip)
      for (const { key, cap, per } of slots) {
        if ((inFlight.get(key) ?? 0) >= cap) {
          const state = { limit: cap, used: cap, remaining: 0, resetSeconds: IN_FLIGHT_RETRY_SECONDS }
          throw new RateLimited(`Too many uploads at once: at most ${cap} ${per}; wait for one to finish`, state)
        }
      }
      const windowKey = policy.window.key
      refuseOverWindow(policy.window, counts.window, 1, heldFiles.get(windowKey) ?? 0)
      for (const { key } of slots) add(inFlight, key, 1)
      let files = 1
      let bytes = 0
      let released = false
      add(heldFiles, windowKey, files)
      const holdNothing = () => {
        add(heldFiles, windowKey, -files)
        if (policy.owner) add(heldBytes, policy.owner.id, -bytes)
        files = 0
        bytes = 0
      }
      return {
        async hold(newFiles: number, newBytes: number) {
          const [used, window] = await run(
            (function* () {
              return [yield* quotaUsed(db, policy), yield* windowState(db, policy.window, now())] as const
            })(),
          )
          // Released while the counts were read (the request is over): nothing more to hold.
          if (released) return
          // In the order of the transaction's own checks, so a batch is refused for the same reason either way.
          if (used !== null) refuseOverQuota(policy, used, newBytes, bytesHeld(policy) - bytes)
          refuseOverWindow(policy.window, window, newFiles, (heldFiles.get(windowKey) ?? 0) - files)
          add(heldFiles, windowKey, newFiles - files)
          if (policy.owner) add(heldBytes, policy.owner.id, newBytes - bytes)
          files = newFiles
          bytes = newBytes
        },
        committed: holdNothing,
        release() {
          if (released) return
          released = true
          holdNothing()
          for (const { key } of slots) add(inFlight, key, -1)
        },
      }
    },

    /** Counts a request whose files were refused after processing began (or were blocked), against its IP and account. */
    refused: (policy: UploadPolicy, ip: string) => countRefused(db, config, { owner: policy.owner, ip }, now()),
  }
}
