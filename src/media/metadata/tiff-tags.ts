/**
 * The tags a rebuilt Exif or TIFF structure may hold, each with the field types and value counts a real writer uses
 * (anything else is left out). Nothing here can hold a location: no GPS directory or pointer, no free-text comment
 * (ImageDescription, UserComment, XPComment: writers put place names there), no maker note, no XMP, IPTC or Photoshop
 * block, no thumbnail or sub-image (IFD1, SubIFDs, GlobalParametersIFD), no private or unknown tag.
 */

export interface TagRule {
  types: readonly number[]
  min: number
  max: number
}

export const BYTE = 1
export const ASCII = 2
export const SHORT = 3
export const LONG = 4
export const RATIONAL = 5
export const UNDEFINED = 7
export const SRATIONAL = 10
export const IFD = 13

export const EXIF_IFD = 0x8769
export const INTEROP_IFD = 0xa005
export const ORIENTATION = 0x0112
export const STRIP_OFFSETS = 0x0111
export const STRIP_BYTE_COUNTS = 0x0117
export const TILE_OFFSETS = 0x0144
export const TILE_BYTE_COUNTS = 0x0145

const rule = (types: number | readonly number[], min = 1, max = min): TagRule => ({
  types: typeof types === 'number' ? [types] : types,
  min,
  max,
})
/** Text fields: a name, a date, a copyright line. */
const TEXT = rule(ASCII, 1, 2048)
const ONE_SHORT = rule(SHORT)
const ONE_RATIONAL = rule(RATIONAL)
const SHORT_OR_LONG = rule([SHORT, LONG])
const ONE_SRATIONAL = rule(SRATIONAL)
const VERSION = rule(UNDEFINED, 4)
const SUBSEC = rule(ASCII, 1, 16)
const POINTER = rule([LONG, IFD])
/** One offset or byte count per strip or tile. */
const DATA = rule([SHORT, LONG], 1, 1 << 24)

/** Orientation, in both modes (a photo shown sideways is worse than no metadata). */
export const ORIENTATION_ONLY: ReadonlyMap<number, TagRule> = new Map([[ORIENTATION, ONE_SHORT]])

/** IFD0 of an Exif block under 'gps': the camera, the software, who and when, the resolution. */
export const IFD0_TAGS: ReadonlyMap<number, TagRule> = new Map([
  [0x010f, TEXT], // Make
  [0x0110, TEXT], // Model
  [ORIENTATION, ONE_SHORT],
  [0x011a, ONE_RATIONAL], // XResolution
  [0x011b, ONE_RATIONAL], // YResolution
  [0x0128, ONE_SHORT], // ResolutionUnit
  [0x0131, TEXT], // Software
  [0x0132, rule(ASCII, 1, 32)], // DateTime
  [0x013b, TEXT], // Artist
  [0x013e, rule(RATIONAL, 2)], // WhitePoint
  [0x013f, rule(RATIONAL, 6)], // PrimaryChromaticities
  [0x0211, rule(RATIONAL, 3)], // YCbCrCoefficients
  [0x0213, ONE_SHORT], // YCbCrPositioning
  [0x0214, rule(RATIONAL, 6)], // ReferenceBlackWhite
  [0x8298, TEXT], // Copyright
  [EXIF_IFD, POINTER],
])

/** The Exif directory under 'gps': exposure, lens, dates, colour and dimensions (Exif 2.32's standard tags). */
export const EXIF_TAGS: ReadonlyMap<number, TagRule> = new Map([
  [0x829a, ONE_RATIONAL], // ExposureTime
  [0x829d, ONE_RATIONAL], // FNumber
  [0x8822, ONE_SHORT], // ExposureProgram
  [0x8827, rule(SHORT, 1, 4)], // ISO
  [0x8830, ONE_SHORT], // SensitivityType
  [0x8831, rule(LONG)], // StandardOutputSensitivity
  [0x8832, rule(LONG)], // RecommendedExposureIndex
  [0x8833, rule(LONG)], // ISOSpeed
  [0x9000, VERSION], // ExifVersion
  [0x9003, rule(ASCII, 1, 32)], // DateTimeOriginal
  [0x9004, rule(ASCII, 1, 32)], // DateTimeDigitized (CreateDate)
  [0x9010, SUBSEC], // OffsetTime
  [0x9011, SUBSEC], // OffsetTimeOriginal
  [0x9012, SUBSEC], // OffsetTimeDigitized
  [0x9101, rule(UNDEFINED, 4)], // ComponentsConfiguration
  [0x9102, ONE_RATIONAL], // CompressedBitsPerPixel
  [0x9201, ONE_SRATIONAL], // ShutterSpeedValue
  [0x9202, ONE_RATIONAL], // ApertureValue
  [0x9203, ONE_SRATIONAL], // BrightnessValue
  [0x9204, ONE_SRATIONAL], // ExposureBiasValue
  [0x9205, ONE_RATIONAL], // MaxApertureValue
  [0x9206, ONE_RATIONAL], // SubjectDistance
  [0x9207, ONE_SHORT], // MeteringMode
  [0x9208, ONE_SHORT], // LightSource
  [0x9209, ONE_SHORT], // Flash
  [0x920a, ONE_RATIONAL], // FocalLength
  [0x9290, SUBSEC], // SubSecTime
  [0x9291, SUBSEC], // SubSecTimeOriginal
  [0x9292, SUBSEC], // SubSecTimeDigitized
  [0xa000, VERSION], // FlashpixVersion
  [0xa001, ONE_SHORT], // ColorSpace
  [0xa002, SHORT_OR_LONG], // PixelXDimension
  [0xa003, SHORT_OR_LONG], // PixelYDimension
  [INTEROP_IFD, POINTER],
  [0xa20b, ONE_RATIONAL], // FlashEnergy
  [0xa20e, ONE_RATIONAL], // FocalPlaneXResolution
  [0xa20f, ONE_RATIONAL], // FocalPlaneYResolution
  [0xa210, ONE_SHORT], // FocalPlaneResolutionUnit
  [0xa215, ONE_RATIONAL], // ExposureIndex
  [0xa217, ONE_SHORT], // SensingMethod
  [0xa300, rule(UNDEFINED)], // FileSource
  [0xa301, rule(UNDEFINED)], // SceneType
  [0xa401, ONE_SHORT], // CustomRendered
  [0xa402, ONE_SHORT], // ExposureMode
  [0xa403, ONE_SHORT], // WhiteBalance
  [0xa404, ONE_RATIONAL], // DigitalZoomRatio
  [0xa405, ONE_SHORT], // FocalLengthIn35mmFormat
  [0xa406, ONE_SHORT], // SceneCaptureType
  [0xa407, ONE_SHORT], // GainControl
  [0xa408, ONE_SHORT], // Contrast
  [0xa409, ONE_SHORT], // Saturation
  [0xa40a, ONE_SHORT], // Sharpness
  [0xa40c, ONE_SHORT], // SubjectDistanceRange
  [0xa430, TEXT], // CameraOwnerName
  [0xa431, TEXT], // BodySerialNumber
  [0xa432, rule(RATIONAL, 4)], // LensSpecification
  [0xa433, TEXT], // LensMake
  [0xa434, TEXT], // LensModel
  [0xa435, TEXT], // LensSerialNumber
  [0xa500, ONE_RATIONAL], // Gamma
])

/** The Interoperability directory: which rules the file follows (R98, R03) and their version. */
export const INTEROP_TAGS: ReadonlyMap<number, TagRule> = new Map([
  [0x0001, rule(ASCII, 4)], // InteroperabilityIndex
  [0x0002, VERSION], // InteroperabilityVersion
])

/**
 * What a TIFF file's first directory needs to describe its pixels, kept in both modes: dimensions, sample layout,
 * compression, strips or tiles (their data is copied and the offsets rewritten), resolution, colour.
 */
export const TIFF_IMAGE_TAGS: ReadonlyMap<number, TagRule> = new Map([
  [0x00fe, rule(LONG)], // NewSubfileType
  [0x00ff, ONE_SHORT], // SubfileType
  [0x0100, SHORT_OR_LONG], // ImageWidth
  [0x0101, SHORT_OR_LONG], // ImageLength
  [0x0102, rule(SHORT, 1, 16)], // BitsPerSample
  [0x0103, ONE_SHORT], // Compression
  [0x0106, ONE_SHORT], // PhotometricInterpretation
  [0x0107, ONE_SHORT], // Threshholding
  [0x010a, ONE_SHORT], // FillOrder
  [STRIP_OFFSETS, DATA],
  [ORIENTATION, ONE_SHORT],
  [0x0115, ONE_SHORT], // SamplesPerPixel
  [0x0116, SHORT_OR_LONG], // RowsPerStrip
  [STRIP_BYTE_COUNTS, DATA],
  [0x011a, ONE_RATIONAL], // XResolution
  [0x011b, ONE_RATIONAL], // YResolution
  [0x011c, ONE_SHORT], // PlanarConfiguration
  [0x0124, rule(LONG)], // T4Options
  [0x0125, rule(LONG)], // T6Options
  [0x0128, ONE_SHORT], // ResolutionUnit
  [0x012d, rule(SHORT, 1, 3 << 16)], // TransferFunction
  [0x013d, ONE_SHORT], // Predictor
  [0x013e, rule(RATIONAL, 2)], // WhitePoint
  [0x013f, rule(RATIONAL, 6)], // PrimaryChromaticities
  [0x0140, rule(SHORT, 3, 3 << 16)], // ColorMap
  [0x0142, SHORT_OR_LONG], // TileWidth
  [0x0143, SHORT_OR_LONG], // TileLength
  [TILE_OFFSETS, DATA],
  [TILE_BYTE_COUNTS, DATA],
  [0x0152, rule(SHORT, 1, 16)], // ExtraSamples
  [0x0153, rule(SHORT, 1, 16)], // SampleFormat
  [0x015b, rule(UNDEFINED, 1, 1 << 20)], // JPEGTables
  [0x0211, rule(RATIONAL, 3)], // YCbCrCoefficients
  [0x0212, rule(SHORT, 2)], // YCbCrSubSampling
  [0x0213, ONE_SHORT], // YCbCrPositioning
  [0x0214, rule(RATIONAL, 6)], // ReferenceBlackWhite
  [0x8773, rule([UNDEFINED, BYTE], 1, 1 << 24)], // InterColorProfile (ICC)
])

/** The pairs locating a TIFF file's image data: offsets and byte counts, one per strip or tile. */
export const DATA_TAGS: readonly (readonly [number, number])[] = [
  [STRIP_OFFSETS, STRIP_BYTE_COUNTS],
  [TILE_OFFSETS, TILE_BYTE_COUNTS],
]
