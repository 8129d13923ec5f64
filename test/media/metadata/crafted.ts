import { deflateSync } from 'node:zlib'
import { pngChunk } from '../helpers'
import {
  buildTiff,
  bytes,
  concat,
  photo,
  strayZeroJpeg,
  type TiffField,
  withJpegSegments,
  withPngChunks,
  XMP_WITH_GPS,
  xmpApp1,
  zTXt,
} from '../hostile-files'
import { exifIrb, gpsTiff, rawProfile, rgbTags, type Sample, tEXt, tiffFile } from './photos'

// The crafted JPEG, PNG and TIFF files of issue 33: the forms a hostile uploader (or a careless writer) uses to hide
// location from a stripper, each built here from small pieces and each read by exiftool as carrying location.

type Bytes = Uint8Array<ArrayBuffer>
const jpegBase = async (seed = 1): Promise<Bytes> => new Uint8Array(await photo(32, 24, seed).jpeg().toBuffer())
const pngBase = async (): Promise<Bytes> => new Uint8Array(await photo(24, 16).png().toBuffer())
const jpeg = (header: string, tiff: Uint8Array): [number, Uint8Array] => [0xe1, concat([header, tiff])]

/**
 * Multi-Picture Format as phones write it: an MPF APP2 segment whose index points at a second JPEG after the first
 * one's EOI (here one with GPS, which exiftool reads with -ee).
 */
function withMpf(first: Uint8Array, second: Uint8Array): Bytes {
  const tiff = Buffer.alloc(8 + 2 + 3 * 12 + 4 + 32)
  tiff.write('MM\0*', 0, 'latin1')
  tiff.writeUInt32BE(8, 4)
  tiff.writeUInt16BE(3, 8)
  const entry = (i: number, tag: number, type: number, count: number, value: number | string) => {
    const at = 10 + i * 12
    tiff.writeUInt16BE(tag, at)
    tiff.writeUInt16BE(type, at + 2)
    tiff.writeUInt32BE(count, at + 4)
    if (typeof value === 'string') tiff.write(value, at + 8, 'latin1')
    else tiff.writeUInt32BE(value, at + 8)
  }
  const entries = 8 + 2 + 3 * 12 + 4
  entry(0, 0xb000, 7, 4, '0100') // MPFVersion
  entry(1, 0xb001, 4, 1, 2) // NumberOfImages
  entry(2, 0xb002, 7, 32, entries) // MPEntry
  const segmentLength = 2 + 4 + tiff.length
  const firstLength = first.length + 2 + segmentLength
  const tiffStart = 2 + 4 + 4 // in the file: SOI, the segment's marker and length, "MPF\0"
  tiff.writeUInt32BE(0x030000, entries) // the primary image
  tiff.writeUInt32BE(firstLength, entries + 4)
  tiff.writeUInt32BE(second.length, entries + 16 + 4)
  tiff.writeUInt32BE(firstLength - tiffStart, entries + 16 + 8)
  return withJpegSegments(concat([first, second]), [[0xe2, concat(['MPF\0', tiff])]]) as Bytes
}

/** Extended XMP: a packet naming its GUID, and the extension (GPS) cut into two APP1 parts at byte offsets. */
function extendedXmp(): [number, Uint8Array][] {
  const rdf = (inner: string) =>
    `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">${inner}</rdf:RDF></x:xmpmeta>`
  const guid = 'A'.repeat(32)
  const main = rdf(`<rdf:Description xmlns:xmpNote="http://ns.adobe.com/xmp/note/" xmpNote:HasExtendedXMP="${guid}"/>`)
  const extension = bytes(
    rdf('<rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="51,30.43N"/>'),
  )
  const cut = extension.length >> 1
  const part = (offset: number, data: Uint8Array): [number, Uint8Array] => {
    const head = Buffer.alloc(8)
    head.writeUInt32BE(extension.length, 0)
    head.writeUInt32BE(offset, 4)
    return [0xe1, concat(['http://ns.adobe.com/xmp/extension/\0', guid, head, data])]
  }
  return [xmpApp1(bytes(main)), part(0, extension.subarray(0, cut)), part(cut, extension.subarray(cut))]
}

/** JPEG: Exif hidden from a stripper that looks for one standard APP1, XMP, MPF images, stray bytes. */
export async function craftedJpegs(): Promise<Sample[]> {
  const tiff = gpsTiff()
  const cut = 8 + 2 + 2 * 12 + 4 + 6 // IFD0 and Make's value in the first segment, the GPS directory in the second
  const global = buildTiff({
    ifd0: [
      [0x010f, 2, 'Acme'],
      [0x0190, 4, { dir: 'global' }],
    ],
    global: [[0x8825, 4, { dir: 'gps' }]],
    gps: [
      [0x0001, 2, 'N'],
      [0x0002, 5, [51, 1, 30, 1, 26, 1]],
    ],
  })
  const badMagic = Buffer.from(tiff)
  badMagic.writeUInt16LE(0xff, 2)
  const withGps = new Uint8Array(
    await photo(16, 16, 5)
      .jpeg()
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 26/1' } })
      .toBuffer(),
  )
  const samples: [string, [number, Uint8Array][] | Bytes][] = [
    [
      'Exif split over two APP1 segments',
      [jpeg('Exif\0\0', tiff.subarray(0, cut)), jpeg('Exif\0\0', tiff.subarray(cut))],
    ],
    ['Photoshop resource 0x0422 (Exif) in APP13', [[0xed, concat(['Photoshop 3.0\0', exifIrb(tiff)])]]],
    ['an APP1 "EXIF" header', [jpeg('EXIF\0\0', tiff)]],
    ['an APP1 "exif" header', [jpeg('exif\0\0', tiff)]],
    ['bytes before "Exif" in APP1', [jpeg('ab', concat(['Exif\0\0', tiff]))]],
    ['GPS under GlobalParametersIFD', [jpeg('Exif\0\0', global)]],
    ['a TIFF header whose magic is not 42', [jpeg('Exif\0\0', badMagic)]],
    ['XMP with GPS and a comment', [xmpApp1(bytes(XMP_WITH_GPS)), [0xfe, bytes('Soho')]]],
    ['extended XMP with GPS, in two parts', extendedXmp()],
    ['an image with GPS after EOI, indexed by MPF', withMpf(await jpegBase(), withGps)],
    ['a stray 00 and fill bytes between markers', (await strayZeroJpeg()) as Bytes],
  ]
  return Promise.all(
    samples.map(async ([name, x]) => ({
      name,
      format: 'jpeg' as const,
      file: Array.isArray(x) ? (withJpegSegments(await jpegBase(), x) as Bytes) : x,
    })),
  )
}

/** PNG: Exif under other chunk types and headers, text and raw profiles, chunks after IEND. */
export async function craftedPngs(): Promise<Sample[]> {
  // Orientation only where a PNG reader would take it (eXIf); other chunk types are never shown turned.
  const tiff = gpsTiff()
  const turned = gpsTiff([[0x0112, 3, [6]]])
  const xmp = bytes(XMP_WITH_GPS)
  const u32 = (n: number) => {
    const b = Buffer.alloc(4)
    b.writeUInt32BE(n)
    return b
  }
  const samples: [string, Uint8Array[]][] = [
    ['eXIf starting with "Exif\\0\\0"', [pngChunk('eXIf', concat(['Exif\0\0', turned]))]],
    ['an eXIf chunk typed "EXIF"', [pngChunk('EXIF', tiff)]],
    ['an eXIf chunk typed "exif"', [pngChunk('exif', tiff)]],
    ['a compressed Exif chunk (zxIf)', [pngChunk('zxIf', concat([[0], u32(tiff.length), deflateSync(tiff)]))]],
    [
      'iTXt XMP with compression flag 2',
      [pngChunk('iTXt', concat(['XML:com.adobe.xmp\0', [2, 0, 0, 0], deflateSync(xmp)]))],
    ],
    ['iTXt XMP, uncompressed', [pngChunk('iTXt', concat(['XML:com.adobe.xmp\0', [0, 0, 0, 0], xmp]))]],
    [
      'Raw profile type 8bim holding Photoshop Exif (0x0422)',
      [zTXt('Raw profile type 8bim', bytes(rawProfile('8bim', exifIrb(tiff))))],
    ],
    [
      'Raw profile type exif, "Exif\\0\\0" first',
      [tEXt('Raw profile type exif', rawProfile('exif', concat(['Exif\0\0', tiff])))],
    ],
    ['Raw profile type APP1', [zTXt('Raw profile type APP1', bytes(rawProfile('APP1', concat(['Exif\0\0', tiff]))))]],
    [
      'tEXt exif:GPSLatitude and xmp:GPSLongitude',
      [tEXt('exif:GPSLatitude', '51/1, 30/1, 0/1'), tEXt('xmp:GPSLongitude', '0,7.2W')],
    ],
  ]
  const out: Sample[] = await Promise.all(
    samples.map(async ([name, chunks]) => ({
      name,
      format: 'png' as const,
      file: withPngChunks(await pngBase(), chunks) as Bytes,
    })),
  )
  // exiftool reads chunks after IEND too (its Trailer group).
  out.push({
    name: 'a text chunk after IEND',
    format: 'png',
    file: concat([await pngBase(), tEXt('exif:GPSLatitude', '51/1')]) as Bytes,
  })
  return out
}

/** TIFF: location in Photoshop's Exif, under GlobalParametersIFD and SubIFDs, on a second page, in XMP and IPTC. */
export function craftedTiffs(): Sample[] {
  const gps: TiffField[] = [
    [0x0001, 2, 'N'],
    [0x0002, 5, [51, 1, 30, 1, 26, 1]],
  ]
  const pointer: TiffField = [0x8825, 4, { dir: 'gps' }]
  const samples: [string, Uint8Array][] = [
    ['Photoshop resources (tag 34377) holding Exif (0x0422)', tiffFile([[0x8649, 7, exifIrb(gpsTiff())]])],
    ['GPS under GlobalParametersIFD', tiffFile([[0x0190, 4, { dir: 'global' }]], { global: [pointer], gps })],
    ['GPS under SubIFDs', tiffFile([[0x014a, 4, { dir: 'sub' }]], { sub: [pointer], gps })],
    ['a second page with GPS', tiffFile([], { page: [...rgbTags(12, 8), pointer], gps }, { next: 'page' })],
    [
      'GPS in IFD0, big-endian, turned',
      tiffFile([pointer, [0x0112, 3, [6]], [0x010f, 2, 'Acme']], { gps }, { le: false }),
    ],
    [
      'XMP (700) and IPTC (33723) with places',
      tiffFile([
        [0x02bc, 1, XMP_WITH_GPS],
        [0x83bb, 7, iptcCity('London')],
      ]),
    ],
  ]
  return samples.map(([name, file]) => ({ name, format: 'tiff', file: file as Sample['file'] }))
}

/** An IPTC record 2 City dataset (2:90), as IPTC-IIM stores it. */
const iptcCity = (city: string) => concat([[0x1c, 2, 90, 0, city.length], city])
