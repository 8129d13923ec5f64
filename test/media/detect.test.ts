import { describe, expect, test } from 'bun:test'
import { detectFormat } from '../../src/media/detect'
import { FORMATS, formatFromExt, type ImageFormat } from '../../src/media/formats'
import { buildIco, encodeBmp, gradient } from './helpers'

const text = (s: string) => new TextEncoder().encode(s)

describe('formats table', () => {
  test('every format has its mime and extension, and extensions map back', () => {
    expect(FORMATS).toEqual({
      jpeg: { mime: 'image/jpeg', ext: 'jpg' },
      png: { mime: 'image/png', ext: 'png' },
      gif: { mime: 'image/gif', ext: 'gif' },
      webp: { mime: 'image/webp', ext: 'webp' },
      svg: { mime: 'image/svg+xml', ext: 'svg' },
      bmp: { mime: 'image/bmp', ext: 'bmp' },
      ico: { mime: 'image/x-icon', ext: 'ico' },
      tiff: { mime: 'image/tiff', ext: 'tiff' },
      avif: { mime: 'image/avif', ext: 'avif' },
      heic: { mime: 'image/heic', ext: 'heic' },
    })
    for (const [format, { ext }] of Object.entries(FORMATS)) expect(formatFromExt(ext)).toBe(format as ImageFormat)
    for (const other of ['jpeg', 'JPG', 'tif', '.png', 'exe', '']) expect(formatFromExt(other)).toBeUndefined()
  })
})

describe('detectFormat', () => {
  test('recognises images sharp writes', async () => {
    const img = () => gradient(16, 8)
    expect(detectFormat(await img().jpeg().toBuffer())).toBe('jpeg')
    expect(detectFormat(await img().png().toBuffer())).toBe('png')
    expect(detectFormat(await img().gif().toBuffer())).toBe('gif')
    expect(detectFormat(await img().webp().toBuffer())).toBe('webp')
    expect(detectFormat(await img().tiff().toBuffer())).toBe('tiff')
    expect(detectFormat(new Uint8Array([0x4d, 0x4d, 0, 0x2a, 0, 0, 0, 8]))).toBe('tiff') // big-endian TIFF
    expect(detectFormat(await img().avif().toBuffer())).toBe('avif')
  })

  test('recognises BMP and ICO built by hand', () => {
    const pixels = Array.from({ length: 4 }, () => [1, 2, 3, 255] as [number, number, number, number])
    expect(detectFormat(encodeBmp({ width: 2, height: 2, pixels, bpp: 24 }))).toBe('bmp')
    expect(detectFormat(encodeBmp({ width: 2, height: 2, pixels, bpp: 24, header: 124 }))).toBe('bmp')
    const dib = encodeBmp({ width: 2, height: 2, pixels, bpp: 32, icon: true })
    expect(detectFormat(buildIco([{ data: dib, width: 2, height: 2, bpp: 32 }]))).toBe('ico')
  })

  test('BMP needs a plausible DIB header size and ICO at least one entry', () => {
    const bmp = encodeBmp({ width: 1, height: 1, pixels: [[0, 0, 0, 255]], bpp: 24 })
    bmp[14] = 41
    expect(detectFormat(bmp)).toBeNull()
    expect(detectFormat(new Uint8Array([0, 0, 1, 0, 0, 0, ...new Array(16).fill(0)]))).toBeNull()
  })

  test('AVIF needs the avif or avis brand in ftyp', () => {
    const ftyp = (major: string, ...compatible: string[]) =>
      text(`\0\0\0${String.fromCharCode(16 + 4 * compatible.length)}ftyp${major}\0\0\0\0${compatible.join('')}`)
    expect(detectFormat(ftyp('avif'))).toBe('avif')
    expect(detectFormat(ftyp('mif1', 'mif1', 'avis'))).toBe('avif')
    expect(detectFormat(ftyp('isom', 'isom', 'mp41'))).toBeNull()
  })

  test('HEIC/HEIF by any HEIF brand in ftyp, AVIF first', () => {
    const ftyp = (major: string, ...compatible: string[]) =>
      text(`\0\0\0${String.fromCharCode(16 + 4 * compatible.length)}ftyp${major}\0\0\0\0${compatible.join('')}`)
    for (const brand of ['heic', 'heix', 'hevc', 'heim', 'heis', 'mif1', 'msf1'])
      expect(detectFormat(ftyp(brand))).toBe('heic')
    expect(detectFormat(ftyp('isom', 'mp41', 'heic'))).toBe('heic')
    expect(detectFormat(ftyp('mif1', 'mif1', 'avif'))).toBe('avif')
    expect(detectFormat(ftyp('isom', 'isom', 'mp41'))).toBeNull()
    // The box must fit in what was read: a cut ftyp is no brand.
    expect(detectFormat(ftyp('heic').subarray(0, 15))).toBeNull()
  })

  test('SVG is recognised by its root element after a prolog', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'
    for (const doc of [
      svg,
      `\uFEFF  \n${svg}`,
      `<?xml version="1.0" encoding="UTF-8"?>\n<!-- made by hand -->\n${svg}`,
      `<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">${svg}`,
      `<!DOCTYPE svg [ <!ENTITY x "a>b"> ]>${svg}`,
      '<svg>',
    ]) {
      expect(detectFormat(text(doc))).toBe('svg')
    }
    for (const doc of [
      '<html><svg/></html>',
      '<svgfoo/>',
      'hello <svg/>',
      '<!-- unterminated <svg/>',
      '<!DOCTYPE html><svg/>',
      '<?xml version="1.0"?><root><svg/></root>',
      '',
    ]) {
      expect(detectFormat(text(doc))).toBeNull()
    }
  })

  test('text and random bytes are not images', () => {
    expect(detectFormat(text('just some text, not an image'))).toBeNull()
    expect(detectFormat(new Uint8Array([0xff, 0xd8]))).toBeNull()
    expect(detectFormat(text('RIFF\0\0\0\0WAVEfmt '))).toBeNull()
    expect(detectFormat(text('GIF88a'))).toBeNull()
  })
})
