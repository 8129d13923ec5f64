import { openapi } from '@elysiajs/openapi'
import { Elysia, t } from 'elysia'
import { version as SWAGGER_UI_VERSION } from 'swagger-ui-dist/package.json'
import swaggerUiCss from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' }
// `type: 'file'` gives the path of the installed file, or of its copy embedded in the single binary.
import swaggerUiBundle from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }
import { notFound } from '../errors'
import { VERSION } from '../version'
import { encodeStatic, type Negotiable, negotiatedResponse } from './compression'
import { type OpenApiDocument, type PathId, publishDocument } from './openapi-document'
import { SWAGGER_THEME } from './swagger-theme'

const ASSETS = '/swagger/assets'
const SPEC_PATH = '/swagger/json'

type OpenApiDoc = { paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } }>> }

/**
 * The plugin names a body's media type only from string parsers; the app parses every JSON body with one global
 * parse hook (a function, see body-limit.ts), so each requestBody came out with no content at all. JSON is what
 * those routes take: document their body schema under application/json.
 */
function documentJsonBodies(doc: OpenApiDoc, routes: { method: string; path: string; hooks?: { body?: unknown } }[]) {
  for (const route of routes) {
    const operation = doc.paths?.[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()]
    const body = operation?.requestBody
    if (!body || !route.hooks?.body || typeof route.hooks.body !== 'object') continue
    if (!body.content || Object.keys(body.content).length === 0) {
      body.content = { 'application/json': { schema: JSON.parse(JSON.stringify(route.hooks.body)) } }
    }
  }
}

const UI_PATH = '/swagger'
/**
 * The page's document URL is absolute: the plugin's own is relative (swagger/json), which from /swagger/ resolves to
 * /swagger/swagger/json. Its option type leaves `url` out, yet spreads these options over its own, so `url` wins.
 */
const uiOptions = {
  url: SPEC_PATH,
  // Versioned URLs (the installed swagger-ui-dist), so browsers keep the files for good.
  cdn: `${ASSETS}/swagger-ui-bundle.js?v=${SWAGGER_UI_VERSION}`,
  theme: `${ASSETS}/swagger-ui.css?v=${SWAGGER_UI_VERSION}`,
}

/** The UI's two files, by the name in their URL. */
const UI_FILES = new Map([
  ['swagger-ui-bundle.js', { path: swaggerUiBundle, type: 'text/javascript; charset=utf-8' }],
  ['swagger-ui.css', { path: swaggerUiCss, type: 'text/css; charset=utf-8' }],
])
/** Each file with its codings, made on its first request and kept (the bundle is 1.7 MB; brotli makes it 0.4 MB). */
const uiFiles = new Map<string, Promise<Negotiable>>()
export function swaggerUiFile(name: string): Promise<Negotiable> | undefined {
  const path = UI_FILES.get(name)?.path
  if (!path) return undefined
  let file = uiFiles.get(name)
  if (!file) {
    file = Bun.file(path)
      .bytes()
      .then((bytes) => encodeStatic(bytes as Uint8Array<ArrayBuffer>, `${name}-${SWAGGER_UI_VERSION}`))
    uiFiles.set(name, file)
  }
  return file
}

/**
 * Names the UI leaves out, given whenever it renders the control (axe: select-name, button-name,
 * label-content-name-mismatch): the servers menu, the dialog's close button, and the dialog's buttons whose
 * aria-label does not hold the word they show. Inline, so the page's script hashes below allow it.
 */
const NAME_CONTROLS = `<script>
new MutationObserver(() => {
  const menu = document.getElementById('servers')
  if (menu && !menu.hasAttribute('aria-label')) menu.setAttribute('aria-label', 'Server')
  for (const close of document.querySelectorAll('.close-modal:not([aria-label])')) close.setAttribute('aria-label', 'Close')
  for (const button of document.querySelectorAll('.auth-btn-wrapper button[aria-label]')) {
    const text = button.textContent.trim()
    const label = button.getAttribute('aria-label')
    if (text && !label.toLowerCase().includes(text.toLowerCase())) button.setAttribute('aria-label', text + ': ' + label)
  }
}).observe(document.documentElement, { childList: true, subtree: true })
</script>`

/**
 * The Swagger UI page gets the security headers of our own pages, and its own colours (swagger-theme.ts) in place of the
 * plugin's dark-mode style. Its inline scripts (the UI's start-up call, the controls' names) are allowed by their
 * hashes, so no other inline script could run; the inline style needs 'unsafe-inline' styles.
 */
async function withUiSecurityHeaders(response: Response): Promise<Response> {
  const page = (await response.text())
    .replace(/<style>[\s\S]*?<\/style>/, '')
    .replace('</head>', `<style>${SWAGGER_THEME}</style>\n</head>`)
    .replace('</body>', `${NAME_CONTROLS}\n</body>`)
  const inline = [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(
    (m) => `'sha256-${new Bun.CryptoHasher('sha256').update(m[1]).digest('base64')}'`,
  )
  const headers = new Headers(response.headers)
  headers.set(
    'content-security-policy',
    [
      "default-src 'self'",
      `script-src 'self' ${inline.join(' ')}`.trim(),
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      "object-src 'none'",
    ].join('; '),
  )
  headers.set('x-frame-options', 'DENY')
  headers.set('referrer-policy', 'strict-origin-when-cross-origin')
  headers.set('x-content-type-options', 'nosniff')
  return new Response(page, { status: response.status, headers })
}

/** OpenAPI document at /swagger/json and Swagger UI at /swagger, its assets served from the installed package. */
export function apiDocs({ siteName, publicUrl, pathIds }: { siteName: string; publicUrl: string; pathIds: PathId[] }) {
  const docs = new Elysia({ name: 'api-docs' })
  // Elysia points a plugin's (protected) getGlobalRoutes at the root app's routes once it is used, as the plugin relies on too.
  const globalRoutes = () =>
    (docs as unknown as { getGlobalRoutes(): Parameters<typeof documentJsonBodies>[1] }).getGlobalRoutes()
  // The plugin keeps its document until the routes change; the published one is made once per document it makes.
  const published = new WeakMap<object, OpenApiDocument>()
  return docs
    .onAfterHandle(async ({ path, responseValue }) => {
      if (path === SPEC_PATH) {
        const generated = responseValue as OpenApiDocument
        let doc = published.get(generated)
        if (!doc) {
          documentJsonBodies(generated as OpenApiDoc, globalRoutes())
          doc = publishDocument(generated, publicUrl, pathIds)
          published.set(generated, doc)
        }
        return doc
      }
      // The router also answers the page at /swagger/ (paths are not strict).
      if ((path === UI_PATH || path === `${UI_PATH}/`) && responseValue instanceof Response) {
        return withUiSecurityHeaders(responseValue)
      }
    })
    .use(
      openapi({
        path: UI_PATH,
        specPath: SPEC_PATH,
        provider: 'swagger-ui',
        // Makes the UI page a handler instead of a static Response (which skips every hook), so the hook above can
        // add the security headers. With Swagger UI the flag embeds nothing: the page still loads /swagger/json.
        embedSpec: true,
        swagger: uiOptions,
        exclude: { paths: [/^\/swagger/, /^\/cdn/, /^\/assets/] },
        documentation: {
          info: {
            title: `${siteName} API`,
            version: VERSION,
            description:
              'Image hosting: uploads, links, albums and embed profiles. Every error is a JSON object with one `error` string.',
          },
          // Declared once here, in the order the UI lists them (uploads first: what most readers come for); each route
          // names its tag.
          tags: [
            { name: 'Images', description: 'Uploads, reading, changing and deleting images; usage' },
            {
              name: 'Chevereto API',
              description: 'Chevereto API v1 uploads, for the clients that speak it (ShareX, PicGo...)',
            },
            { name: 'Resumable uploads', description: 'tus 1.0 uploads that survive dropped connections' },
            { name: 'Uploader clients', description: 'Ready-made ShareX, Flameshot and shell uploaders' },
            { name: 'Albums', description: 'Albums, their passwords and their images' },
            { name: 'Embed profiles', description: 'How links look when unfurled by chat apps; oEmbed' },
            { name: 'Gallery', description: 'Public gallery, search and profiles' },
            { name: 'Auth', description: 'Register, log in (JWT), email verification, account settings' },
            { name: 'API keys', description: 'Keys for the /api/v1 endpoints; the secret is shown once' },
            { name: 'Webhooks', description: 'Signed notifications of uploads and deletions' },
            { name: 'Reports', description: 'Abuse reports from anyone, handled by admins' },
            { name: 'Admin', description: 'Users, bans and any image (admins only)' },
            { name: 'Operations', description: 'Health check' },
          ],
          components: {
            securitySchemes: {
              apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
              apiKeyQuery: { type: 'apiKey', in: 'query', name: 'key', description: 'The API key, Chevereto style' },
              bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
              deleteToken: {
                type: 'apiKey',
                in: 'header',
                name: 'X-Delete-Token',
                description: 'Returned with each anonymous upload',
              },
            },
          },
        },
      }),
    )
    .get(
      '/swagger/assets/:file',
      async ({ params, query, request }) => {
        // Only the two files the UI page loads; anything else is unknown.
        const file = swaggerUiFile(params.file)
        if (!file) throw notFound()
        return negotiatedResponse(request, await file, {
          'content-type': UI_FILES.get(params.file)!.type,
          // The versioned URL never changes content; an unversioned one is revalidated (its ETag).
          'cache-control': query.v === SWAGGER_UI_VERSION ? 'public, max-age=31536000, immutable' : 'no-cache',
        })
      },
      { query: t.Object({ v: t.Optional(t.String()) }), detail: { hide: true } },
    )
}
