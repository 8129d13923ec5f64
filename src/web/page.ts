import { readdirSync, readFileSync } from 'node:fs'
import { extname, join } from 'node:path'
import type { Config } from '../config'
import { sha256Hex } from '../lib/crypto'
import { humanSize } from '../lib/size'
import { html, raw, type SafeHtml } from './html'

/**
 * The shared shell of every server-rendered page: the layout, the security headers and the local assets.
 *
 * Usage from a module:
 *   const pages = createPageRenderer(config)
 *   return pages.respond({ title: 'Gallery', body: html`<h1>…</h1>`, scripts: ['gallery.js'] })
 * Everything user-supplied goes through `html` templates; pages never carry inline scripts or styles (the CSP forbids both).
 */

export type PageConfig = Pick<Config, 'site'>

// ---------------------------------------------------------------------------------------------------------------
// Assets: every file of src/web/assets, read once, served at /assets/<name>?v=<hash> (the hash busts caches).

const ASSET_DIR = join(import.meta.dir, 'assets')
const ASSET_NAME = /^[a-z0-9][a-z0-9._-]*\.(css|js|svg|png|ico|woff2)$/
const ASSET_TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
}

export interface Asset {
  bytes: Uint8Array<ArrayBuffer>
  /** The gzip form of text assets (CSS, JS, SVG), made once at startup; null when it would not be smaller. */
  gzip: Uint8Array<ArrayBuffer> | null
  type: string
  hash: string
}

const COMPRESSIBLE = new Set(['.css', '.js', '.svg'])

/**
 * The server's own code that page scripts use, served ahead of an asset's text so the scripts repeat none of it:
 * site.js writes sizes with humanSize (src/lib/size.ts), as the server's messages and pages do.
 */
const SERVED_AHEAD: Record<string, string> = {
  'site.js': `window.imghostHumanSize = ${humanSize.toString()}\n`,
}

function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>()
  for (const name of readdirSync(ASSET_DIR)) {
    if (!ASSET_NAME.test(name)) continue
    const own = readFileSync(join(ASSET_DIR, name))
    const bytes = new Uint8Array(Buffer.concat([Buffer.from(SERVED_AHEAD[name] ?? ''), own])) as Uint8Array<ArrayBuffer>
    const gzip = COMPRESSIBLE.has(extname(name))
      ? (new Uint8Array(Bun.gzipSync(bytes, { level: 9 })) as Uint8Array<ArrayBuffer>)
      : null
    assets.set(name, {
      bytes,
      gzip: gzip && gzip.length < bytes.length ? gzip : null,
      type: ASSET_TYPES[extname(name)],
      hash: sha256Hex(bytes).slice(0, 12),
    })
  }
  return assets
}

const assets = loadAssets()

/** A local asset by its file name, or undefined (names are matched against the loaded set, never joined into paths). */
export const getAsset = (name: string): Asset | undefined => assets.get(name)

/** The versioned URL of a local asset; an unknown name is a programming error. */
function assetUrl(name: string): string {
  const asset = assets.get(name)
  if (!asset) throw new Error(`unknown asset: ${name}`)
  return `/assets/${name}?v=${asset.hash}`
}

// ---------------------------------------------------------------------------------------------------------------
// Security headers shared by every HTML page.

/** Content-Security-Policy of the pages: everything local; images also from the CDN base when it is another origin. */
export function contentSecurityPolicy(site: Pick<Config['site'], 'publicUrl' | 'cdnUrl'>): string {
  const cdnOrigin = new URL(site.cdnUrl).origin
  const imgSrc = cdnOrigin !== new URL(site.publicUrl).origin ? `'self' data: ${cdnOrigin}` : `'self' data:`
  return [
    "default-src 'self'",
    `img-src ${imgSrc}`,
    "script-src 'self'",
    "style-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'",
  ].join('; ')
}

function securityHeaders(site: Pick<Config['site'], 'publicUrl' | 'cdnUrl'>): Record<string, string> {
  return {
    'content-security-policy': contentSecurityPolicy(site),
    'x-frame-options': 'DENY',
    'referrer-policy': 'strict-origin-when-cross-origin',
    'x-content-type-options': 'nosniff',
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Layout.

export interface PageOptions {
  /** The document title (escaped). */
  title: string
  /** Extra head elements: meta tags, alternate links. */
  head?: SafeHtml
  body: SafeHtml
  status?: number
  /** `<meta name="robots" content="noindex">`, for private things and error pages. */
  noindex?: boolean
  /** Extra local scripts and stylesheets by asset name (site.css and site.js are always there). */
  scripts?: string[]
  styles?: string[]
  /** Extra response headers (the security headers are always set). */
  headers?: Record<string, string>
  /** A class on <body>, for page-specific styling. */
  bodyClass?: string
}

export type PageRenderer = ReturnType<typeof createPageRenderer>

export function createPageRenderer(config: PageConfig) {
  const headers = securityHeaders(config.site)

  function document(opts: PageOptions): string {
    const styles = ['site.css', ...(opts.styles ?? [])]
    const scripts = ['site.js', ...(opts.scripts ?? [])]
    return (
      '<!doctype html>\n' +
      html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<script src="${assetUrl('theme.js')}"></script>
<link rel="icon" href="${assetUrl('favicon.svg')}" type="image/svg+xml">
<title>${opts.title}</title>
${opts.noindex ? raw('<meta name="robots" content="noindex">\n') : ''}${opts.head ?? ''}
${styles.map((s) => html`<link rel="stylesheet" href="${assetUrl(s)}">\n`)}${scripts.map((s) => html`<script src="${assetUrl(s)}" defer></script>\n`)}</head>
<body${opts.bodyClass ? html` class="${opts.bodyClass}"` : ''}>
<header class="site-header">
<a class="brand" href="/">${config.site.name}</a>
<nav aria-label="Site"><a href="/">Upload</a><a href="/gallery">Gallery</a><a href="/dashboard" data-auth="in" hidden>Dashboard</a><a href="/login" data-auth="out">Log in</a></nav>
<button type="button" class="theme-toggle secondary" id="theme-toggle" aria-pressed="false">Dark theme</button>
</header>
<main>
${opts.body}
</main>
<footer class="site-footer"><a href="/">${config.site.name}</a> · <a href="/swagger">API</a></footer>
</body>
</html>
`.value
    )
  }

  function respond(opts: PageOptions): Response {
    return new Response(document(opts), {
      status: opts.status ?? 200,
      headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', ...headers, ...opts.headers },
    })
  }

  function notFound(message = 'This page does not exist, or it was deleted.'): Response {
    return respond({
      title: `Not found · ${config.site.name}`,
      status: 404,
      noindex: true,
      body: html`<section class="notice"><h1>404 · Not found</h1><p>${message}</p><p><a class="button" href="/">Upload an image</a></p></section>`,
    })
  }

  return { headers, document, respond, notFound }
}
