import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// The independent judge of what a stored file carries: Debian's exiftool (libimage-exiftool-perl, installed by
// .ci/run), which reads far more places than sharp or exif-reader (PNG text forms of Exif, split APP1, Photoshop
// resources, HEIF items, unknown chunks, trailers). Nothing here shares code or assumptions with src/media.

/** One file's tags as exiftool reads them: `Group:Name` -> value (`-G1 -s -n`). */
export type Tags = Record<string, unknown>

/**
 * Every tag exiftool reads from each file, in one exiftool run: duplicates (`-a`), unknown tags (`-u`), embedded
 * documents (`-ee`), minor errors tolerated (`-m`) so a damaged file still shows what can be read from it.
 */
export async function readTags(files: readonly string[]): Promise<Tags[]> {
  if (files.length === 0) return []
  const proc = Bun.spawn(['exiftool', '-j', '-a', '-u', '-ee', '-G1', '-s', '-n', '-m', '--', ...files], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  await proc.exited
  if (!out.trim()) throw new Error(`exiftool read nothing: ${err}`)
  const read = JSON.parse(out) as Tags[]
  const bySource = new Map(read.map((t) => [t.SourceFile as string, t]))
  return files.map((f) => {
    const tags = bySource.get(f)
    if (!tags) throw new Error(`exiftool did not read ${f}: ${err}`)
    return tags
  })
}

/** The same for files held in memory: written to a scratch directory first. */
export async function readTagsOf(files: readonly Uint8Array[]): Promise<Tags[]> {
  const dir = await mkdtemp(join(tmpdir(), 'exiftool-'))
  try {
    const paths = files.map((_, i) => join(dir, `f${i}`))
    await Promise.all(files.map((bytes, i) => Bun.write(paths[i]!, bytes)))
    return await readTags(paths)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** The tag name without its group: `XMP-exif:GPSLatitude` -> `GPSLatitude`. */
const nameOf = (key: string) => key.slice(key.indexOf(':') + 1)
const groupOf = (key: string) => key.slice(0, Math.max(0, key.indexOf(':')))

/**
 * Names of location data in any group: GPS tags (Exif, XMP, PNG text, maker notes, Composite:GPSPosition), XMP
 * and IPTC location fields (`photoshop:City`, `Iptc4xmpCore:Location`, IPTC `Province-State`, `LocationCreated...`),
 * coordinates under any name.
 */
const LOCATION_NAME = /gps|latitude|longitude|location|city|country|province|^state$|geotag|geoloc/i

/** Tags that are location data, as `Group:Name`. */
export function locationTags(tags: Tags): string[] {
  return Object.keys(tags).filter((key) => key !== 'SourceFile' && LOCATION_NAME.test(nameOf(key)))
}

/** Groups that describe the file or its pixels only (never what, who, when or where): allowed under 'all'. */
const STRUCTURE_GROUPS = new Set([
  'ExifTool',
  'System',
  'File',
  'Composite',
  'JFIF',
  'Adobe',
  'ICC_Profile',
  'ICC-header',
  'ICC-view',
  'ICC-meas',
  'ICC-chrm',
  'PNG-pHYs',
  'PNG-cICP',
  'RIFF',
  'QuickTime',
  'Meta',
])

/** Names allowed in groups that mix structure with descriptive metadata (everything else there is metadata). */
const STRUCTURE_NAMES: Record<string, ReadonlySet<string>> = {
  IFD0: new Set([
    'Orientation',
    'ImageWidth',
    'ImageHeight',
    'BitsPerSample',
    'Compression',
    'PhotometricInterpretation',
    'FillOrder',
    'StripOffsets',
    'SamplesPerPixel',
    'RowsPerStrip',
    'StripByteCounts',
    'XResolution',
    'YResolution',
    'PlanarConfiguration',
    'ResolutionUnit',
    'TransferFunction',
    'Predictor',
    'WhitePoint',
    'PrimaryChromaticities',
    'ColorMap',
    'TileWidth',
    'TileLength',
    'TileOffsets',
    'TileByteCounts',
    'ExtraSamples',
    'SampleFormat',
    'JPEGTables',
    'YCbCrCoefficients',
    'YCbCrSubSampling',
    'YCbCrPositioning',
    'ReferenceBlackWhite',
    'PreviewImage',
    'PreviewImageStart',
    'PreviewImageLength',
    'SubfileType',
    'OldSubfileType',
  ]),
  PNG: new Set([
    'ImageWidth',
    'ImageHeight',
    'BitDepth',
    'ColorType',
    'Compression',
    'Filter',
    'Interlace',
    'Palette',
    'Transparency',
    'BackgroundColor',
    'Gamma',
    'WhitePointX',
    'WhitePointY',
    'RedX',
    'RedY',
    'GreenX',
    'GreenY',
    'BlueX',
    'BlueY',
    'SRGBRendering',
    'SignificantBits',
    'ProfileName',
    'AnimationFrames',
    'AnimationPlays',
  ]),
  // exiftool reads each attribute of an SVG's root as a tag of its own: these describe its geometry and style.
  SVG: new Set([
    'Xmlns',
    'SVGVersion',
    'BaseProfile',
    'ID',
    'TagX',
    'TagY',
    'ImageWidth',
    'ImageHeight',
    'ViewBox',
    'PreserveAspectRatio',
    'Style',
    'Class',
    'Enable-background',
  ]),
  GIF: new Set([
    'GIFVersion',
    'ImageWidth',
    'ImageHeight',
    'HasColorMap',
    'ColorResolutionDepth',
    'BitsPerPixel',
    'BackgroundColor',
    'TransparentColor',
    'AnimationIterations',
    'FrameCount',
    'Duration',
  ]),
}

/** Tags that 'all' must not leave: descriptive metadata of any kind (camera, dates, text, XMP, IPTC, comments...). */
export function metadataTags(tags: Tags): string[] {
  return Object.keys(tags).filter((key) => {
    if (key === 'SourceFile') return false
    const group = groupOf(key)
    if (key === 'File:Comment') return true // a JPEG COM segment
    if (STRUCTURE_GROUPS.has(group) || group.startsWith('ICC')) return LOCATION_NAME.test(nameOf(key))
    return !STRUCTURE_NAMES[group]?.has(nameOf(key))
  })
}
