import { and, count, desc, eq, gt, isNull, lt, lte, ne, or, type SQL, sql } from 'drizzle-orm'
import { type Db, prepared, q, type Step, type Tx, transaction } from '../../db/client'
import {
  type ApiKey,
  apiKeys,
  authFlows,
  type Invite,
  invites,
  oidcIdentities,
  type Passkey,
  passkeys,
  recoveryCodes,
  type Session,
  sessions,
  type TotpSecret,
  totpSecrets,
  type User,
  users,
  verificationTokens,
} from '../../db/schema'

/**
 * Every query of the users, api_keys, verification_tokens, sessions, invites, passkeys, totp_secrets, recovery_codes
 * and oidc_identities tables.
 */

/**
 * What other features' queries join of an account (an image's or a report's owner: name and ban, by id); they read
 * accounts only through these columns.
 */
export const accounts = { table: users, id: users.id, username: users.username, banned: users.banned }

export function* findUserById(db: Db | Tx, id: number): Step<User | undefined> {
  return (yield* q(db.select().from(users).where(eq(users.id, id))))[0]
}

/** An account's name and whether it is banned. */
export function* findAccountName(db: Db | Tx, id: number) {
  return (yield* q(
    db.select({ username: users.username, banned: users.banned }).from(users).where(eq(users.id, id)),
  ))[0]
}

/** The account with this username, in any case. */
export function* findUserByName(db: Db | Tx, name: string): Step<User | undefined> {
  return (yield* q(db.select().from(users).where(sql`lower(${users.username}) = lower(${name})`)))[0]
}

/** The account that answers to `login` as its username or email, in any case. */
export function* findUserByLogin(db: Db | Tx, login: string): Step<User | undefined> {
  return (yield* q(
    db
      .select()
      .from(users)
      .where(sql`lower(${users.username}) = lower(${login}) OR lower(${users.email}) = lower(${login})`),
  ))[0]
}

/**
 * findUserByLogin prepared once, for the login route: every attempt looks its account up before it is counted, so a
 * burst of guesses costs no query building (`await findLogin(login)`).
 */
export function prepareFindUserByLogin(db: Db) {
  const login = sql.placeholder('login')
  const statement = prepared(
    'find_user_by_login',
    db
      .select()
      .from(users)
      .where(sql`lower(${users.username}) = lower(${login}) OR lower(${users.email}) = lower(${login})`),
  )
  return async (value: string): Promise<User | undefined> => (await statement.execute({ login: value }))[0]
}

/** The account with this email, in any case. */
export function* findUserByEmail(db: Db | Tx, email: string): Step<User | undefined> {
  return (yield* q(db.select().from(users).where(sql`lower(${users.email}) = lower(${email})`)))[0]
}

/** The account, if any, that already has this username or this email (in any case). */
export function* findTaken(db: Db | Tx, username: string, email: string) {
  return (yield* q(
    db
      .select({ username: users.username, email: users.email })
      .from(users)
      .where(sql`lower(${users.username}) = lower(${username}) OR lower(${users.email}) = lower(${email})`),
  ))[0]
}

export function* insertUser(db: Db | Tx, values: typeof users.$inferInsert): Step<User> {
  return (yield* q(db.insert(users).values(values).returning()))[0]
}

/** Changes an account and reads it back; undefined when there is none. */
export function* updateUser(db: Db | Tx, id: number, set: Partial<User>): Step<User | undefined> {
  return (yield* q(db.update(users).set(set).where(eq(users.id, id)).returning()))[0]
}

/** As updateUser, without reading the row back. */
export function* setUserFields(db: Db | Tx, id: number, set: Partial<User>) {
  return yield* q(db.update(users).set(set).where(eq(users.id, id)))
}

/**
 * One page of accounts, newest first, and how many match: `q` narrows to usernames and emails containing it.
 * `columnsOf` adds columns computed from the account's id (other features' totals, as correlated subqueries).
 */
export async function usersPage<E extends Record<string, SQL>>(
  db: Db,
  opts: { q?: string; limit: number; offset: number },
  columnsOf: (userId: SQL) => E,
) {
  const pattern = opts.q ? `%${opts.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null
  const filter = pattern
    ? sql`(lower(${users.username}) LIKE ${pattern} ESCAPE '\\' OR lower(${users.email}) LIKE ${pattern} ESCAPE '\\')`
    : undefined
  const [totalRow] = await db.select({ n: count() }).from(users).where(filter)
  const rows = await db
    .select({ user: users, ...columnsOf(sql`${users}.${sql.identifier(users.id.name)}`) })
    .from(users)
    .where(filter)
    .orderBy(desc(users.id))
    .limit(opts.limit)
    .offset(opts.offset)
  return { rows, total: totalRow?.n ?? 0 }
}

/** Whether any account is an admin (the start line says how to make the first one). */
export const anyAdmin = async (db: Db): Promise<boolean> =>
  (await db.select({ id: users.id }).from(users).where(eq(users.role, 'admin')).limit(1)).length > 0

/** Whether an admin other than `userId` exists (the last admin may not leave). */
export function* otherAdmin(db: Db | Tx, userId: number): Step<boolean> {
  return (
    (yield* q(
      db
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.role, 'admin'), ne(users.id, userId)))
        .limit(1),
    )).length > 0
  )
}

/** Ends every way into the account: its sessions and its API keys. */
export function* deleteSessionsAndKeys(tx: Tx, userId: number) {
  yield* deleteSessionsOf(tx, userId)
  yield* q(tx.delete(apiKeys).where(eq(apiKeys.userId, userId)))
}

/**
 * Deletes the account's row; what it still owns goes with it by the foreign keys (albums, embed profiles, webhooks,
 * passkeys, two-factor, resumable uploads). Returns whether there was one.
 */
export function* deleteUserRow(tx: Tx, userId: number): Step<boolean> {
  return (yield* q(tx.delete(users).where(eq(users.id, userId)).returning({ id: users.id }))).length > 0
}

/** Up to `limit` account ids above `after`, in order (a walk over every account in batches). */
export const accountIdsAfter = async (db: Db, after: number, limit: number): Promise<number[]> =>
  (await db.select({ id: users.id }).from(users).where(gt(users.id, after)).orderBy(users.id).limit(limit)).map(
    (r) => r.id,
  )

/** The account behind an API key's secret hash, and the key's id. */
export const findKeyOwner = async (db: Db, secretHash: string) =>
  (
    await db
      .select({ user: users, keyId: apiKeys.id })
      .from(apiKeys)
      .innerJoin(users, eq(users.id, apiKeys.userId))
      .where(eq(apiKeys.secretHash, secretHash))
  )[0]

/** Writes the keys' last-use times (in the caller's transaction). */
export function* writeKeyUses(tx: Tx, batch: [id: number, at: number][]): Step<void> {
  for (const [id, at] of batch)
    yield* q(
      tx
        .update(apiKeys)
        .set({ lastUsedAt: new Date(at) })
        .where(eq(apiKeys.id, id)),
    )
}

/** The user's API keys, newest first. */
export const keysOf = async (db: Db, userId: number): Promise<ApiKey[]> =>
  await db.select().from(apiKeys).where(eq(apiKeys.userId, userId)).orderBy(desc(apiKeys.id))

export const insertKey = async (db: Db, values: typeof apiKeys.$inferInsert): Promise<ApiKey> =>
  (await db.insert(apiKeys).values(values).returning())[0]

/** Deletes one of the user's keys; returns whether there was one. */
export const deleteKey = async (db: Db, id: number, userId: number): Promise<boolean> =>
  (
    await db
      .delete(apiKeys)
      .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, userId)))
      .returning({ id: apiKeys.id })
  ).length > 0

export const insertVerification = async (db: Db, values: typeof verificationTokens.$inferInsert) =>
  await db.insert(verificationTokens).values(values)

type Purpose = (typeof verificationTokens.$inferSelect)['purpose']

/** An emailed token of this purpose (a reset token does not verify an address, nor the reverse). */
export const findVerification = async (db: Db, tokenHash: string, purpose: Purpose) =>
  (
    await db
      .select()
      .from(verificationTokens)
      .where(and(eq(verificationTokens.tokenHash, tokenHash), eq(verificationTokens.purpose, purpose)))
  )[0]

/**
 * Claims an unused token with a conditional update, which makes it single-use even under concurrent requests;
 * returns its account's id, or undefined when it was already used.
 */
export function* claimVerification(tx: Tx, tokenHash: string, usedAt: Date) {
  return (yield* q(
    tx
      .update(verificationTokens)
      .set({ usedAt })
      .where(and(eq(verificationTokens.tokenHash, tokenHash), isNull(verificationTokens.usedAt)))
      .returning({ userId: verificationTokens.userId }),
  ))[0]
}

/** The user's passkeys, newest first. */
export const passkeysOf = async (db: Db, userId: number): Promise<Passkey[]> =>
  await db.select().from(passkeys).where(eq(passkeys.userId, userId)).orderBy(desc(passkeys.id))

/** The passkey with this credential id, and its account. */
export const findPasskeyOwner = async (db: Db, credentialId: string) =>
  (
    await db
      .select({ passkey: passkeys, user: users })
      .from(passkeys)
      .innerJoin(users, eq(users.id, passkeys.userId))
      .where(eq(passkeys.credentialId, credentialId))
  )[0]

export const insertPasskey = async (db: Db, values: typeof passkeys.$inferInsert): Promise<Passkey> =>
  (await db.insert(passkeys).values(values).returning())[0]

/** Notes a sign-in: the authenticator's new counter and the time. */
export const notePasskeyUse = async (db: Db, id: number, counter: number, at: Date) =>
  await db.update(passkeys).set({ counter, lastUsedAt: at }).where(eq(passkeys.id, id))

/** Deletes one of the user's passkeys; returns whether there was one. */
export const deletePasskey = async (db: Db, id: number, userId: number): Promise<boolean> =>
  (
    await db
      .delete(passkeys)
      .where(and(eq(passkeys.id, id), eq(passkeys.userId, userId)))
      .returning({ id: passkeys.id })
  ).length > 0
export function* findTotp(db: Db | Tx, userId: number): Step<TotpSecret | undefined> {
  return (yield* q(db.select().from(totpSecrets).where(eq(totpSecrets.userId, userId))))[0]
}

/** A new secret being set up (not enabled): it replaces an earlier one that was never confirmed. */
export const savePendingTotp = async (db: Db, userId: number, secret: string) =>
  await db
    .insert(totpSecrets)
    .values({ userId, secret })
    .onConflictDoUpdate({ target: totpSecrets.userId, set: { secret, enabledAt: null, lastStep: null } })

/**
 * Records `step` as the last one used, only when it is later than the last: false means a code of that step (or a
 * later one) was accepted already, so the code is a replay. A conditional update, so two requests racing with one code
 * cannot both pass.
 */
export function* claimTotpStep(db: Db | Tx, userId: number, step: number) {
  return (
    (yield* q(
      db
        .update(totpSecrets)
        .set({ lastStep: step })
        .where(and(eq(totpSecrets.userId, userId), or(isNull(totpSecrets.lastStep), lt(totpSecrets.lastStep, step))))
        .returning({ userId: totpSecrets.userId }),
    )).length > 0
  )
}

/** Turns TOTP on (with its first accepted step) and replaces the recovery codes, in one transaction. */
export function enableTotp(db: Db, userId: number, step: number, codeHashes: string[], at: Date) {
  return transaction(db, function* (tx) {
    yield* q(tx.update(totpSecrets).set({ enabledAt: at, lastStep: step }).where(eq(totpSecrets.userId, userId)))
    yield* q(tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)))
    yield* q(tx.insert(recoveryCodes).values(codeHashes.map((codeHash) => ({ codeHash, userId }))))
  })
}

/** Turns TOTP off: the secret and the recovery codes go. */
export function deleteTotp(db: Db, userId: number) {
  return transaction(db, function* (tx) {
    yield* q(tx.delete(totpSecrets).where(eq(totpSecrets.userId, userId)))
    yield* q(tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)))
  })
}

/** Uses one of the account's unused recovery codes (single-use even under concurrent requests); whether it was one. */
export const claimRecoveryCode = async (db: Db, userId: number, codeHash: string, usedAt: Date) =>
  (
    await db
      .update(recoveryCodes)
      .set({ usedAt })
      .where(and(eq(recoveryCodes.codeHash, codeHash), eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)))
      .returning({ userId: recoveryCodes.userId })
  ).length > 0

/** How many of the account's recovery codes are left. */
export const recoveryCodesLeft = async (db: Db, userId: number) =>
  (
    await db
      .select({ n: count() })
      .from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)))
  )[0]?.n ?? 0

/** The account an OIDC identity signs in to. */
export const findIdentityUser = async (db: Db, issuer: string, subject: string): Promise<User | undefined> =>
  (
    await db
      .select({ user: users })
      .from(oidcIdentities)
      .innerJoin(users, eq(users.id, oidcIdentities.userId))
      .where(and(eq(oidcIdentities.issuer, issuer), eq(oidcIdentities.subject, subject)))
  )[0]?.user

export function* insertIdentity(db: Db | Tx, values: typeof oidcIdentities.$inferInsert) {
  return yield* q(db.insert(oidcIdentities).values(values))
}
/** Removes emailed tokens past their expiry. */
type FlowKind = (typeof authFlows.$inferSelect)['kind']

/**
 * Keeps a ceremony or sign-in in progress (`data`: JSON) until `expiresAt`, under its one-use key. At most `keep` of a
 * kind wait: past it the ones that end first go, all those ending in the same millisecond as the last to go (a flood
 * of started ceremonies cannot grow the table without bound).
 */
export function saveFlow(db: Db, flow: { key: string; kind: FlowKind; data: unknown; expiresAt: Date }, keep: number) {
  return transaction(db, function* (tx) {
    const { key, kind, data, expiresAt } = flow
    yield* q(tx.insert(authFlows).values({ key, kind, data: JSON.stringify(data), expiresAt }))
    const [cutoff] = yield* q(
      tx
        .select({ expiresAt: authFlows.expiresAt })
        .from(authFlows)
        .where(eq(authFlows.kind, kind))
        .orderBy(desc(authFlows.expiresAt))
        .limit(1)
        .offset(keep),
    )
    if (cutoff)
      yield* q(tx.delete(authFlows).where(and(eq(authFlows.kind, kind), lte(authFlows.expiresAt, cutoff.expiresAt))))
  })
}

/**
 * Takes a flow of this kind, unexpired at `now`: deleted as it is read (one statement), so only one request, on any
 * instance, ever gets it. Undefined when there was none (or it had expired, or was of another kind).
 */
export async function takeFlow<T>(db: Db, key: string, kind: FlowKind, now: Date): Promise<T | undefined> {
  const [row] = await db.delete(authFlows).where(eq(authFlows.key, key)).returning()
  if (!row || row.kind !== kind || row.expiresAt <= now) return undefined
  return JSON.parse(row.data) as T
}

/** Removes ceremonies and sign-ins never finished. */
export const deleteExpiredFlows = async (db: Db, now: Date) =>
  await db.delete(authFlows).where(lt(authFlows.expiresAt, now))

export const deleteExpiredVerifications = async (db: Db, now: Date) =>
  await db.delete(verificationTokens).where(lt(verificationTokens.expiresAt, now))

export function* insertSession(db: Db | Tx, values: typeof sessions.$inferInsert) {
  return yield* q(db.insert(sessions).values(values))
}

/** Whether the user has this session (not yet ended). */
export const hasSession = async (db: Db, userId: number, sessionId: string): Promise<boolean> =>
  (
    await db
      .select({ id: sessions.id })
      .from(sessions)
      .where(and(eq(sessions.id, sessionId), eq(sessions.userId, userId)))
  ).length > 0

/** The user's sessions not yet expired, most recently started first. */
export const sessionsOf = async (db: Db, userId: number, now: Date): Promise<Session[]> =>
  await db
    .select()
    .from(sessions)
    .where(and(eq(sessions.userId, userId), gt(sessions.expiresAt, now)))
    .orderBy(desc(sessions.createdAt))

/** Ends one of the user's sessions; returns whether there was one. */
export function* deleteSession(db: Db | Tx, id: string, userId: number): Step<boolean> {
  return (
    (yield* q(
      db
        .delete(sessions)
        .where(and(eq(sessions.id, id), eq(sessions.userId, userId)))
        .returning({ id: sessions.id }),
    )).length > 0
  )
}

/** Ends every session of the user, but `keep` when given. */
export function* deleteSessionsOf(db: Db | Tx, userId: number, keep?: string) {
  return yield* q(
    db.delete(sessions).where(and(eq(sessions.userId, userId), keep === undefined ? undefined : ne(sessions.id, keep))),
  )
}

/** Removes sessions whose JWT has expired. */
export const deleteExpiredSessions = async (db: Db, now: Date) =>
  await db.delete(sessions).where(lt(sessions.expiresAt, now))

/** Writes the sessions' last-use times in one transaction (sessions ended meanwhile are simply not found). */
export function* writeSessionUses(tx: Tx, batch: [id: string, at: number][]): Step<void> {
  for (const [id, at] of batch)
    yield* q(
      tx
        .update(sessions)
        .set({ lastUsedAt: new Date(at) })
        .where(eq(sessions.id, id)),
    )
}

export const insertInvite = async (db: Db, values: typeof invites.$inferInsert): Promise<Invite> =>
  (await db.insert(invites).values(values).returning())[0]

/** Every invite, newest first. */
export const allInvites = async (db: Db): Promise<Invite[]> => await db.select().from(invites).orderBy(desc(invites.id))

/** Deletes the invite with this id or this code; returns whether there was one. */
export const deleteInvite = async (db: Db, idOrCode: string): Promise<boolean> =>
  (
    await db
      .delete(invites)
      .where(
        /^\d+$/.test(idOrCode)
          ? or(eq(invites.id, Number(idOrCode)), eq(invites.code, idOrCode))
          : eq(invites.code, idOrCode),
      )
      .returning({ id: invites.id })
  ).length > 0

/**
 * Takes one use of a live invite with a conditional update, so that parallel registrations cannot use it more often
 * than it allows; returns whether it was taken.
 */
export function* claimInvite(tx: Tx, code: string, now: Date): Step<boolean> {
  return (
    (yield* q(
      tx
        .update(invites)
        .set({ used: sql`${invites.used} + 1` })
        .where(
          and(
            eq(invites.code, code),
            lt(invites.used, invites.maxUses),
            or(isNull(invites.expiresAt), gt(invites.expiresAt, now)),
          ),
        )
        .returning({ id: invites.id }),
    )).length > 0
  )
}
