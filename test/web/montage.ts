// Scratch: puts screenshots side by side.
import sharp from 'sharp'
const [out, ...files] = process.argv.slice(2)
const metas = await Promise.all(files.map((f) => sharp(f).metadata()))
const height = Math.min(1800, Math.max(...metas.map((m) => m.height!)))
let left = 0
const parts = []
for (let i = 0; i < files.length; i++) {
  const buf = await sharp(files[i]).extract({ left: 0, top: 0, width: metas[i].width!, height: Math.min(height, metas[i].height!) }).toBuffer()
  parts.push({ input: buf, left, top: 0 })
  left += metas[i].width! + 10
}
await sharp({ create: { width: left, height, channels: 3, background: '#888' } }).composite(parts).png().toFile(out)
