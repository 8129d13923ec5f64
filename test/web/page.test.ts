import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { humanSize } from '../../src/lib/size'
import { getAsset } from '../../src/web/page'

const served = (name: string) => new TextDecoder().decode(getAsset(name)!.bytes)

describe('assets served with the server code they use', () => {
  test("site.js writes sizes with the server's humanSize, served ahead of its own text", () => {
    const own = readFileSync(join(import.meta.dir, '../../src/web/assets/site.js'), 'utf8')
    const text = served('site.js')
    expect(text.endsWith(own)).toBe(true)
    const window: { imghostHumanSize?: (bytes: number) => string } = {}
    new Function('window', text.slice(0, text.length - own.length))(window)
    for (const bytes of [0, 512, 1023, 1024, 1536, 1258291, 52428800, 5 * 1024 ** 4, 3 * 1024 ** 5])
      expect({ bytes, text: window.imghostHumanSize?.(bytes) }).toEqual({ bytes, text: humanSize(bytes) })
  })

  test('other assets are served as they are', () => {
    const own = readFileSync(join(import.meta.dir, '../../src/web/assets/upload.js'), 'utf8')
    expect(served('upload.js')).toBe(own)
  })
})
