import type { Config } from '../config'
import { type Db, run, type Step, type Tx, transaction } from '../db/client'
import { RateLimited } from '../errors'
import { HOUR_MS } from '../lib/time'
import { log } from '../log'
import { deleteWindows, deleteWindowsStartedBefore, findWindow, saveWindow } from './repository'

/**
 * Rate windows, for every feature that counts something over time: uploads, refused uploads, login and password
 * guesses, reports. Each window's count is a row of upload_windows (./repository.ts), checked and counted in the
 * caller's transaction where a write depends on it.
 */

/** A fixed upload window: it starts at the first upload after the previous one ended. */
export interface WindowRule {
  key: string
  limit: number
  durationMs: number
  /** Admins are counted (so /me can report usage) but never refused. */
  enforce: boolean
  /** What is counted, plural, for the 429 message of windows other than uploads (e.g. `reports`). */
  counts?: string
  /** The 429 message of windows that count attempts rather than uploads (the wait is appended). */
  message?: string
}

/** A window of password guesses (logins, album passwords): all last the configured time and are always enforced. */
export const guessWindow = (
  guesses: { windowSeconds: number },
  key: string,
  limit: number,
  message: string,
): WindowRule => ({ key, limit, durationMs: guesses.windowSeconds * 1000, enforce: true, message })

export interface WindowState {
  limit: number
  used: number
  remaining: number
  resetSeconds: number
}

function* currentWindow(db: Db | Tx, rule: WindowRule, now: number): Step<Window> {
  const row = yield* findWindow(db, rule.key)
  if (!row || row.windowStart.getTime() + rule.durationMs <= now) return { start: now, used: 0, fresh: true }
  return { start: row.windowStart.getTime(), used: row.used, fresh: false }
}

export function* windowState(db: Db | Tx, rule: WindowRule, now: number): Step<WindowState> {
  return stateOf(rule, yield* currentWindow(db, rule, now), now)
}

function stateOf(rule: WindowRule, w: Window, now: number): WindowState {
  return {
    limit: rule.limit,
    used: w.used,
    remaining: Math.max(0, rule.limit - w.used),
    // A window that has not started yet would last its full duration from the next upload.
    resetSeconds: w.fresh
      ? Math.ceil(rule.durationMs / 1000)
      : Math.max(0, Math.ceil((w.start + rule.durationMs - now) / 1000)),
  }
}

/**
 * Refuses a batch of `files` that does not fit in what the window (in the state `state`) has left once `held` (files
 * other admitted uploads will count) is set aside.
 */
export function refuseOverWindow(rule: WindowRule, state: WindowState, files: number, held = 0) {
  if (rule.enforce && files + held > state.remaining) {
    const left = { ...state, remaining: Math.max(0, state.remaining - held) }
    throw new RateLimited(
      rule.message
        ? `${rule.message}: try again in ${Math.max(1, left.resetSeconds)} s`
        : rule.counts
          ? `Rate limit exceeded: ${left.remaining} of ${rule.limit} ${rule.counts} left in this window`
          : `Upload rate limit exceeded: ${left.remaining} of ${rule.limit} uploads left in this window`,
      left,
    )
  }
}

/**
 * Refuses a batch of `files` that does not fit in what the window has left once `held` (files other admitted uploads
 * will count) is set aside.
 */
export function* checkWindow(db: Db | Tx, rule: WindowRule, files: number, now: number, held = 0): Step<WindowState> {
  const state = yield* windowState(db, rule, now)
  refuseOverWindow(rule, state, files, held)
  return state
}

interface Window {
  start: number
  used: number
  /** No upload started it yet: it starts with the next one. */
  fresh: boolean
}

/** Adds `delta` to the count of window `w` (read just before); a count never goes below 0. Answers the window now. */
function* addTo(db: Db | Tx, key: string, w: Window, delta: number): Step<Window> {
  // Taking back from a window that has already ended has nothing to undo.
  if (w.fresh && delta <= 0) return w
  const counted = { start: w.start, used: Math.max(0, w.used + delta), fresh: false }
  yield* saveWindow(db, key, new Date(counted.start), counted.used)
  return counted
}

/** Adds `delta` to the window's count (a new window starts when the last one ended). */
function* countWindow(db: Db | Tx, rule: WindowRule, delta: number, now: number): Step<void> {
  yield* addTo(db, rule.key, yield* currentWindow(db, rule, now), delta)
}

/**
 * Checks and counts a batch in one step; must run inside the transaction that stores the batch. Reads the window once
 * (an upload's commit runs it: every query there is CPU of every upload).
 */
export function* consumeWindow(tx: Tx, rule: WindowRule, files: number, now: number): Step<WindowState> {
  const w = yield* currentWindow(tx, rule, now)
  refuseOverWindow(rule, stateOf(rule, w, now), files)
  return stateOf(rule, yield* addTo(tx, rule.key, w, files), now)
}

/**
 * Counting attempts is bookkeeping: a database that cannot take the write (a full disk, a read-only file) must not
 * turn the answer into a failure. The check before it still holds what was counted so far.
 */
export async function tally(db: Db, rules: WindowRule[], delta: number, now: number) {
  try {
    await transaction(db, function* (t) {
      for (const rule of rules) yield* countWindow(t, rule, delta, now)
    })
  } catch (error) {
    log.warn('could not count an attempt', { keys: rules.map((r) => r.key), error: String(error) })
  }
}

/**
 * An attempt that costs the server (a password to verify): refused (429) when any of its windows is used up,
 * otherwise counted in each before the work starts, so parallel attempts cannot all slip past the check: the check
 * and the count run in one transaction. A database that cannot take the count (see tally) still checks.
 */
export async function takeAttempt(db: Db, rules: WindowRule[], now: number) {
  try {
    await transaction(db, function* (t) {
      for (const rule of rules) yield* checkWindow(t, rule, 1, now)
      for (const rule of rules) yield* countWindow(t, rule, 1, now)
    })
  } catch (error) {
    if (error instanceof RateLimited) throw error
    // The count failed: the check alone, outside any write (its own failure is the answer's).
    for (const rule of rules) await run(checkWindow(db, rule, 1, now))
    log.warn('could not count an attempt', { keys: rules.map((r) => r.key), error: String(error) })
  }
}

/** An attempt that turned out right was no failure: it comes off its windows again. */
export async function refundAttempt(db: Db, rules: WindowRule[], now: number) {
  await tally(db, rules, -1, now)
}

/** Forgets a window (a successful login starts its account's count over). */
export async function clearWindows(db: Db, keys: string[]) {
  try {
    await deleteWindows(db, keys)
  } catch (error) {
    log.warn('could not clear a window', { keys, error: String(error) })
  }
}

/**
 * Removes window rows that have certainly ended: one started longer ago than the longest window of any rule (the
 * hourly upload and report windows, the anonymous, refused-upload and password windows). Without it, every address,
 * login name and album ever counted would keep its row for good. Returns how many went.
 */
export async function sweepEndedWindows(db: Db, config: Config, now: number): Promise<number> {
  const { anonymous, refused, guesses } = config.limits
  const longestMs = Math.max(
    HOUR_MS,
    Math.max(anonymous.windowSeconds, refused.windowSeconds, guesses.windowSeconds) * 1000,
  )
  return await deleteWindowsStartedBefore(db, now - longestMs)
}
