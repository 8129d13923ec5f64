import type { Database } from 'bun:sqlite'
import { copyFileSync, linkSync } from 'node:fs'
import type { SQL as BunSQL } from 'bun'
import { desc, isNotNull } from 'drizzle-orm'
import { byEngine, type Db, run, WRITER_LOCK } from '../db/client'
import { type Image, images } from '../db/schema'
import { newPublicId, randomToken } from '../lib/crypto'
import { anyImage } from '../modules/images/repository'
import { originalKey, type Storage, thumbnailKey } from '../storage'

/**
 * `imghost seed`: a library of `rows` images for measuring (bench/README.md, the scale group), cloned from one real
 * upload in bulk SQL. Never for a production database: the rows are made up.
 *
 * What the rows are (row number i, 0-based, oldest first):
 * - owner: even i the source image's owner (half); i % 10 = 9 anonymous (a tenth); the rest spread over seeded accounts
 *   `seed-<k>` (one per 1,000 rows, at least 4), whose password nobody knows.
 * - a fifth private (a fifth of the owner's, a quarter of the other accounts', no anonymous one); about 1% NSFW; all
 *   scanned (`scan_status` done), with the source's size and dimensions; the SHA-256 and perceptual hash are made
 *   up, one per row, as distinct pictures would have (the files are the source's).
 * - spread evenly over the three years before now, inserted in that order (so insertion order is time order).
 * - filenames of two words of WORDS and the row number (`sunset-harbour-123.jpg`): `sunset` is in about 3% of them.
 * - 1% expired (i % 200 = 7 or 8: still there for the expiry sweep), 1% expiring in 30 days (i % 100 = 3).
 * - the owner's albums: ALBUMS of ALBUM_SIZE images whatever the library's size (album reads then compare like with
 *   like between libraries), public and private in turn, their images spread evenly over the owner's rows.
 * - an open report about every 2,000th row.
 *
 * Files: the source's original and thumbnail are hard-linked under every new id (`files: 'link'`, local storage only),
 * so every row is served, checked and backed up like an upload (a copy of the file takes over when it has as many links
 * as the file system allows: 65,000 on ext4). With `files: 'none'` (and always on S3) rows have no files: their /cdn
 * links answer 404 and `check` lists them as missing; pages, feeds and the API read only rows and answer as for any
 * image.
 *
 * One transaction: chunks of CHUNK rows, each one bulk statement (SQLite: one prepared insert per row). The search
 * triggers are paused meanwhile and each chunk's search documents written by one statement. The image counts: SQLite's
 * triggers run per row; PostgreSQL's insert trigger is paused too and each chunk counted by one statement (per row,
 * each day's count row would gain a version per image inside the one transaction, and every update walk them all:
 * 10M rows did not finish in 40 minutes). Either way the counts are true when it commits.
 */
export interface SeedOptions {
  rows: number
  /** The image cloned (its owner owns half the rows); default the newest image that has an owner. */
  from?: string
  files: 'link' | 'none'
  now?: number
}

export interface SeedReport {
  source: string
  owner: number
  rows: number
  accounts: number
  albums: number
  albumImages: number
  reports: number
  linkedFiles: number
  ms: number
}

// biome-ignore format: a word list, many to a line
/** Two per filename: the first is row % 61, the second (row / 61) % 64, so words pair in many ways. */
const WORDS = [
  'sunset', 'harbour', 'mountain', 'forest', 'river', 'city', 'night', 'portrait', 'street', 'beach', 'winter', 'garden',
  'bridge', 'desert', 'market', 'station', 'island', 'valley', 'festival', 'canyon', 'lake', 'temple', 'snow', 'rain',
  'autumn', 'spring', 'summer', 'castle', 'village', 'meadow', 'cliff', 'tower', 'coast', 'glacier', 'harvest',
  'lantern', 'museum', 'orchard', 'parade', 'quarry', 'reef', 'skyline', 'tunnel', 'vineyard', 'waterfall', 'cat',
  'dog', 'horse', 'owl', 'fox', 'whale', 'tiger', 'eagle', 'bicycle', 'train', 'boat', 'kitchen', 'library', 'concert',
  'wedding', 'birthday', 'picnic', 'aurora', 'volcano',
]
const YEAR_MS = 365 * 24 * 3600 * 1000
const SPAN_MS = 3 * YEAR_MS
const ROWS_PER_ACCOUNT = 1000
const ALBUMS = 10
const ALBUM_SIZE = 100

/** Every `stride`-th row (an even number: the owner's) is in an album, until the albums are full. */
const albumStride = (n: number) => 2 * Math.max(1, Math.floor(n / (2 * ALBUMS * ALBUM_SIZE)))
const CHUNK = 50_000

interface SeedRow {
  id: string
  /** Made up, distinct per row as distinct pictures' would be (lookups by hash find one row, not every row). */
  sha256: string
  phash: string
  userId: number | null
  filename: string
  visibility: 'public' | 'private'
  nsfw: boolean
  views: number
  createdAt: number
  expiresAt: number | null
}

/** Row i of n: everything that varies from row to row (see the header). */
function seededRow(
  i: number,
  n: number,
  ctx: { now: number; owner: number; accounts: number[]; ext: string; sha256: string },
) {
  const userId = i % 2 === 0 ? ctx.owner : i % 10 === 9 ? null : ctx.accounts[Math.floor(i / 10) % ctx.accounts.length]
  const createdAt = ctx.now - SPAN_MS + Math.floor((i * (SPAN_MS - 60_000)) / n)
  const expired = i % 200 === 7 || i % 200 === 8
  // A 64-bit odd multiplier is a bijection on 64 bits: every row gets its own hash.
  const hash = ((BigInt(i + 1) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn).toString(16).padStart(16, '0')
  const row: SeedRow = {
    id: newPublicId(),
    sha256: `${ctx.sha256.slice(0, 48)}${hash}`,
    phash: hash,
    userId,
    filename: `${WORDS[i % 61]}-${WORDS[Math.floor(i / 61) % 64]}-${i}.${ctx.ext}`,
    visibility: Math.floor(i / 2) % 5 === 2 ? 'private' : 'public',
    nsfw: i % 97 === 13,
    views: (i * 7919) % 5000,
    createdAt,
    expiresAt: expired ? ctx.now - 1000 * (1 + (i % 1000)) : i % 100 === 3 ? ctx.now + 30 * 24 * 3600 * 1000 : null,
  }
  return row
}

/** An open report about a seeded row. */
interface Reported {
  imageId: string
  ownerId: number | null
  sha256: string
  phash: string
  createdAt: number
}

/** The inserts, one implementation per engine; all run inside the one transaction of `seed`. */
interface Writer {
  /** Inserts the accounts that do not exist yet; the ids of all of them, in order. */
  accounts(names: string[], passwordHash: string, createdAt: number): Promise<number[]>
  albums(rows: { id: string; userId: number; title: string; isPublic: boolean; createdAt: number }[]): Promise<void>
  /** The ids inserted (an id already taken is skipped). */
  images(rows: SeedRow[], source: Image): Promise<Set<string>>
  albumImages(rows: { albumId: string; imageId: string; addedAt: number }[]): Promise<void>
  reports(rows: Reported[]): Promise<void>
  /** Stops the triggers that write one row at a time what `catchUp` writes in bulk (search; PostgreSQL's counts). */
  pauseTriggers(): Promise<void>
  /** What the paused triggers would have written for the rows inserted since the last call, in insertion order. */
  catchUp(): Promise<void>
  /** The paused triggers as they were. */
  resumeTriggers(): Promise<void>
}

/**
 * The search documents the triggers of the search migrations (migrations/0001_search_fts.sql, 0004; migrations-pg/
 * 0001_search.sql) write: one per image (its filename), one per public, live, unguarded album holding it (its title).
 * `rows`: which images and album entries are new, `yes`: the engine's true, `order`: insertion order (SQLite's rowid,
 * PostgreSQL's seq).
 */
const searchDocuments = (rows: { images: string; members: string }, yes: string, order: string) => [
  `INSERT INTO search_docs (image_id, album_id, body)
   SELECT id, NULL, filename FROM images WHERE ${rows.images} ORDER BY ${order}`,
  `INSERT INTO search_docs (image_id, album_id, body)
   SELECT ai.image_id, a.id, a.title FROM album_images ai JOIN albums a ON a.id = ai.album_id
   WHERE ${rows.members} AND a.is_public = ${yes} AND a.deleted_at IS NULL AND a.password_hash IS NULL
   ORDER BY ai.${order}`,
]

const IMAGE_COLUMNS =
  'id, user_id, filename, mime, ext, width, height, size, sha256, phash, phash_tried, visibility, nsfw, scan_status, views, created_at, expires_at'

function sqliteWriter(sqlite: Database): Writer {
  const newest = () =>
    sqlite
      .query(
        `SELECT (SELECT coalesce(max(rowid), 0) FROM images) AS images,
                (SELECT coalesce(max(rowid), 0) FROM album_images) AS members,
                (SELECT coalesce(max(docid), 0) FROM search_docs) AS docs`,
      )
      .get() as { images: number; members: number; docs: number }
  let indexed = { images: 0, members: 0, docs: 0 }
  let triggers: { name: string; sql: string }[] = []
  const [imageDocs, albumDocs] = searchDocuments({ images: 'rowid > ?', members: 'ai.rowid > ?' }, '1', 'rowid').map(
    (statement) => sqlite.prepare(statement),
  )
  const insertImage = sqlite.prepare(
    `INSERT OR IGNORE INTO images (${IMAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'done', ?, ?, ?)`,
  )
  const insertAlbumImage = sqlite.prepare('INSERT INTO album_images (album_id, image_id, added_at) VALUES (?, ?, ?)')
  const insertReport = sqlite.prepare(
    `INSERT INTO reports (image_id, image_owner_id, image_sha256, image_phash, reason, reporter_ip, status, created_at)
     VALUES (?, ?, ?, ?, 'spam', '192.0.2.1', 'open', ?)`,
  )
  return {
    async accounts(names, passwordHash, createdAt) {
      const insert = sqlite.prepare(
        `INSERT OR IGNORE INTO users (username, email, password_hash, role, email_verified, created_at)
         VALUES (?, ?, ?, 'user', 1, ?)`,
      )
      const find = sqlite.prepare('SELECT id FROM users WHERE lower(username) = lower(?)')
      return names.map((name) => {
        insert.run(name, `${name}@seed.invalid`, passwordHash, createdAt)
        return (find.get(name) as { id: number }).id
      })
    },
    async albums(rows) {
      const insert = sqlite.prepare(
        'INSERT INTO albums (id, user_id, title, is_public, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      for (const a of rows) insert.run(a.id, a.userId, a.title, a.isPublic ? 1 : 0, a.createdAt, a.createdAt)
    },
    async images(rows, s) {
      const inserted = new Set<string>()
      for (const r of rows) {
        const { changes } = insertImage.run(
          r.id,
          r.userId,
          r.filename,
          s.mime,
          s.ext,
          s.width,
          s.height,
          s.size,
          r.sha256,
          r.phash,
          s.phashTried ? 1 : 0,
          r.visibility,
          r.nsfw ? 1 : 0,
          r.views,
          r.createdAt,
          r.expiresAt,
        )
        if (changes > 0) inserted.add(r.id)
      }
      return inserted
    },
    async albumImages(rows) {
      for (const r of rows) insertAlbumImage.run(r.albumId, r.imageId, r.addedAt)
    },
    async reports(rows) {
      for (const r of rows) insertReport.run(r.imageId, r.ownerId, r.sha256, r.phash, r.createdAt)
    },
    async pauseTriggers() {
      indexed = newest()
      triggers = sqlite
        .query("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%search%'")
        .all() as { name: string; sql: string }[]
      for (const t of triggers) sqlite.exec(`DROP TRIGGER "${t.name}"`)
    },
    async catchUp() {
      // The rows inserted since the last call: rowids past the newest then.
      imageDocs.run(indexed.images)
      albumDocs.run(indexed.members)
      // The full-text index of the new documents in one statement (the dropped search_docs_ai wrote it row by row).
      sqlite
        .prepare('INSERT INTO image_search (rowid, body) SELECT docid, body FROM search_docs WHERE docid > ?')
        .run(indexed.docs)
      indexed = newest()
    },
    async resumeTriggers() {
      for (const t of triggers) sqlite.exec(t.sql)
    },
  }
}

/**
 * What image_counts_ai (migrations-pg/0006_image_counts_triggers.sql) adds for each inserted row, for the rows `$1`
 * at once: each owner's (0: anonymous) and everyone's (-1) counts per day, in key order as the trigger's.
 */
const COUNT_NEW_IMAGES = `
  INSERT INTO image_counts (owner_id, day, images, bytes, public, nsfw, public_nsfw, shown, listed)
  SELECT o.id, r.created_at / 86400000, count(*), sum(r.size),
         count(*) FILTER (WHERE r.visibility = 'public'), count(*) FILTER (WHERE r.nsfw),
         count(*) FILTER (WHERE r.visibility = 'public' AND r.nsfw),
         count(*) FILTER (WHERE r.visibility = 'public' AND r.scan_status <> 'pending'),
         count(*) FILTER (WHERE r.visibility = 'public' AND NOT r.nsfw AND r.scan_status <> 'pending')
  FROM images r CROSS JOIN LATERAL (VALUES (coalesce(r.user_id, 0)), (-1)) AS o(id)
  WHERE r.id = ANY($1::text[])
  GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (owner_id, day) DO UPDATE SET
    images = image_counts.images + excluded.images, bytes = image_counts.bytes + excluded.bytes,
    public = image_counts.public + excluded.public, nsfw = image_counts.nsfw + excluded.nsfw,
    public_nsfw = image_counts.public_nsfw + excluded.public_nsfw, shown = image_counts.shown + excluded.shown,
    listed = image_counts.listed + excluded.listed`

/** PostgreSQL: each batch is one statement over arrays (unnest), inside the transaction `tx`. */
function pgWriter(tx: BunSQL): Writer {
  let triggers: { name: string; table: string }[] = []
  // The new rows by primary key (seq, PostgreSQL's insertion order, has no index).
  const [imageDocs, albumDocs] = searchDocuments(
    { images: 'id = ANY($1::text[])', members: 'ai.image_id = ANY($1::text[])' },
    'true',
    'seq',
  )
  let newImages: string[] = []
  let newMembers: string[] = []
  return {
    async accounts(names, passwordHash, createdAt) {
      await tx.unsafe(
        `INSERT INTO users (username, email, password_hash, role, email_verified, created_at)
         SELECT n, n || '@seed.invalid', $2, 'user', true, $3 FROM unnest($1::text[]) AS n ON CONFLICT DO NOTHING`,
        [names, passwordHash, createdAt],
      )
      const rows: { id: number; name: string }[] = await tx.unsafe(
        'SELECT id, lower(username) AS name FROM users WHERE lower(username) = ANY($1::text[])',
        [names.map((n) => n.toLowerCase())],
      )
      const ids = new Map(rows.map((r) => [r.name, r.id]))
      return names.map((n) => ids.get(n.toLowerCase())!)
    },
    async albums(rows) {
      await tx.unsafe(
        `INSERT INTO albums (id, user_id, title, is_public, created_at, updated_at)
         SELECT id, user_id, title, is_public, created_at, created_at
         FROM unnest($1::text[], $2::int[], $3::text[], $4::bool[], $5::bigint[]) AS a(id, user_id, title, is_public, created_at)`,
        [
          rows.map((a) => a.id),
          rows.map((a) => a.userId),
          rows.map((a) => a.title),
          rows.map((a) => a.isPublic),
          rows.map((a) => a.createdAt),
        ],
      )
    },
    async images(rows, s) {
      const inserted: { id: string }[] = await tx.unsafe(
        `INSERT INTO images (${IMAGE_COLUMNS})
         SELECT r.id, r.user_id, r.filename, $11, $12, $13, $14, $15, r.sha256, r.phash, $16, r.visibility, r.nsfw, 'done',
                r.views, r.created_at, r.expires_at
         FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::bool[], $6::bigint[], $7::bigint[], $8::bigint[],
                     $9::text[], $10::text[])
           AS r(id, user_id, filename, visibility, nsfw, views, created_at, expires_at, sha256, phash)
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        [
          rows.map((r) => r.id),
          rows.map((r) => r.userId),
          rows.map((r) => r.filename),
          rows.map((r) => r.visibility),
          rows.map((r) => r.nsfw),
          rows.map((r) => r.views),
          rows.map((r) => r.createdAt),
          rows.map((r) => r.expiresAt),
          rows.map((r) => r.sha256),
          rows.map((r) => r.phash),
          s.mime,
          s.ext,
          s.width,
          s.height,
          s.size,
          s.phashTried,
        ],
      )
      newImages = inserted.map((r) => r.id)
      return new Set(newImages)
    },
    async albumImages(rows) {
      newMembers = rows.map((r) => r.imageId)
      if (rows.length === 0) return
      await tx.unsafe(
        `INSERT INTO album_images (album_id, image_id, added_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])`,
        [rows.map((r) => r.albumId), rows.map((r) => r.imageId), rows.map((r) => r.addedAt)],
      )
    },
    async reports(rows) {
      if (rows.length === 0) return
      await tx.unsafe(
        `INSERT INTO reports (image_id, image_owner_id, image_sha256, image_phash, reason, reporter_ip, status, created_at)
         SELECT r.image_id, r.owner_id, r.sha256, r.phash, 'spam', '192.0.2.1', 'open', r.created_at
         FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[], $5::text[])
           AS r(image_id, owner_id, created_at, sha256, phash)`,
        [
          rows.map((r) => r.imageId),
          rows.map((r) => r.ownerId),
          rows.map((r) => r.createdAt),
          rows.map((r) => r.sha256),
          rows.map((r) => r.phash),
        ],
      )
    },
    async pauseTriggers() {
      // Transactional: a seed that fails leaves them enabled (its ALTERs roll back with it).
      triggers = await tx.unsafe(
        `SELECT t.tgname AS name, c.relname AS table FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE NOT t.tgisinternal AND c.relname IN ('images', 'album_images')
           AND (t.tgname LIKE '%search%' OR t.tgname = 'image_counts_ai')`,
      )
      for (const t of triggers) await tx.unsafe(`ALTER TABLE "${t.table}" DISABLE TRIGGER "${t.name}"`)
    },
    async catchUp() {
      // search_docs' own trigger (the words of each document) still runs.
      await tx.unsafe(imageDocs, [newImages])
      await tx.unsafe(albumDocs, [newMembers])
      await tx.unsafe(COUNT_NEW_IMAGES, [newImages])
    },
    async resumeTriggers() {
      for (const t of triggers) await tx.unsafe(`ALTER TABLE "${t.table}" ENABLE TRIGGER "${t.name}"`)
    },
  }
}

/**
 * Links a file under new names, the product's own way of storing (`put` links too); when the file has all the links
 * the file system allows (ext4: 65,000), the next name gets a copy, which takes the links after it. A name already
 * taken (an id that collides) is left alone: false.
 */
function fileLinker(source: string) {
  let from = source
  return (target: string): boolean => {
    try {
      linkSync(from, target)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'EEXIST') return false
      if (code !== 'EMLINK') throw error
      copyFileSync(from, target)
      from = target
    }
    return true
  }
}

/** Runs `body` in one transaction of the engine's: SQLite's BEGIN IMMEDIATE, PostgreSQL's with the writer lock. */
async function inTransaction<T>(db: Db, body: (writer: Writer) => Promise<T>): Promise<T> {
  return byEngine(db, {
    pg: (pg) =>
      pg.$client.begin(async (tx) => {
        await tx.unsafe(`SELECT pg_advisory_xact_lock(${WRITER_LOCK})`)
        const result = await body(pgWriter(tx))
        // The planner's statistics, as autovacuum would gather them some minutes after a bulk load (until then it
        // plans for the tables it saw before: empty). SQLite keeps none unless told (ANALYZE), and the service never
        // tells it, so a seeded SQLite database is planned as a grown one is.
        await tx.unsafe('ANALYZE')
        return result
      }),
    async sqlite({ $client: sqlite }) {
      // A bigger page cache for this connection: ids are random, so the primary key's pages are written all over.
      sqlite.exec('PRAGMA cache_size = -262144')
      sqlite.exec('BEGIN IMMEDIATE')
      try {
        const result = await body(sqliteWriter(sqlite))
        sqlite.exec('COMMIT')
        return result
      } catch (error) {
        sqlite.exec('ROLLBACK')
        throw error
      }
    },
  })
}

async function sourceImage(db: Db, from: string | undefined): Promise<Image> {
  const image = from
    ? await run(anyImage(db, from))
    : (await db.select().from(images).where(isNotNull(images.userId)).orderBy(desc(images.createdAt)).limit(1))[0]
  if (!image) throw new Error(from ? `No image ${from}` : 'No image with an owner to clone: upload one first')
  if (image.userId === null) throw new Error(`${image.id} is anonymous: the image cloned must have an owner`)
  return image
}

/** Seeds `opts.rows` rows (see the header) in one transaction; `progress` hears of each chunk. */
export async function seed(
  db: Db,
  storage: Storage,
  opts: SeedOptions,
  progress: (done: number, total: number) => void = () => {},
): Promise<SeedReport> {
  const started = performance.now()
  const now = opts.now ?? Date.now()
  const n = opts.rows
  const source = await sourceImage(db, opts.from)
  const owner = source.userId!
  const localPath = storage.localPath
  const link = opts.files === 'link' && localPath ? localPath : null
  const linkOriginal = link && fileLinker(link(originalKey(source.id, source.ext)))
  const linkThumbnail = link && fileLinker(link(thumbnailKey(source.id)))
  // Seeded accounts get one hash of a password nobody is told: they exist to own rows, not to sign in.
  const passwordHash = await Bun.password.hash(randomToken(), { algorithm: 'argon2id' })
  const names = Array.from({ length: Math.max(4, Math.ceil(n / ROWS_PER_ACCOUNT)) }, (_, k) => `seed-${k}`)
  const stride = albumStride(n)
  const albumCount = Math.min(ALBUMS, Math.ceil(Math.ceil(n / stride) / ALBUM_SIZE))
  const albumIds = Array.from({ length: albumCount }, () => newPublicId())
  return inTransaction(db, async (writer) => {
    await writer.pauseTriggers()
    const accounts = await writer.accounts(names, passwordHash, now - SPAN_MS)
    await writer.albums(
      albumIds.map((id, k) => ({
        id,
        userId: owner,
        title: `${WORDS[(k * 7) % WORDS.length]} trip ${k + 1}`,
        isPublic: k % 2 === 0,
        createdAt: now - SPAN_MS + Math.floor((k * ALBUM_SIZE * stride * SPAN_MS) / Math.max(n, 1)),
      })),
    )
    const report: SeedReport = {
      source: source.id,
      owner,
      rows: 0,
      accounts: accounts.length,
      albums: albumCount,
      albumImages: 0,
      reports: 0,
      linkedFiles: 0,
      ms: 0,
    }
    const ctx = { now, owner, accounts, ext: source.ext, sha256: source.sha256 }
    for (let start = 0; start < n; start += CHUNK) {
      const rows: SeedRow[] = []
      for (let i = start; i < Math.min(n, start + CHUNK); i++) rows.push(seededRow(i, n, ctx))
      // Files before rows, as an upload stores them: a row never points at a file that is not there.
      if (linkOriginal && linkThumbnail && link) {
        for (const r of rows) {
          if (linkOriginal(link(originalKey(r.id, source.ext)))) report.linkedFiles++
          if (linkThumbnail(link(thumbnailKey(r.id)))) report.linkedFiles++
        }
      }
      const inserted = await writer.images(rows, source)
      report.rows += inserted.size
      const members: { albumId: string; imageId: string; addedAt: number }[] = []
      const reported: Reported[] = []
      rows.forEach((r, k) => {
        const i = start + k
        if (!inserted.has(r.id)) return
        const album = albumIds[Math.floor(i / stride / ALBUM_SIZE)]
        if (i % stride === 0 && album) members.push({ albumId: album, imageId: r.id, addedAt: r.createdAt })
        if (i % 2000 === 1)
          reported.push({
            imageId: r.id,
            ownerId: r.userId,
            sha256: r.sha256,
            phash: r.phash,
            createdAt: r.createdAt + 3600_000,
          })
      })
      await writer.albumImages(members)
      await writer.catchUp()
      await writer.reports(reported)
      report.albumImages += members.length
      report.reports += reported.length
      progress(Math.min(n, start + CHUNK), n)
    }
    await writer.resumeTriggers()
    report.ms = Math.round(performance.now() - started)
    return report
  })
}
