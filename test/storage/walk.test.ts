import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { walkInWorker as walk } from '../../src/storage/walk'

// The local store's directory walk, read by a Worker (src/storage/walk.ts): every name once, in bounded batches,
// whichever way a directory is read (Bun whole, or find as a stream: STREAM_ABOVE picks by the directory's size).

const root = mkdtempSync(join(tmpdir(), 'imghost-walk-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const planted: string[] = []
for (const [dir, n] of [
  ['a', 1234],
  ['b', 0],
  ['c', 7],
] as const) {
  mkdirSync(join(root, dir))
  for (let i = 0; i < n; i++) {
    writeFileSync(join(root, dir, `f${i}`), '')
    planted.push(`${dir}/f${i}`)
  }
}

describe.each([
  ['read by Bun', Number.POSITIVE_INFINITY],
  ['streamed by find', 0],
])('walkInWorker, every directory %s', (_how, streamAbove) => {
  const walkInWorker = (at: string, dirs: string[], batch?: number) => walk(at, dirs, batch, streamAbove)

  test('yields every name of every directory once, as <dir>/<name>, never more than a batch at a time', async () => {
    const seen: string[] = []
    const sizes: number[] = []
    for await (const names of walkInWorker(root, ['a', 'b', 'c'], 100)) {
      sizes.push(names.length)
      seen.push(...names)
    }
    expect(seen.toSorted()).toEqual(planted.toSorted())
    expect(Math.max(...sizes)).toBe(100)
    expect(sizes.length).toBe(Math.ceil(planted.length / 100))
  })

  test('names as they are (spaces, a newline, a leading dash, other scripts); a directory inside is named, not entered', async () => {
    const odd = join(root, 'odd')
    mkdirSync(join(odd, 'sub'), { recursive: true })
    writeFileSync(join(odd, 'sub', 'inner'), '')
    const names = ['with space.png', 'line\nbreak', '-dash', 'été 写真', '.hidden']
    for (const name of names) writeFileSync(join(odd, name), '')
    const seen: string[] = []
    for await (const batch of walkInWorker(root, ['odd'], 2)) seen.push(...batch)
    expect(seen.toSorted()).toEqual([...names, 'sub'].map((n) => `odd/${n}`).toSorted())
  })

  test('a directory that cannot be read fails the walk with its reason', async () => {
    const walk = async () => {
      for await (const _ of walkInWorker(root, ['c', 'missing'])) {
        // read on
      }
    }
    await expect(walk()).rejects.toThrow(/ENOENT|no such file/i)
  })

  test('a walk left early ends; the next one starts afresh', async () => {
    for await (const names of walkInWorker(root, ['a'], 10)) {
      expect(names.length).toBe(10)
      break
    }
    let count = 0
    for await (const names of walkInWorker(root, ['c'], 10)) count += names.length
    expect(count).toBe(7)
  })
})
