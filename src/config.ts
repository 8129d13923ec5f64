import { availableParallelism } from 'node:os'
import { join, resolve } from 'node:path'
import { type Static, Type as T, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

const MB = 1024 * 1024
const GB = 1024 * MB

const Bool = T.Union([T.Literal('1'), T.Literal('0'), T.Literal('true'), T.Literal('false')])
const Int = (min = 0) => T.Integer({ minimum: min })
const Ratio = T.Number({ minimum: 0, maximum: 1 })
const MIN_JWT_SECRET_BYTES = 32
/**
 * The largest BLOCK_HAMMING_DISTANCE: the blocked pictures' index (src/modules/blocks/matcher.ts) probes 4 bits a block,
 * at most 2,517 probes a block (C(16, <=4)).
 */
export const MAX_MATCH_DISTANCE = 16

/** Every environment variable the service reads, with its default. Sizes are bytes, durations seconds. */
const variables = {
  PORT: { schema: T.Integer({ minimum: 0, maximum: 65535 }), default: '3000' },
  PUBLIC_URL: { schema: T.String({ pattern: '^(|https?://\\S+)$' }), default: '' },
  CDN_URL: { schema: T.String({ pattern: '^(|https?://\\S+)$' }), default: '' },
  DATA_DIR: { schema: T.String({ minLength: 1 }), default: 'data' },
  // Empty: DATA_DIR/tus. Instances behind one load balancer must share it (a shared volume).
  TUS_DIR: { schema: T.String(), default: '' },
  SITE_NAME: { schema: T.String({ minLength: 1, maxLength: 100 }), default: 'imghost' },
  SITE_COLOR: { schema: T.String({ pattern: '^#[0-9a-fA-F]{6}$' }), default: '#3b82f6' },
  DATABASE_URL: { schema: T.String({ pattern: '^(|postgres(ql)?://\\S+)$' }), default: '' },
  JWT_SECRET: { schema: T.String(), default: '' },
  ADMIN_USERNAME: { schema: T.String(), default: '' },
  ADMIN_EMAIL: { schema: T.String(), default: '' },
  ADMIN_PASSWORD: { schema: T.String(), default: '' },
  SMTP_URL: { schema: T.String({ pattern: '^(|smtps?://.+)$' }), default: '' },
  SMTP_FROM: { schema: T.String(), default: '' },
  TRUST_PROXY: { schema: Bool, default: 'false' },
  LOG_REQUESTS: { schema: Bool, default: 'true' },
  LOG_FORMAT: { schema: T.Union([T.Literal('auto'), T.Literal('json'), T.Literal('pretty')]), default: 'auto' },
  METRICS_TOKEN: { schema: T.String(), default: '' },
  COUNT_VIEWS: { schema: Bool, default: 'true' },
  // Inside Docker's 10 s stop timeout, with room for the cut and the closing after it.
  SHUTDOWN_TIMEOUT: { schema: Int(0), default: '8' },
  // `*`, a comma list of origins, or `off`: who may read the public JSON reads from another site (src/http/cors.ts).
  CORS_ORIGINS: {
    schema: T.String({ pattern: '^(\\*|off|https?://[^\\s,/]+(\\s*,\\s*https?://[^\\s,/]+)*)$' }),
    default: '*',
  },
  REGISTRATION: { schema: T.Union([T.Literal('open'), T.Literal('invite'), T.Literal('closed')]), default: 'open' },

  MAX_FILES_PER_UPLOAD: { schema: Int(1), default: '15' },
  ADMIN_MAX_FILES_PER_UPLOAD: { schema: Int(1), default: '100' },
  MAX_FILE_SIZE: { schema: Int(1), default: String(50 * MB) },
  UNVERIFIED_STORAGE_LIMIT: { schema: Int(0), default: String(500 * MB) },
  VERIFIED_STORAGE_LIMIT: { schema: Int(0), default: String(10 * GB) },
  UPLOADS_PER_HOUR: { schema: Int(1), default: '100' },
  ANON_MAX_FILES_PER_UPLOAD: { schema: Int(1), default: '5' },
  ANON_MAX_FILE_SIZE: { schema: Int(1), default: String(25 * MB) },
  ANON_UPLOADS_PER_WINDOW: { schema: Int(1), default: '10' },
  ANON_WINDOW_SECONDS: { schema: Int(1), default: '600' },
  GLOBAL_RATE_LIMIT: { schema: Int(1), default: '500' },
  MAX_IMAGE_PIXELS: { schema: Int(1), default: '100000000' },
  MAX_EXPIRY: { schema: Int(1), default: String(365 * 24 * 3600) },
  ANON_DEFAULT_EXPIRY: { schema: Int(0), default: '0' },
  REPORTS_PER_HOUR: { schema: Int(1), default: '5' },
  // 10: the copies in test/blocks reach 10, distinct pictures come no closer than 14 (docs/api.md, "Blocked pictures").
  BLOCK_HAMMING_DISTANCE: { schema: T.Integer({ minimum: 0, maximum: MAX_MATCH_DISTANCE }), default: '10' },
  REFUSED_UPLOADS_PER_WINDOW: { schema: Int(1), default: '20' },
  REFUSED_UPLOADS_WINDOW_SECONDS: { schema: Int(1), default: '3600' },
  UPLOADS_IN_FLIGHT_PER_IP: { schema: Int(1), default: '4' },
  UPLOADS_IN_FLIGHT_PER_ACCOUNT: { schema: Int(1), default: '4' },
  LOGIN_FAILURES_PER_ACCOUNT: { schema: Int(1), default: '10' },
  LOGIN_FAILURES_PER_IP: { schema: Int(1), default: '30' },
  ALBUM_PASSWORD_FAILURES_PER_ALBUM: { schema: Int(1), default: '20' },
  ALBUM_PASSWORD_FAILURES_PER_IP: { schema: Int(1), default: '10' },
  PASSWORD_FAILURES_WINDOW_SECONDS: { schema: Int(1), default: '900' },
  STRIP_METADATA: { schema: T.Union([T.Literal('gps'), T.Literal('all'), T.Literal('none')]), default: 'gps' },
  MEDIA_WORKERS: { schema: Int(0), default: '0' },
  MEDIA_JOB_TIMEOUT_MS: { schema: Int(100), default: '20000' },
  MEDIA_MEMORY_LIMIT: { schema: Int(64 * MB), default: String(GB) },
  MEDIA_MAX_QUEUE: { schema: Int(1), default: '256' },

  NSFW_PORN_HENTAI_THRESHOLD: { schema: Ratio, default: '0.5' },
  NSFW_SEXY_THRESHOLD: { schema: Ratio, default: '0.8' },
  NSFW_SCAN_TIMEOUT_MS: { schema: Int(1), default: '15000' },
  NSFW_MAX_QUEUE: { schema: Int(1), default: '64' },
  NSFW_BACKEND: { schema: T.Union([T.Literal('auto'), T.Literal('wasm')]), default: 'auto' },
  NSFW_IDLE_UNLOAD_SECONDS: { schema: Int(0), default: '300' },
  SCAN_API_UPLOADS: { schema: Bool, default: 'false' },
  WEBHOOK_ALLOW_PRIVATE: { schema: Bool, default: 'false' },
  URL_UPLOAD_ALLOW_PRIVATE: { schema: Bool, default: 'false' },
  URL_UPLOAD_TIMEOUT_MS: { schema: Int(1), default: '15000' },
  LEGACY_REDIRECTS: { schema: T.String(), default: '' },
  ROBOTS_TXT: { schema: T.String(), default: '' },
  VARIANT_SECRET: { schema: T.String(), default: '' },
  TOTP_KEY: { schema: T.String(), default: '' },
  OIDC_ISSUER: { schema: T.String({ pattern: '^(|https?://\\S+)$' }), default: '' },
  OIDC_CLIENT_ID: { schema: T.String(), default: '' },
  OIDC_CLIENT_SECRET: { schema: T.String(), default: '' },
  OIDC_NAME: { schema: T.String({ minLength: 1, maxLength: 50 }), default: 'single sign-on' },
  OIDC_ONLY: { schema: Bool, default: 'false' },
  VARIANT_STORAGE_LIMIT: { schema: Int(0), default: String(GB) },
  VARIANTS_MADE_PER_SECOND: { schema: Int(1), default: '5' },

  STORAGE: { schema: T.Union([T.Literal('local'), T.Literal('s3')]), default: 'local' },
  S3_ENDPOINT: { schema: T.String({ pattern: '^(|https?://\\S+)$' }), default: '' },
  S3_BUCKET: { schema: T.String({ pattern: '^(|[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])$' }), default: '' },
  S3_REGION: { schema: T.String({ pattern: '^[a-z0-9-]+$' }), default: 'us-east-1' },
  S3_ACCESS_KEY_ID: { schema: T.String(), default: '' },
  S3_SECRET_ACCESS_KEY: { schema: T.String(), default: '' },
  S3_PREFIX: {
    schema: T.String({ pattern: '^(|[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*/?)$' }),
    default: '',
  },
  S3_SERVE: { schema: T.Union([T.Literal('stream'), T.Literal('redirect')]), default: 'stream' },
} satisfies Record<string, { schema: TSchema; default: string }>

type Vars = typeof variables
type Parsed = { [K in keyof Vars]: Static<Vars[K]['schema']> }

export class ConfigError extends Error {}

// Value.Convert would truncate '1.5' or '1e3' to 1 and read '0x10' as 16: numbers must be written plainly.
const NUMERIC: Record<string, RegExp> = { integer: /^-?\d+$/, number: /^-?(\d+(\.\d*)?|\.\d+)$/ }

function parseVariable(name: string, raw: string, schema: TSchema): unknown {
  const shape = NUMERIC[schema.type as string]
  const value = shape && !shape.test(raw) ? raw : Value.Convert(schema, raw)
  if (!Value.Check(schema, value)) {
    throw new ConfigError(`Invalid value for ${name}: ${JSON.stringify(raw)}`)
  }
  return value
}

const isTrue = (v: string) => v === '1' || v === 'true'

/** Whether a URL names this machine (localhost, 127.0.0.0/8 or ::1). */
export function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host)
}

/**
 * A file the operator names, read once at startup by the feature that knows its format: a missing or malformed one
 * stops the start, naming the variable and the file ('' is no file: null).
 */
export function readConfigFile<T>(name: string, file: string, read: (path: string) => T): T | null {
  if (!file) return null
  try {
    return read(resolve(file))
  } catch (error) {
    throw new ConfigError(`Invalid ${name} file ${file}: ${(error as Error).message}`)
  }
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) if (inner && typeof inner === 'object') deepFreeze(inner)
  return Object.freeze(value)
}

/** Every variable, parsed and checked alone (its default when unset or empty). */
function parseVariables(env: Record<string, string | undefined>): Parsed {
  const raw = {} as Parsed
  for (const [name, spec] of Object.entries(variables)) {
    const given = env[name]
    ;(raw as Record<string, unknown>)[name] = parseVariable(
      name,
      given === undefined || given === '' ? spec.default : given,
      spec.schema,
    )
  }
  return raw
}

/** What one variable alone cannot tell: values that need or exclude each other. */
function checkCombinations(raw: Parsed) {
  // HS256 with a shorter key can be brute-forced offline from any token: at least 32 bytes (256 bits), as RFC 7518 asks.
  if (raw.JWT_SECRET && Buffer.byteLength(raw.JWT_SECRET) < MIN_JWT_SECRET_BYTES) {
    throw new ConfigError(
      `Invalid value for JWT_SECRET: at least ${MIN_JWT_SECRET_BYTES} bytes are needed (unset, one is generated)`,
    )
  }
  // Instances that share a database must sign and seal with the same keys: one generated into a data directory would
  // be another instance's stranger (its tokens refused, its TOTP secrets unreadable).
  if (raw.DATABASE_URL) {
    for (const name of ['JWT_SECRET', 'VARIANT_SECRET', 'TOTP_KEY'] as const) {
      if (!raw[name]) throw new ConfigError(`Missing value for ${name}: required with DATABASE_URL`)
    }
  }
  if (raw.ANON_DEFAULT_EXPIRY > raw.MAX_EXPIRY) {
    throw new ConfigError(
      `Invalid value for ANON_DEFAULT_EXPIRY: ${raw.ANON_DEFAULT_EXPIRY} is above MAX_EXPIRY (${raw.MAX_EXPIRY})`,
    )
  }
  if (raw.STORAGE === 's3') {
    for (const name of ['S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const) {
      if (!raw[name]) throw new ConfigError(`Missing value for ${name}: required when STORAGE=s3`)
    }
  }
  if (raw.OIDC_ISSUER) {
    if (!raw.OIDC_CLIENT_ID) throw new ConfigError('Missing value for OIDC_CLIENT_ID: required with OIDC_ISSUER')
    // Tokens and keys come from the issuer: plain HTTP only where nothing lies between (a provider on this machine).
    if (!raw.OIDC_ISSUER.startsWith('https://') && !isLoopbackUrl(raw.OIDC_ISSUER))
      throw new ConfigError('Invalid value for OIDC_ISSUER: https is required (http only on loopback)')
  } else if (isTrue(raw.OIDC_ONLY)) {
    throw new ConfigError('Invalid value for OIDC_ONLY: true needs OIDC_ISSUER (nobody could log in)')
  }
}

/** `limits`: files, sizes, storage, windows and guesses. */
const limitsOf = (raw: Parsed) => ({
  user: { maxFiles: raw.MAX_FILES_PER_UPLOAD, maxFileSize: raw.MAX_FILE_SIZE },
  admin: { maxFiles: raw.ADMIN_MAX_FILES_PER_UPLOAD },
  storage: { unverified: raw.UNVERIFIED_STORAGE_LIMIT, verified: raw.VERIFIED_STORAGE_LIMIT },
  uploadsPerHour: raw.UPLOADS_PER_HOUR,
  anonymous: {
    maxFiles: raw.ANON_MAX_FILES_PER_UPLOAD,
    maxFileSize: raw.ANON_MAX_FILE_SIZE,
    uploads: raw.ANON_UPLOADS_PER_WINDOW,
    windowSeconds: raw.ANON_WINDOW_SECONDS,
  },
  globalPerMinute: raw.GLOBAL_RATE_LIMIT,
  maxPixels: raw.MAX_IMAGE_PIXELS,
  /** Abuse reports per IP per hour. */
  reportsPerHour: raw.REPORTS_PER_HOUR,
  /** Uploads refused after processing began (not an image, undecodable, blocked...), per IP and per account. */
  refused: { perWindow: raw.REFUSED_UPLOADS_PER_WINDOW, windowSeconds: raw.REFUSED_UPLOADS_WINDOW_SECONDS },
  /** Uploads being received or processed at once. */
  inFlight: { perIp: raw.UPLOADS_IN_FLIGHT_PER_IP, perAccount: raw.UPLOADS_IN_FLIGHT_PER_ACCOUNT },
  /** Failed password attempts (logins, album passwords) allowed per fixed window before 429. */
  guesses: {
    loginPerAccount: raw.LOGIN_FAILURES_PER_ACCOUNT,
    loginPerIp: raw.LOGIN_FAILURES_PER_IP,
    albumPerAlbum: raw.ALBUM_PASSWORD_FAILURES_PER_ALBUM,
    albumPerIp: raw.ALBUM_PASSWORD_FAILURES_PER_IP,
    windowSeconds: raw.PASSWORD_FAILURES_WINDOW_SECONDS,
  },
})

/** `site`: without PUBLIC_URL the service is its own localhost address; neither URL keeps a trailing slash. */
function siteOf(raw: Parsed) {
  const publicUrl = (raw.PUBLIC_URL || `http://localhost:${raw.PORT}`).replace(/\/+$/, '')
  return {
    name: raw.SITE_NAME,
    color: raw.SITE_COLOR,
    publicUrl,
    /** Base of direct and thumbnail links: a CDN or bucket domain when set, else the service itself. */
    cdnUrl: (raw.CDN_URL || publicUrl).replace(/\/+$/, ''),
    /** The file /robots.txt answers, or '': the default (read by src/modules/pages/robots.ts). */
    robotsTxtFile: raw.ROBOTS_TXT,
    /** The legacy link map's file, or '': no legacy links (read by src/modules/import/model.ts). */
    legacyRedirectsFile: raw.LEGACY_REDIRECTS,
  }
}

/** `paths`: resolved here once, so no caller joins DATA_DIR's layout again. */
function pathsOf(raw: Parsed) {
  const dataDir = resolve(raw.DATA_DIR)
  return {
    dataDir,
    /** Temp files of uploads, URL fetches, media jobs and copies of stored originals: `DATA_DIR/tmp`. */
    tmpDir: join(dataDir, 'tmp'),
    /** Where partial tus uploads' bytes live (`DATA_DIR/tus` by default): one directory shared by every instance. */
    tusDir: raw.TUS_DIR ? resolve(raw.TUS_DIR) : join(dataDir, 'tus'),
    /** Image files with STORAGE=local (a bucket's keys mirror its layout). */
    filesDir: join(dataDir, 'files'),
    /** The SQLite database, when DATABASE_URL is empty. */
    sqliteFile: join(dataDir, 'imghost.sqlite'),
  }
}

/** `auth`: OIDC's redirect URI is under PUBLIC_URL, the address the provider has registered. */
function authOf(raw: Parsed, publicUrl: string) {
  return {
    /** HS256 key of session tokens; empty: generated and kept in DATA_DIR/jwt-secret. */
    jwtSecret: raw.JWT_SECRET,
    /** Seals TOTP secrets at rest; empty: generated and kept in DATA_DIR/totp-key. */
    totpKey: raw.TOTP_KEY,
    /** Who may register: anyone (`open`), holders of an admin's invite (`invite`), or nobody (`closed`). */
    registration: raw.REGISTRATION,
    /** The admin account made at startup when all three are set and no account has the name. */
    admin: { username: raw.ADMIN_USERNAME, email: raw.ADMIN_EMAIL, password: raw.ADMIN_PASSWORD },
    /** OpenID Connect single sign-on (src/modules/auth/oidc.ts); null: not offered. */
    oidc: raw.OIDC_ISSUER
      ? {
          issuer: raw.OIDC_ISSUER,
          clientId: raw.OIDC_CLIENT_ID,
          clientSecret: raw.OIDC_CLIENT_SECRET,
          /** The button's label: "Sign in with {name}". */
          name: raw.OIDC_NAME,
          /** Password login refused (403) and hidden: accounts sign in through the provider only. */
          only: isTrue(raw.OIDC_ONLY),
          redirectUri: `${publicUrl}/api/auth/oidc/callback`,
        }
      : null,
  }
}

/**
 * `cors`: the origins whose pages may read the public JSON reads: any (`*`), none (`off`: null), or a list (each as
 * browsers send it in `Origin`: scheme, host and port, lower case, no path).
 */
const corsOf = (raw: Parsed) => ({
  origins:
    raw.CORS_ORIGINS === '*'
      ? ('*' as const)
      : raw.CORS_ORIGINS === 'off'
        ? null
        : raw.CORS_ORIGINS.split(',').map((origin) => origin.trim().toLowerCase()),
})

/** `storage`: `s3` is only read when `driver` is `s3`. */
const storageOf = (raw: Parsed) => ({
  driver: raw.STORAGE,
  s3: {
    /** Empty: AWS S3 of `region`. */
    endpoint: raw.S3_ENDPOINT,
    bucket: raw.S3_BUCKET,
    region: raw.S3_REGION,
    accessKeyId: raw.S3_ACCESS_KEY_ID,
    secretAccessKey: raw.S3_SECRET_ACCESS_KEY,
    /** Every key is stored under it; empty or ending in `/`. */
    prefix: raw.S3_PREFIX && !raw.S3_PREFIX.endsWith('/') ? `${raw.S3_PREFIX}/` : raw.S3_PREFIX,
    /** How /cdn hands out bytes: `stream` through this process, or `redirect` to a short-lived presigned URL. */
    serve: raw.S3_SERVE,
  },
})

/** `nsfw`: the classifier's verdict thresholds, budgets and backend. */
const nsfwOf = (raw: Parsed) => ({
  thresholds: { pornHentai: raw.NSFW_PORN_HENTAI_THRESHOLD, sexy: raw.NSFW_SEXY_THRESHOLD },
  timeoutMs: raw.NSFW_SCAN_TIMEOUT_MS,
  maxQueue: raw.NSFW_MAX_QUEUE,
  /** `auto`: tfjs-node when it is installed and loads, else wasm; `wasm`: always the portable wasm backend. */
  backend: raw.NSFW_BACKEND,
  /** The model loads with the first scan and is unloaded (its memory returned) after this long without one; 0: never. */
  idleUnloadMs: raw.NSFW_IDLE_UNLOAD_SECONDS * 1000,
  scanApiUploads: isTrue(raw.SCAN_API_UPLOADS),
})

/** Parses and checks the environment once; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const raw = parseVariables(env)
  checkCombinations(raw)
  const site = siteOf(raw)
  // Every key is a slice: a feature is handed the one it reads.
  return deepFreeze({
    /** What visitors and links see: the site's name and colour, its addresses, and the files it answers with. */
    site,
    /** The listener and what it records of requests. */
    http: {
      port: raw.PORT,
      /** Take the client's IP from the last X-Forwarded-For entry (behind a reverse proxy). */
      trustProxy: isTrue(raw.TRUST_PROXY),
      logRequests: isTrue(raw.LOG_REQUESTS),
      /** `auto`: readable lines on a terminal, JSON lines otherwise (src/log.ts). */
      logFormat: raw.LOG_FORMAT,
      /** Empty: /metrics is disabled. */
      metricsToken: raw.METRICS_TOKEN,
      /** Count /cdn views (buffered, flushed in batches); false only to measure what counting costs. */
      countViews: isTrue(raw.COUNT_VIEWS),
    },
    /** Stopping on SIGTERM or SIGINT (src/server.ts). */
    shutdown: {
      /** How long requests in flight are waited for; then uploads still arriving are answered 503 and the rest cut. */
      timeoutMs: raw.SHUTDOWN_TIMEOUT * 1000,
    },
    /** Cross-origin reads of the public JSON (src/http/cors.ts). */
    cors: corsOf(raw),
    /** Where this instance keeps its files: DATA_DIR and the paths under it. */
    paths: pathsOf(raw),
    /** PostgreSQL's URL, or '' for SQLite at `paths.sqliteFile` (src/db/engine.ts). */
    database: { url: raw.DATABASE_URL },
    /** Accounts and signing in: registration, the startup admin, single sign-on and the keys of sessions and TOTP. */
    auth: authOf(raw, site.publicUrl),
    /** Outgoing mail (verification and password reset links); empty url: the tokens go to the log instead. */
    smtp: { url: raw.SMTP_URL, from: raw.SMTP_FROM || `no-reply@${new URL(site.publicUrl).hostname}` },
    /** Files, sizes, storage quotas, rate windows and password guesses. */
    limits: limitsOf(raw),
    /** How long uploads may live. */
    expiry: {
      /** Longest expiry an upload or a PATCH may ask for, seconds. */
      maxSeconds: raw.MAX_EXPIRY,
      /** Expiry of anonymous uploads that ask for none, and the longest they may ask for; 0: never expire. */
      anonDefaultSeconds: raw.ANON_DEFAULT_EXPIRY,
    },
    /** Where image files live: `paths.filesDir`, or an S3-compatible bucket. */
    storage: storageOf(raw),
    /** Work on uploaded bytes runs in worker processes (src/workers/media-pool.ts), each job under these budgets. */
    media: {
      /** 0: one per CPU core. */
      workers: raw.MEDIA_WORKERS || availableParallelism(),
      timeoutMs: raw.MEDIA_JOB_TIMEOUT_MS,
      /** Resident memory of one worker process while it runs a job. */
      memoryBytes: raw.MEDIA_MEMORY_LIMIT,
      maxQueue: raw.MEDIA_MAX_QUEUE,
      /** What the workers strip from uploads: GPS tags (`gps`), all metadata (`all`) or nothing (`none`). */
      stripMetadata: raw.STRIP_METADATA,
    },
    /** Blocked pictures (src/modules/blocks). */
    blocks: {
      /** Uploads within this many bits of a blocked picture's perceptual hash are refused. */
      hammingDistance: raw.BLOCK_HAMMING_DISTANCE,
    },
    /** The NSFW classifier that scans uploads (src/moderation). */
    nsfw: nsfwOf(raw),
    /** Deliveries of image events to users' endpoints (src/modules/webhooks). */
    webhooks: {
      /** Deliver to loopback, private and link-local addresses too (off: such endpoints are refused, SSRF). */
      allowPrivate: isTrue(raw.WEBHOOK_ALLOW_PRIVATE),
    },
    /** Uploads from a URL (src/net/fetch-url.ts). */
    urlUploads: {
      /** Fetch from loopback, private and link-local addresses too (off: refused, SSRF). */
      allowPrivate: isTrue(raw.URL_UPLOAD_ALLOW_PRIVATE),
      /** One URL's whole fetch: DNS, connect, headers and body. */
      timeoutMs: raw.URL_UPLOAD_TIMEOUT_MS,
    },
    /** Resized copies (src/modules/variants): presets and signed custom sizes, made on first request. */
    variants: {
      /** HMAC key of signed sizes; empty: generated and kept in DATA_DIR/variant-secret. */
      secret: raw.VARIANT_SECRET,
      /** Bytes of stored variants; past it the least recently used go. */
      storageLimit: raw.VARIANT_STORAGE_LIMIT,
      /** Signed sizes made (not served from storage) per client IP per second. */
      madePerSecond: raw.VARIANTS_MADE_PER_SECOND,
    },
  })
}

export type Config = ReturnType<typeof loadConfig>

/** Names and defaults, for docs/configuration.md (test/ops/readme.test.ts holds it to them) and the CLI's help. */
export const configVariables = Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, v.default]))
