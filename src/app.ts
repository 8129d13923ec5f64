import { Elysia } from 'elysia'
import type { Config } from './config'
import type { ChangeFeed } from './db/changes'
import type { Db } from './db/client'
import { sharedDatabase } from './db/dialect'
import { authGuard, sessionTokens } from './http/auth'
import { bodyLimit } from './http/body-limit'
import { htmlCompression } from './http/compression'
import { cors, corsFastRoutes, corsPolicy } from './http/cors'
import { errorModel } from './http/errors'
import { allowedMethods } from './http/methods'
import { createMetrics, type Metrics, requestLog } from './http/observability'
import { apiDocs } from './http/openapi'
import type { PathId } from './http/openapi-document'
import { globalRateLimit } from './http/rate-limit'
import { addToSharedWindows } from './limits/repository'
import type { Media } from './media'
import type { Classifier } from './moderation'
import { adminModule } from './modules/admin'
import { createAdminService } from './modules/admin/service'
import { albumsModule } from './modules/albums'
import { createAlbumService } from './modules/albums/service'
import { authModule } from './modules/auth'
import { accountExport } from './modules/auth/export'
import { createAccountLeave } from './modules/auth/leave'
import type { Mailer } from './modules/auth/mailer'
import { USERNAME_PATTERN } from './modules/auth/model'
import { createOidcService } from './modules/auth/oidc'
import { passkeysModule } from './modules/auth/passkey-routes'
import { createPasskeyService } from './modules/auth/passkeys'
import { createAuthService } from './modules/auth/service'
import { createTotpService } from './modules/auth/totp'
import { blocksModule } from './modules/blocks'
import { createBlockService } from './modules/blocks/service'
import { cdnModule } from './modules/cdn'
import { cheveretoModule } from './modules/chevereto'
import { clientsModule } from './modules/clients'
import { embedsModule } from './modules/embeds'
import { createEmbedService } from './modules/embeds/service'
import { galleryModule } from './modules/gallery'
import { createGalleryService } from './modules/gallery/service'
import { healthModule } from './modules/health'
import { imageDetailsRoutes, imagesModule } from './modules/images'
import type { ImageEvents } from './modules/images/events'
import { DETAILS_ROUTE } from './modules/images/image-routes'
import { imageSenderCharge } from './modules/images/limits'
import { type ListReads, listReads } from './modules/images/list-reads'
import { ImageId } from './modules/images/model'
import { createImageService } from './modules/images/service'
import { createUploadPipeline } from './modules/images/upload'
import { legacyLinksModule } from './modules/import'
import { legacyRedirectsFrom } from './modules/import/model'
import { pagesModule } from './modules/pages'
import { robotsTxtFrom } from './modules/pages/robots'
import { createPageService } from './modules/pages/service'
import { reportsModule } from './modules/reports'
import { createReportService } from './modules/reports/service'
import { finishedAnswer, tusModule } from './modules/tus'
import { TUS_ID_PATTERN } from './modules/tus/model'
import { createTusService, type TusOptions } from './modules/tus/service'
import { variantsModule } from './modules/variants'
import { createVariantService } from './modules/variants/service'
import { webhooksModule } from './modules/webhooks'
import { createWebhookService, type WebhookOptions } from './modules/webhooks/service'
import type { Storage } from './storage'

/**
 * The files the operator names (LEGACY_REDIRECTS, ROBOTS_TXT), each read by the feature that knows its format: read
 * before the data directory or the database is touched, so a malformed one stops the start with nothing changed.
 */
export const operatorFiles = (config: Config) => ({
  legacyRedirects: legacyRedirectsFrom(config.site.legacyRedirectsFile),
  robotsTxt: robotsTxtFrom(config.site.robotsTxtFile),
})

export interface AppDeps {
  config: Config
  files: ReturnType<typeof operatorFiles>
  db: Db
  mailer: Mailer
  jwtSecret: string
  /** The key TOTP secrets are sealed with at rest (TOTP_KEY or the generated one). */
  totpKey: string
  /** The HMAC key of signed variant URLs (VARIANT_SECRET or the generated one). */
  variantSecret: string
  storage: Storage
  media: Media
  classifier: Classifier
  /** Webhook delivery timing (tests use milliseconds). */
  webhookOptions?: WebhookOptions
  /** Resumable upload expiry and limits (tests shorten them). */
  tusOptions?: TusOptions
  /** Rows changed (by any instance on PostgreSQL), for the caches (src/db/changes.ts). */
  changes: ChangeFeed
  /** Where the list reads run (SQLite: a Worker of the server, images/reads.ts); the app's connection by default. */
  reads?: ListReads
  /**
   * The service's clock (ms since the epoch): every rate-limit window (upload, anonymous, refused-upload, report,
   * password, global per-IP) and image expiry read it. Date.now unless a test passes one it can step forward instead
   * of waiting.
   */
  now?: () => number
}

/** The image id schema as plain JSON (album ids have the same form). */
const IMAGE_ID_SCHEMA = JSON.parse(JSON.stringify(ImageId))
/** The real form of the ids the routes take as plain strings, for the OpenAPI document (src/http/openapi-document.ts). */
const PATH_IDS: PathId[] = [
  {
    path: /^\/api\/(v1\/image|images|admin\/images|albums)\/\{id\}/,
    name: 'id',
    schema: { ...IMAGE_ID_SCHEMA, description: '8-character image or album id' },
  },
  { path: /^\/api\/albums\/\{id\}\/images\/\{imageId\}$/, name: 'imageId', schema: IMAGE_ID_SCHEMA },
  {
    path: /^\/api\/users\/\{username\}$/,
    name: 'username',
    schema: {
      type: 'string',
      pattern: `^${USERNAME_PATTERN}$`,
      description: 'A username, in any case',
      examples: ['ada'],
    },
  },
  {
    path: /^\/api\/(v1\/)?tus\/\{id\}$/,
    name: 'id',
    schema: {
      type: 'string',
      pattern: `^${TUS_ID_PATTERN}$`,
      description: 'Upload id (from the Location of the creation)',
      examples: ['Ab3dE5gHAb3dE5gHAb3dE5gHAb3dE5gH'],
    },
  },
]

/** Composes every feature into one Elysia app; tests build the app through this too. */
export function createApp(deps: AppDeps) {
  const { config, db, storage, now } = deps
  const metrics = createMetrics()
  const classifier = metrics.instrument(deps.classifier)
  const tokens = sessionTokens(deps.jwtSecret)
  const auth = createAuthService(
    db,
    deps.mailer,
    { guesses: config.limits.guesses, registration: config.auth.registration, tokens, changes: deps.changes },
    now,
  )
  const guard = authGuard(auth, tokens, { trustProxy: config.http.trustProxy })
  const passkeys = createPasskeyService({ db, config, now })
  const totp = createTotpService({
    db,
    key: deps.totpKey,
    siteName: config.site.name,
    guesses: config.limits.guesses,
    passkeys,
    now: now ?? Date.now,
  })
  const oidc = config.auth.oidc && createOidcService({ db, oidc: config.auth.oidc, auth, now: now ?? Date.now })
  const { webhooks, variants, images, blocks, pipeline, reads } = imageServices(deps, metrics, classifier)
  const tus = createTusService({ db, config, pipeline, answer: finishedAnswer, options: deps.tusOptions })
  const gallery = createGalleryService({ db, config, reads, now: images.now })
  const albums = createAlbumService({
    db,
    images,
    reads,
    publicUrl: config.site.publicUrl,
    guesses: config.limits.guesses,
    now,
  })
  const embeds = createEmbedService({ db, images })
  const pages = createPageService({ db, config, images })
  const reports = createReportService({ db, config, images, blocks, now })
  // Where the routes answered ahead of the app (src/http/fast-route.ts) record their requests.
  const observe = { metrics, log: config.http.logRequests }
  const cdn = cdnModule({
    images,
    variants,
    variantsMade: globalRateLimit({
      limit: config.variants.madePerSecond,
      windowMs: 1000,
      prefix: '/cdn/',
      trustProxy: config.http.trustProxy,
      now,
    }),
    trustProxy: config.http.trustProxy,
    storage,
    observe,
    countViews: config.http.countViews,
    serve: config.storage.driver === 's3' ? config.storage.s3.serve : 'stream',
  })
  const leave = {
    exportData: accountExport({ db, storage, images, spoolDir: config.paths.tmpDir }),
    leave: createAccountLeave({ db, images, auth, totp, passkeys }),
  }
  const rateLimit = apiRateLimit(deps)
  const services = {
    reports,
    blocks,
    auth,
    passkeys,
    admin: createAdminService({ db, images, auth, leave: leave.leave, publicUrl: config.site.publicUrl, now }),
    images,
    pipeline,
    gallery,
    metrics,
    albums,
    embeds,
    pages,
    tus,
    webhooks,
    variants,
  }

  // The public, unauthenticated JSON reads another site's page may fetch (CORS_ORIGINS).
  const publicReads = corsPolicy(config.cors.origins, [
    DETAILS_ROUTE,
    '/api/gallery',
    '/api/search',
    '/api/users/:username',
    '/api/oembed',
  ])
  // /cdn and image metadata are answered by Bun's router ahead of the app's global hooks (src/http/fast-route.ts).
  const fastRoutes = {
    ...cdn.routes,
    ...corsFastRoutes(publicReads, imageDetailsRoutes({ images, observe, admit: rateLimit.admit })),
  }
  const app = new Elysia({ serve: { routes: fastRoutes } })
    .use(errorModel)
    .use(requestLog(metrics, { log: config.http.logRequests }))
    .use(htmlCompression)
    .use(bodyLimit)
    // Before the limiter: its 429 carries the CORS headers too, so a page can read how long to wait.
    .use(cors(publicReads))
    .use(rateLimit.plugin)
    .use(apiDocs({ siteName: config.site.name, publicUrl: config.site.publicUrl, pathIds: PATH_IDS }))
    .use(
      healthModule({
        db,
        dataDir: config.paths.dataDir,
        storage: deps.storage,
        metrics,
        metricsToken: config.http.metricsToken,
        classifier,
      }),
    )
    .use(
      authModule(auth, guard, {
        totp,
        oidc,
        oidcOnly: config.auth.oidc?.only ?? false,
        secureCookie: config.site.publicUrl.startsWith('https:'),
        leave,
      }),
    )
    .use(passkeysModule(passkeys, auth, guard))
    .use(imagesModule({ images, pipeline, guard }))
    .use(cheveretoModule({ config, images, pipeline, auth, guard }))
    .use(variantsModule({ images, variants, publicUrl: config.site.cdnUrl, guard }))
    .use(tusModule({ config, tus, guard }))
    .use(webhooksModule(webhooks, guard))
    .use(clientsModule({ config, guard }))
    .use(cdn.plugin)
    .use(adminModule(services.admin, guard))
    .use(reportsModule(reports, guard))
    .use(blocksModule({ blocks, images, guard }))
    .use(galleryModule(gallery))
    .use(albumsModule(albums, guard))
    .use(embedsModule(embeds, guard))
    .use(pagesModule({ config, pages, images, albums, gallery, robotsTxt: deps.files.robotsTxt }))
  const { legacyRedirects } = deps.files
  if (legacyRedirects) {
    const base = { publicUrl: config.site.publicUrl, cdnBase: config.site.cdnUrl }
    app.use(legacyLinksModule({ redirects: legacyRedirects, images, base }))
  }

  app.store.allowedMethods = allowedMethods(app.routes)

  return { app, services, rateLimit }
}

/** The services an image passes through (upload, variants, blocks, events), wired to one another. */
function imageServices(deps: AppDeps, metrics: Metrics, classifier: Classifier) {
  const { config, db, storage, now } = deps
  // Image events (upload, delete) reach the webhooks through this one hook.
  const webhooks = createWebhookService({ db, config, options: deps.webhookOptions })
  const variants = createVariantService({
    db,
    storage,
    media: deps.media,
    tmpDir: config.paths.tmpDir,
    secret: deps.variantSecret,
    storageLimit: config.variants.storageLimit,
    maxPixels: config.limits.maxPixels,
    chargeSender: imageSenderCharge(db, config, now ?? Date.now),
    changes: deps.changes,
    now,
  })
  const imageEvents: ImageEvents = {
    emit(type, image) {
      webhooks.events.emit(type, image)
      variants.events.emit(type, image)
    },
  }
  const reads = deps.reads ?? listReads(db)
  const images = createImageService({ db, config, storage, events: imageEvents, changes: deps.changes, reads, now })
  const blocks = createBlockService({
    db,
    changes: deps.changes,
    storage,
    maxDistance: config.blocks.hammingDistance,
    publicUrl: config.site.publicUrl,
  })
  const pipeline = createUploadPipeline({
    db,
    config,
    storage,
    media: deps.media,
    classifier,
    thresholds: config.nsfw.thresholds,
    blocks,
    images,
    metrics,
    events: imageEvents,
    now,
  })
  return { webhooks, variants, images, blocks, pipeline, reads }
}

/** The global per-IP limit of API requests. */
function apiRateLimit({ config, db, now }: AppDeps) {
  // Instances sharing a PostgreSQL database add up their counts (SQLite: one process holds them all).
  return globalRateLimit({
    limit: config.limits.globalPerMinute,
    trustProxy: config.http.trustProxy,
    now,
    shared: sharedDatabase
      ? async (batch, at, windowMs) =>
          (
            await addToSharedWindows(
              db,
              batch.map((b) => ({ key: `api:${b.key}`, count: b.count })),
              at,
              windowMs,
            )
          ).map((t) => ({ ...t, key: t.key.slice('api:'.length) }))
      : undefined,
  })
}
