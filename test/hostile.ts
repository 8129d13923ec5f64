/**
 * The hostile uploads of issue 17's first table, as the bench's `hostile` group sends them (anonymously, one at a
 * time, printing how long /healthz waits meanwhile); the tests upload the same files (test/media/hostile-files.ts).
 */
import { gpsEntriesPng, nestedUseSvg, oneBitBmp, strayZeroJpeg, xmpBombPng } from './media/hostile-files'

export interface HostileUpload {
  name: string
  filename: string
  bytes(): Promise<Uint8Array> | Uint8Array
}

/** Every hostile file of issue 17's table, as the bench uploads them (anonymously, one at a time). */
export const HOSTILE_UPLOADS: HostileUpload[] = [
  {
    name: 'a 554-byte PNG whose zTXt XMP inflates to 196 KB of GPS elements',
    filename: 'xmp-bomb.png',
    bytes: () => xmpBombPng(),
  },
  {
    name: 'a PNG whose eXIf GPS directory has 10,000 entries over a 6 MB block',
    filename: 'gps-entries.png',
    bytes: () => gpsEntriesPng(),
  },
  { name: 'a 12.5 MB 1-bit 10000x10000 BMP', filename: 'big.bmp', bytes: () => oneBitBmp(10_000) },
  {
    name: 'a 2 KB SVG of nested <use> with a blur',
    filename: 'slow.svg',
    bytes: () => new TextEncoder().encode(nestedUseSvg(6, 10)),
  },
  { name: 'a JPEG with GPS and a stray 00 byte between markers', filename: 'stray.jpg', bytes: () => strayZeroJpeg() },
]
