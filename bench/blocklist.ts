/**
 * Blocklist lookups (issue 25's target: < 1 ms per lookup with 100,000 blocked hashes): the check every upload makes
 * (src/modules/blocks/service.ts `refusePictures`: the one SQL read for blocks added since, then the multi-index
 * lookup), on a real database holding `--blocks` random hashes, at the default BLOCK_HAMMING_DISTANCE; beside a full
 * scan of the same hashes (the reference: what a lookup without the index would cost).
 *
 * Usage: bun bench/blocklist.ts [--blocks=N] [--lookups=N]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config'
import { closeDatabase, openDatabase } from '../src/db/client'
import { blocks } from '../src/db/schema'
import { hashHalves, popcount32 } from '../src/media/phash'
import { createBlockService } from '../src/modules/blocks/service'
import { createLocalStorage } from '../src/storage/local'
import { percentile } from './lib/stats'

const { values: args } = parseArgs({
  options: { blocks: { type: 'string', default: '100000' }, lookups: { type: 'string', default: '20000' } },
})
const BLOCKS = Number(args.blocks)
const LOOKUPS = Number(args.lookups)
const maxDistance = loadConfig({}).blocks.hammingDistance

let state = 0x2545f491
const word = () => {
  state ^= state << 13
  state ^= state >>> 17
  state ^= state << 5
  return (state >>> 0).toString(16).padStart(8, '0')
}
const randomHash = () => word() + word()
/** `hex` with `bits` random bits flipped: a copy of a blocked picture. */
function near(hex: string, bits: number) {
  let big = BigInt(`0x${hex}`)
  const flipped = new Set<number>()
  while (flipped.size < bits) flipped.add(Number.parseInt(word(), 16) % 64)
  for (const bit of flipped) big ^= 1n << BigInt(bit)
  return big.toString(16).padStart(16, '0')
}

const dir = mkdtempSync(join(tmpdir(), 'imghost-bench-blocklist-'))
const db = openDatabase(join(dir, 'imghost.sqlite'))
try {
  const hashes = Array.from({ length: BLOCKS }, randomHash)
  db.transaction((tx) => {
    for (let i = 0; i < hashes.length; i += 1000)
      tx.insert(blocks)
        .values(hashes.slice(i, i + 1000).map((phash) => ({ phash, reason: 'bench', source: 'import' as const })))
        .run()
  })
  const loadStart = performance.now()
  const service = createBlockService({ db, storage: createLocalStorage(dir), maxDistance, publicUrl: '' })
  // The hashes load with the first check.
  await service.refusePictures([])
  const loadMs = performance.now() - loadStart

  const time = async (queries: string[], check: (q: string) => Promise<unknown>) => {
    const times: number[] = []
    for (const q of queries) {
      const start = performance.now()
      await check(q)
      times.push(performance.now() - start)
    }
    return times
  }
  const refused = (q: string) =>
    service.refusePictures([q]).then(
      () => false,
      () => true,
    )
  const misses = Array.from({ length: LOOKUPS }, randomHash)
  const hits = Array.from({ length: LOOKUPS }, (_, i) => near(hashes[i % BLOCKS]!, maxDistance))
  await time(misses.slice(0, 1000), refused) // warm-up: JIT
  const missTimes = await time(misses, refused)
  const hitTimes = await time(hits, refused)
  let missedHits = 0
  for (const q of hits) if (!(await refused(q))) missedHits++
  // The reference at its best: the hashes already as 32-bit halves in typed arrays, compared one by one.
  const his = Uint32Array.from(hashes, (h) => hashHalves(h)[0])
  const los = Uint32Array.from(hashes, (h) => hashHalves(h)[1])
  const scan = (q: string) => {
    const [hi, lo] = hashHalves(q)
    for (let i = 0; i < his.length; i++)
      if (popcount32(his[i]! ^ hi) + popcount32(los[i]! ^ lo) <= maxDistance) return true
    return false
  }
  const scanTimes = await time(misses.slice(0, 200), async (q) => scan(q))

  const ms = (x: number) => `${x < 0.1 ? x.toFixed(4) : x.toFixed(3)} ms`
  const row = (name: string, t: number[]) =>
    `  ${name.padEnd(44)} mean ${ms(t.reduce((a, b) => a + b, 0) / t.length)}, p50 ${ms(percentile(t, 50))}, p99 ${ms(percentile(t, 99))}`
  console.log(`Blocklist lookup, ${BLOCKS.toLocaleString('en')} blocked hashes, BLOCK_HAMMING_DISTANCE=${maxDistance}:`)
  console.log(`  loaded into memory at start in ${loadMs.toFixed(0)} ms`)
  console.log(row(`upload check, no match (${LOOKUPS} lookups)`, missTimes))
  console.log(row(`upload check, a copy ${maxDistance} bits away (${LOOKUPS})`, hitTimes))
  console.log(row('reference: full scan of the same hashes (200)', scanTimes))
  console.log(`  copies found: ${LOOKUPS - missedHits}/${LOOKUPS}; target < 1 ms per lookup`)
} finally {
  await closeDatabase(db)
  rmSync(dir, { recursive: true, force: true })
}
