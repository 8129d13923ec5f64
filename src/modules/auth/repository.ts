import { and, count, desc, eq, gt, isNotNull, isNull, lt, ne, or, type SQL, sql } from 'drizzle-orm'
import type { Db, Tx } from '../../db/client'
import {
  type ApiKey,
  apiKeys,
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

export const findUserById = (db: Db | Tx, id: number): User | undefined =>
  db.select().from(users).where(eq(users.id, id)).get()

/** An account's name and whether it is banned. */
export const findAccountName = (db: Db | Tx, id: number) =>
  db.select({ username: users.username, banned: users.banned }).from(users).where(eq(users.id, id)).get()

/** The account with this username, in any case. */
export const findUserByName = (db: Db | Tx, name: string): User | undefined =>
  db.select().from(users).where(sql`lower(${users.username}) = lower(${name})`).get()

/** The account that answers to `login` as its username or email, in any case. */
export const findUserByLogin = (db: Db | Tx, login: string): User | undefined =>
  db
    .select()
    .from(users)
    .where(sql`lower(${users.username}) = lower(${login}) OR lower(${users.email}) = lower(${login})`)
    .get()

/** The account with this email, in any case. */
export const findUserByEmail = (db: Db | Tx, email: string): User | undefined =>
  db.select().from(users).where(sql`lower(${users.email}) = lower(${email})`).get()

/** The account, if any, that already has this username or this email (in any case). */
export const findTaken = (db: Db | Tx, username: string, email: string) =>
  db
    .select({ username: users.username, email: users.email })
    .from(users)
    .where(sql`lower(${users.username}) = lower(${username}) OR lower(${users.email}) = lower(${email})`)
    .get()

export const insertUser = (db: Db | Tx, values: typeof users.$inferInsert): User =>
  db.insert(users).values(values).returning().get()

/** Changes an account and reads it back; undefined when there is none. */
export const updateUser = (db: Db | Tx, id: number, set: Partial<User>): User | undefined =>
  db.update(users).set(set).where(eq(users.id, id)).returning().get()

/** As updateUser, without reading the row back. */
export const setUserFields = (db: Db | Tx, id: number, set: Partial<User>) =>
  db.update(users).set(set).where(eq(users.id, id)).run()

/**
 * One page of accounts, newest first, and how many match: `q` narrows to usernames and emails containing it.
 * `columnsOf` adds columns computed from the account's id (other features' totals, as correlated subqueries).
 */
export function usersPage<E extends Record<string, SQL>>(
  db: Db,
  opts: { q?: string; limit: number; offset: number },
  columnsOf: (userId: SQL) => E,
) {
  const pattern = opts.q ? `%${opts.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null
  const filter = pattern
    ? sql`(lower(${users.username}) LIKE ${pattern} ESCAPE '\\' OR lower(${users.email}) LIKE ${pattern} ESCAPE '\\')`
    : undefined
  const total = db.select({ n: count() }).from(users).where(filter).get()?.n ?? 0
  const rows = db
    .select({ user: users, ...columnsOf(sql`${users}.${sql.identifier(users.id.name)}`) })
    .from(users)
    .where(filter)
    .orderBy(desc(users.id))
    .limit(opts.limit)
    .offset(opts.offset)
    .all()
  return { rows, total }
}

/** The account behind an API key's secret hash, and the key's id. */
export const findKeyOwner = (db: Db, secretHash: string) =>
  db
    .select({ user: users, keyId: apiKeys.id })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(eq(apiKeys.secretHash, secretHash))
    .get()

/** Writes the keys' last-use times (in the caller's transaction). */
export function writeKeyUses(tx: Tx, batch: [id: number, at: number][]) {
  for (const [id, at] of batch)
    tx.update(apiKeys)
      .set({ lastUsedAt: new Date(at) })
      .where(eq(apiKeys.id, id))
      .run()
}

/** The user's API keys, newest first. */
export const keysOf = (db: Db, userId: number): ApiKey[] =>
  db.select().from(apiKeys).where(eq(apiKeys.userId, userId)).orderBy(desc(apiKeys.id)).all()

export const insertKey = (db: Db, values: typeof apiKeys.$inferInsert): ApiKey =>
  db.insert(apiKeys).values(values).returning().get()

/** Deletes one of the user's keys; returns whether there was one. */
export const deleteKey = (db: Db, id: number, userId: number): boolean =>
  db
    .delete(apiKeys)
    .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, userId)))
    .returning({ id: apiKeys.id })
    .get() !== undefined

export const insertVerification = (db: Db, values: typeof verificationTokens.$inferInsert) =>
  db.insert(verificationTokens).values(values).run()

type Purpose = (typeof verificationTokens.$inferSelect)['purpose']

/** An emailed token of this purpose (a reset token does not verify an address, nor the reverse). */
export const findVerification = (db: Db, tokenHash: string, purpose: Purpose) =>
  db
    .select()
    .from(verificationTokens)
    .where(and(eq(verificationTokens.tokenHash, tokenHash), eq(verificationTokens.purpose, purpose)))
    .get()

/**
 * Claims an unused token with a conditional update, which makes it single-use even under concurrent requests;
 * returns its account's id, or undefined when it was already used.
 */
export const claimVerification = (tx: Tx, tokenHash: string, usedAt: Date) =>
  tx
    .update(verificationTokens)
    .set({ usedAt })
    .where(and(eq(verificationTokens.tokenHash, tokenHash), isNull(verificationTokens.usedAt)))
    .returning({ userId: verificationTokens.userId })
    .get()

/** The user's passkeys, newest first. */
export const passkeysOf = (db: Db, userId: number): Passkey[] =>
  db.select().from(passkeys).where(eq(passkeys.userId, userId)).orderBy(desc(passkeys.id)).all()

/** The passkey with this credential id, and its account. */
export const findPasskeyOwner = (db: Db, credentialId: string) =>
  db
    .select({ passkey: passkeys, user: users })
    .from(passkeys)
    .innerJoin(users, eq(users.id, passkeys.userId))
    .where(eq(passkeys.credentialId, credentialId))
    .get()

export const insertPasskey = (db: Db, values: typeof passkeys.$inferInsert): Passkey =>
  db.insert(passkeys).values(values).returning().get()

/** Notes a sign-in: the authenticator's new counter and the time. */
export const notePasskeyUse = (db: Db, id: number, counter: number, at: Date) =>
  db.update(passkeys).set({ counter, lastUsedAt: at }).where(eq(passkeys.id, id)).run()

/** Deletes one of the user's passkeys; returns whether there was one. */
export const deletePasskey = (db: Db, id: number, userId: number): boolean =>
  db
    .delete(passkeys)
    .where(and(eq(passkeys.id, id), eq(passkeys.userId, userId)))
    .returning({ id: passkeys.id })
    .get() !== undefined
export const findTotp = (db: Db | Tx, userId: number): TotpSecret | undefined =>
  db.select().from(totpSecrets).where(eq(totpSecrets.userId, userId)).get()

/** Whether the account has TOTP turned on. */
export const totpEnabled = (db: Db, userId: number) =>
  db
    .select({ userId: totpSecrets.userId })
    .from(totpSecrets)
    .where(and(eq(totpSecrets.userId, userId), isNotNull(totpSecrets.enabledAt)))
    .get() !== undefined

/** A new secret being set up (not enabled): it replaces an earlier one that was never confirmed. */
export const savePendingTotp = (db: Db, userId: number, secret: string) =>
  db
    .insert(totpSecrets)
    .values({ userId, secret })
    .onConflictDoUpdate({ target: totpSecrets.userId, set: { secret, enabledAt: null, lastStep: null } })
    .run()

/**
 * Records `step` as the last one used, only when it is later than the last: false means a code of that step (or a
 * later one) was accepted already, so the code is a replay. A conditional update, so two requests racing with one code
 * cannot both pass.
 */
export const claimTotpStep = (db: Db | Tx, userId: number, step: number) =>
  db
    .update(totpSecrets)
    .set({ lastStep: step })
    .where(and(eq(totpSecrets.userId, userId), or(isNull(totpSecrets.lastStep), lt(totpSecrets.lastStep, step))))
    .returning({ userId: totpSecrets.userId })
    .get() !== undefined

/** Turns TOTP on (with its first accepted step) and replaces the recovery codes, in one transaction. */
export function enableTotp(db: Db, userId: number, step: number, codeHashes: string[], at: Date) {
  db.transaction((tx) => {
    tx.update(totpSecrets).set({ enabledAt: at, lastStep: step }).where(eq(totpSecrets.userId, userId)).run()
    tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)).run()
    tx.insert(recoveryCodes)
      .values(codeHashes.map((codeHash) => ({ codeHash, userId })))
      .run()
  })
}

/** Turns TOTP off: the secret and the recovery codes go. */
export function deleteTotp(db: Db, userId: number) {
  db.transaction((tx) => {
    tx.delete(totpSecrets).where(eq(totpSecrets.userId, userId)).run()
    tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)).run()
  })
}

/** Uses one of the account's unused recovery codes (single-use even under concurrent requests); whether it was one. */
export const claimRecoveryCode = (db: Db, userId: number, codeHash: string, usedAt: Date) =>
  db
    .update(recoveryCodes)
    .set({ usedAt })
    .where(and(eq(recoveryCodes.codeHash, codeHash), eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)))
    .returning({ userId: recoveryCodes.userId })
    .get() !== undefined

/** How many of the account's recovery codes are left. */
export const recoveryCodesLeft = (db: Db, userId: number) =>
  db
    .select({ n: count() })
    .from(recoveryCodes)
    .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)))
    .get()?.n ?? 0

/** The account an OIDC identity signs in to. */
export const findIdentityUser = (db: Db, issuer: string, subject: string): User | undefined =>
  db
    .select({ user: users })
    .from(oidcIdentities)
    .innerJoin(users, eq(users.id, oidcIdentities.userId))
    .where(and(eq(oidcIdentities.issuer, issuer), eq(oidcIdentities.subject, subject)))
    .get()?.user

export const insertIdentity = (db: Db | Tx, values: typeof oidcIdentities.$inferInsert) =>
  db.insert(oidcIdentities).values(values).run()
/** Removes emailed tokens past their expiry. */
export const deleteExpiredVerifications = (db: Db, now: Date) =>
  db.delete(verificationTokens).where(lt(verificationTokens.expiresAt, now)).run()

export const insertSession = (db: Db | Tx, values: typeof sessions.$inferInsert) =>
  db.insert(sessions).values(values).run()

/** Whether the user has this session (not yet ended). */
export const hasSession = (db: Db, userId: number, sessionId: string): boolean =>
  db
    .select({ id: sessions.id })
    .from(sessions)
    .where(and(eq(sessions.id, sessionId), eq(sessions.userId, userId)))
    .get() !== undefined

/**
 * Calls `listener` whenever a sessions row is deleted through this connection, by any code path (SQLite's update hook,
 * chained after any hook already set), synchronously inside the statement.
 */
export function onSessionDeleted(db: Db, listener: () => void) {
  const client = db.$client
  const previous = client.onDelete
  client.onDelete = function (connection, table, rowid, schema) {
    previous?.call(this, connection, table, rowid, schema)
    if (table === 'sessions') listener()
  }
}

/** A reader of SQLite's `data_version`: it changes when another connection (another process: the CLI) commits. */
export function dataVersion(db: Db): () => number {
  const statement = db.$client.prepare<{ data_version: number }, []>('PRAGMA data_version')
  return () => statement.get()!.data_version
}

/** The user's sessions not yet expired, most recently started first. */
export const sessionsOf = (db: Db, userId: number, now: Date): Session[] =>
  db
    .select()
    .from(sessions)
    .where(and(eq(sessions.userId, userId), gt(sessions.expiresAt, now)))
    .orderBy(desc(sessions.createdAt))
    .all()

/** Ends one of the user's sessions; returns whether there was one. */
export const deleteSession = (db: Db | Tx, id: string, userId: number): boolean =>
  db
    .delete(sessions)
    .where(and(eq(sessions.id, id), eq(sessions.userId, userId)))
    .returning({ id: sessions.id })
    .get() !== undefined

/** Ends every session of the user, but `keep` when given. */
export const deleteSessionsOf = (db: Db | Tx, userId: number, keep?: string) =>
  db
    .delete(sessions)
    .where(and(eq(sessions.userId, userId), keep === undefined ? undefined : ne(sessions.id, keep)))
    .run()

/** Removes sessions whose JWT has expired. */
export const deleteExpiredSessions = (db: Db, now: Date) => db.delete(sessions).where(lt(sessions.expiresAt, now)).run()

/** Writes the sessions' last-use times in one transaction (sessions ended meanwhile are simply not found). */
export function writeSessionUses(tx: Tx, batch: [id: string, at: number][]) {
  for (const [id, at] of batch)
    tx.update(sessions)
      .set({ lastUsedAt: new Date(at) })
      .where(eq(sessions.id, id))
      .run()
}

export const insertInvite = (db: Db, values: typeof invites.$inferInsert): Invite =>
  db.insert(invites).values(values).returning().get()

/** Every invite, newest first. */
export const allInvites = (db: Db): Invite[] => db.select().from(invites).orderBy(desc(invites.id)).all()

/** Deletes the invite with this id or this code; returns whether there was one. */
export const deleteInvite = (db: Db, idOrCode: string): boolean =>
  db
    .delete(invites)
    .where(
      /^\d+$/.test(idOrCode)
        ? or(eq(invites.id, Number(idOrCode)), eq(invites.code, idOrCode))
        : eq(invites.code, idOrCode),
    )
    .returning({ id: invites.id })
    .get() !== undefined

/**
 * Takes one use of a live invite with a conditional update, so that parallel registrations cannot use it more often
 * than it allows; returns whether it was taken.
 */
export const claimInvite = (tx: Tx, code: string, now: Date): boolean =>
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
    .returning({ id: invites.id })
    .get() !== undefined
