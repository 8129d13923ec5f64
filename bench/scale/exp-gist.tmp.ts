import { SQL } from 'bun'
import { startPgCluster } from '../../test/pg-cluster'
import { prepareLibrary } from './library'
import { mkdtempSync } from 'node:fs'
const cluster = await startPgCluster()
try {
  const admin = new SQL(cluster.url)
  await admin.unsafe('CREATE DATABASE x1m')
  const url = new URL(cluster.url); url.pathname = '/x1m'
  const env = { DATABASE_URL: url.toString(), VARIANT_SECRET: 'bench-variant-secret-'.padEnd(48, 'v'), TOTP_KEY: 'bench-totp-key-'.padEnd(48, 't'), STORAGE: 'local', VERIFIED_STORAGE_LIMIT: String(2 ** 50) }
  const dataDir = mkdtempSync('/tmp/exppg-')
  await prepareLibrary({ engine: 'pg', rows: Number(process.env.ROWS ?? 1_000_000), dataDir, env, source: '/tmp/tiny.jpg', log: '/tmp/exppg-seed.log', files: 'none' })
  const db = new SQL(url.toString())
  const now = Date.now()
  const ex = async (label: string, q: string, plan = false) => {
    for (let i = 0; i < 3; i++) await db.unsafe(q)
    const ts: number[] = []
    for (let i = 0; i < 9; i++) { const t = performance.now(); await db.unsafe(q); ts.push(performance.now() - t) }
    ts.sort((a, b) => a - b)
    const r = await db.unsafe(q)
    console.log('##', label, ts[4].toFixed(2), 'ms', JSON.stringify(r[0] ?? null).slice(0, 60))
    if (plan) { const p = await db.unsafe('EXPLAIN (ANALYZE, BUFFERS) ' + q); console.log(p.map((p: any) => '   ' + p['QUERY PLAN']).join('\n')) }
  }
  const where = (u: string, word: string) => `${u} and lower(filename) LIKE '%${word}%' ESCAPE '\\' and (expires_at IS NULL OR expires_at > ${now}) and seq <= 99999999`
  const words = ['sunset', 'harbour-12', 'jpg', 'cat', 'zzz']
  const suite = async (tag: string) => {
    for (const w of words) {
      await ex(`${tag} count ${w}`, `select count(*) from (select 1 from images where ${where('user_id = 2', w)} limit 1001) s`, w === 'sunset')
      await ex(`${tag} page ${w}`, `select * from images where ${where('user_id = 2', w)} order by created_at desc, seq desc limit 24`)
    }
  }
  await suite('gin-novac')
  await db.unsafe('VACUUM ANALYZE images')
  await suite('gin')
  await db.unsafe('CREATE EXTENSION IF NOT EXISTS btree_gist')
  let t = performance.now()
  await db.unsafe('CREATE INDEX images_user_filename_gist ON images USING gist (user_id, lower(filename) gist_trgm_ops)')
  console.log('gist build', (performance.now() - t).toFixed(0), 'ms')
  await db.unsafe('ANALYZE images')
  await suite('both')
  await db.unsafe('DROP INDEX images_user_filename_trgm')
  await suite('gist')
  await db.unsafe('DROP INDEX images_user_filename_gist')
  t = performance.now()
  await db.unsafe('CREATE INDEX images_filename_trgm ON images USING gin (lower(filename) gin_trgm_ops)')
  console.log('trgm-only build', (performance.now() - t).toFixed(0), 'ms')
  await db.unsafe('ANALYZE images')
  await suite('trgm')
  console.log(await db.unsafe(`select pg_size_pretty(pg_relation_size('images_user_filename_gist')) g`))
} finally { await cluster.stop() }
