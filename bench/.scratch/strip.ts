import { copyFileSync } from 'node:fs'
import { stripMetadata } from '../../src/media/exif'
import { createMediaProcessor } from '../../src/media/processor'
const media = createMediaProcessor({ maxPixels: 1e8 })
for (const [file, fmt] of [['bench/results/fixtures/1080p-v1.png', 'png'], ['bench/results/fixtures/12mp-v1.jpg', 'jpeg']] as const) {
  copyFileSync(file, '/tmp/strip-test')
  const time = async (label: string, fn: () => Promise<unknown>) => { for (let i = 0; i < 5; i++) await fn(); const t = performance.now(); for (let i = 0; i < 30; i++) await fn(); console.log(fmt, label, ((performance.now() - t) / 30).toFixed(2), 'ms') }
  await time('strip gps', () => stripMetadata('/tmp/strip-test', fmt, 'gps'))
  await time('inspect', () => media.inspect('/tmp/strip-test'))
  await time('sha256+read', async () => { const h = new Bun.CryptoHasher('sha256'); h.update(await Bun.file('/tmp/strip-test').bytes()); h.digest('hex') })
}
