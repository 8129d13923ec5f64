import { type AppProcess, METRICS_TOKEN } from '../lib/app'
import { epochNow, type Gap, readGaps, worstStall } from '../lib/lag'
import { median } from '../lib/stats'
import type { Library } from './library'

/** A library served: the running service, its seeded data, and what the reads need to know of it. */
export interface Site {
  label: string
  app: AppProcess
  lib: Library
  /** The probe's file of event-loop gaps (bench/lib/server-probe.ts). */
  lagFile: string
  /** The probe's file of slow SQLite statements. */
  sqlFile: string
  /** Pages of 40 of the gallery, of 50 of the owner's list, of 40 of the owner's profile and of 20 of a search. */
  pages: { gallery: number; own: number; profile: number; search: number }
  /** A public album of the owner's, and a seeded image (its files hard-linked by the seed). */
  albumId: string
  seededId: string
  /** The bytes the owner uploads (the source's). */
  upload: Blob
}

type Auth = 'none' | 'key' | 'jwt' | 'admin' | 'metrics'

/** One read path: its name in the tables and the path on a site (deep pages are the middle one of that site). */
export interface Read {
  name: string
  auth: Auth
  path: (s: Site) => string
  /** A write among the reads (an upload): its body, made per request. */
  body?: (s: Site) => FormData
  /** Reads a seeded row's file: left out where the seed stored none. */
  file?: true
}

export const SEARCH_WORD = 'sunset'
const mid = (pages: number) => Math.max(1, Math.ceil(pages / 2))

/** Every read of issue 34, as a visitor, the owner of half the rows (API key or session), or the admin asks it. */
export const READS: Read[] = [
  { name: 'GET /api/gallery?page=1&limit=40', auth: 'none', path: () => '/api/gallery?page=1&limit=40' },
  {
    name: 'GET /api/gallery, middle page, limit 40',
    auth: 'none',
    path: (s) => `/api/gallery?page=${mid(s.pages.gallery)}&limit=40`,
  },
  {
    name: 'GET /api/gallery, last page, limit 40',
    auth: 'none',
    path: (s) => `/api/gallery?page=${s.pages.gallery}&limit=40`,
  },
  { name: `GET /api/search?q=${SEARCH_WORD}`, auth: 'none', path: () => `/api/search?q=${SEARCH_WORD}` },
  {
    name: `GET /api/search?q=${SEARCH_WORD}, last page`,
    auth: 'none',
    path: (s) => `/api/search?q=${SEARCH_WORD}&page=${s.pages.search}`,
  },
  { name: 'GET /api/v1/images?page=1&limit=50 (owner)', auth: 'key', path: () => '/api/v1/images?page=1&limit=50' },
  {
    name: 'GET /api/v1/images, middle page, limit 50 (owner)',
    auth: 'key',
    path: (s) => `/api/v1/images?page=${mid(s.pages.own)}&limit=50`,
  },
  { name: 'GET /api/v1/me (owner)', auth: 'key', path: () => '/api/v1/me' },
  { name: 'GET /api/account/usage (owner)', auth: 'jwt', path: () => '/api/account/usage' },
  { name: 'GET /api/users/:name (owner)', auth: 'none', path: (s) => `/api/users/${s.lib.owner.username}?limit=40` },
  {
    name: 'GET /api/users/:name, middle page',
    auth: 'none',
    path: (s) => `/api/users/${s.lib.owner.username}?limit=40&page=${mid(s.pages.profile)}`,
  },
  { name: 'GET /gallery (HTML)', auth: 'none', path: () => '/gallery' },
  { name: 'GET /gallery, middle page (HTML)', auth: 'none', path: (s) => `/gallery?page=${mid(s.pages.gallery * 2)}` },
  { name: `GET /gallery?q=${SEARCH_WORD} (HTML)`, auth: 'none', path: () => `/gallery?q=${SEARCH_WORD}` },
  { name: 'GET /u/:name (HTML)', auth: 'none', path: (s) => `/u/${s.lib.owner.username}` },
  {
    name: 'GET /u/:name, middle page (HTML)',
    auth: 'none',
    path: (s) => `/u/${s.lib.owner.username}?page=${mid(s.pages.profile * 2)}`,
  },
  { name: 'GET /a/:id, album page (HTML)', auth: 'none', path: (s) => `/a/${s.albumId}` },
  { name: 'GET /i/:id, viewer (HTML)', auth: 'none', path: (s) => `/i/${s.lib.sourceId}` },
  {
    name: 'GET /api/oembed',
    auth: 'none',
    path: (s) => `/api/oembed?url=${encodeURIComponent(`${s.app.url}/i/${s.lib.sourceId}`)}`,
  },
  { name: 'GET /api/v1/image/:id', auth: 'none', path: (s) => `/api/v1/image/${s.seededId}` },
  { name: 'GET /cdn/:id.jpg, a seeded row', auth: 'none', path: (s) => `/cdn/${s.seededId}.jpg`, file: true },
  {
    name: 'dashboard: GET /api/images?page=1&limit=24 (newest)',
    auth: 'jwt',
    path: () => '/api/images?page=1&limit=24&sort=date&order=desc',
  },
  {
    name: 'dashboard: GET /api/images, most viewed',
    auth: 'jwt',
    path: () => '/api/images?page=1&limit=24&sort=views&order=desc',
  },
  {
    name: 'dashboard: GET /api/images, private only',
    auth: 'jwt',
    path: () => '/api/images?page=1&limit=24&visibility=private&sort=date&order=desc',
  },
  {
    name: `dashboard: GET /api/images?q=${SEARCH_WORD}`,
    auth: 'jwt',
    path: () => `/api/images?page=1&limit=24&q=${SEARCH_WORD}&sort=date&order=desc`,
  },
  { name: 'dashboard: GET /api/albums', auth: 'jwt', path: () => '/api/albums' },
  { name: 'dashboard: GET /api/albums/:id', auth: 'jwt', path: (s) => `/api/albums/${s.albumId}` },
  { name: 'admin: GET /api/admin/users', auth: 'admin', path: () => '/api/admin/users?page=1&limit=20' },
  {
    name: 'admin: GET /api/admin/reports',
    auth: 'admin',
    path: () => '/api/admin/reports?status=open&page=1&limit=20',
  },
  { name: 'admin: GET /api/admin/blocks', auth: 'admin', path: () => '/api/admin/blocks?page=1&limit=20' },
  { name: 'GET /metrics', auth: 'metrics', path: () => '/metrics' },
  {
    // Not a read: the owner's upload checks their quota against what they store (issue 34's counters).
    name: 'POST /api/v1/upload (owner, a 96x64 JPEG)',
    auth: 'key',
    path: () => '/api/v1/upload',
    body: (s) => {
      const form = new FormData()
      form.append('file', s.upload, 'upload.jpg')
      return form
    },
  },
]

export function headersFor(s: Site, auth: Auth): Record<string, string> {
  if (auth === 'key') return { 'x-api-key': s.lib.owner.apiKey }
  if (auth === 'jwt') return { authorization: `Bearer ${s.lib.owner.jwt}` }
  if (auth === 'admin') return { authorization: `Bearer ${s.lib.admin.jwt}` }
  if (auth === 'metrics') return { authorization: `Bearer ${METRICS_TOKEN}` }
  return {}
}

/** One request, timed; its window in epoch ms for the probe's gaps. Throws unless it answers 200 (201: an upload). */
async function timed(s: Site, read: Read) {
  const path = read.path(s)
  const from = epochNow()
  const t = performance.now()
  const body = read.body?.(s)
  const res = await fetch(s.app.url + path, { method: body ? 'POST' : 'GET', body, headers: headersFor(s, read.auth) })
  await res.arrayBuffer()
  const ms = performance.now() - t
  if (res.status !== 200 && res.status !== 201) throw new Error(`${s.label}: ${path} answered ${res.status}`)
  return { ms, from, to: epochNow() }
}

export interface ReadResult {
  read: string
  /**
   * Per site label: the path asked, median ms, each run's ms, its window (epoch ms) and the worst event-loop stall
   * during it (lib/lag.ts).
   */
  sites: Record<string, { path: string; medianMs: number; runs: number[]; windows: [number, number][]; blocks: Gap[] }>
}

/**
 * Each read on every site, `runs` times, the sites interleaved (A B A B ...) so load from elsewhere on the machine
 * falls on all alike, after `warmup` requests each; one request at a time.
 */
export async function measureReads(sites: Site[], runs = 7, warmup = 2): Promise<ReadResult[]> {
  const results: ReadResult[] = []
  for (const read of READS.filter((r) => !r.file || sites.every((s) => s.lib.files !== 'none'))) {
    for (const s of sites) for (let i = 0; i < warmup; i++) await timed(s, read)
    const windows = new Map(sites.map((s) => [s.label, [] as Awaited<ReturnType<typeof timed>>[]]))
    for (let r = 0; r < runs; r++) for (const s of sites) windows.get(s.label)!.push(await timed(s, read))
    const entry: ReadResult = { read: read.name, sites: {} }
    for (const s of sites) {
      const gaps = readGaps(s.lagFile)
      const w = windows.get(s.label)!
      entry.sites[s.label] = {
        path: read.path(s),
        medianMs: median(w.map((x) => x.ms)),
        runs: w.map((x) => Math.round(x.ms * 10) / 10),
        windows: w.map((x) => [x.from, x.to]),
        blocks: w.map((x) => worstStall(gaps, x.from, x.to)),
      }
    }
    results.push(entry)
  }
  return results
}

/** What a site's reads need to know: page counts, a public album of the owner's, a seeded image's id. */
export async function siteOf(
  label: string,
  app: AppProcess,
  lib: Library,
  probes: { lagFile: string; sqlFile: string },
): Promise<Site> {
  const get = async <T>(path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(app.url + path, { headers })
    if (res.status !== 200) throw new Error(`${label}: ${path} answered ${res.status}`)
    return (await res.json()) as T
  }
  const gallery = await get<{ totalPages: number; images: { id: string }[] }>('/api/gallery?page=1&limit=40')
  const own = await get<{ pages: number }>('/api/v1/images?page=1&limit=50', { 'x-api-key': lib.owner.apiKey })
  const profile = await get<{ totalPages: number }>(`/api/users/${lib.owner.username}?limit=40`)
  const search = await get<{ totalPages: number }>(`/api/search?q=${SEARCH_WORD}`)
  const albums = await get<{ albums: { id: string; isPublic: boolean }[] }>('/api/albums', {
    authorization: `Bearer ${lib.owner.jwt}`,
  })
  const album = albums.albums.find((a) => a.isPublic)
  const seeded = gallery.images.find((i) => i.id !== lib.sourceId)
  if (!album || !seeded) throw new Error(`${label}: no public album or no seeded image`)
  return {
    label,
    app,
    lib,
    ...probes,
    pages: { gallery: gallery.totalPages, own: own.pages, profile: profile.totalPages, search: search.totalPages },
    albumId: album.id,
    seededId: seeded.id,
    upload: new Blob([await Bun.file(lib.source).arrayBuffer()], { type: 'image/jpeg' }),
  }
}
