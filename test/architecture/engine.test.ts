/**
 * Which engine runs is asked in src/db/ alone: the rest of the code calls its helpers (the change feed, dialect.ts,
 * byEngine in client.ts), so a difference between the engines has one home. This reads every source file and fails on
 * an `engine ===` or `engine !==` outside src/db/.
 */
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'

const src = join(import.meta.dir, '..', '..', 'src')

const ASKS = /\bengine\s*[!=]==/

/** Each line under src/ (outside src/db/) that compares `engine`, with its place. */
async function engineChecks() {
  const found: string[] = []
  for await (const path of new Bun.Glob('**/*.ts').scan(src)) {
    if (path.startsWith('db/')) continue
    const lines = (await Bun.file(join(src, path)).text()).split('\n')
    for (const [i, line] of lines.entries()) if (ASKS.test(line)) found.push(`src/${path}:${i + 1}: ${line.trim()}`)
  }
  return found
}

describe('the engine is asked in src/db/ only', () => {
  test('no `engine ===` or `engine !==` outside src/db/', async () => {
    expect(await engineChecks()).toEqual([])
  })
})
