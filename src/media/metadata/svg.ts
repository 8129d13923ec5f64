import { detectFormat } from '../detect'
import { FORMATS, type ImageFormat } from '../formats'
import { type Cost, find, findSeq, unsafe } from './cost'
import { Splice } from './splice'

/**
 * SVG: the document is read whole as XML (one pass, an explicit stack) and written again with only what draws:
 * elements of the SVG namespace that SVG defines (an XHTML subtree inside `foreignObject`), the attributes SVG
 * defines, `xlink:href`, `xml:space`/`xml:lang`, and their text. Dropped: `metadata` (RDF/XMP), comments,
 * processing instructions, elements and attributes of every other namespace (Inkscape's, Sodipodi's, Illustrator's,
 * RDF, Dublin Core, editors' document names and paths), unknown elements and attributes (exiftool reads any attribute
 * of the root as a tag), anything after the root; under 'all' also `title` and `desc`. An image embedded as a data:
 * URL is cleaned like an upload of its own format (a data: URL that is not an image is dropped). Refused: a document
 * that is not well-formed, a DOCTYPE declaring anything but plain entities, and CSS holding a data: URL other than a
 * font (an image there could not be cleaned).
 */

export type InnerStrip = (b: Uint8Array, format: ImageFormat, mode: 'gps' | 'all', cost: Cost) => Uint8Array | null

const NS = {
  svg: 'http://www.w3.org/2000/svg',
  xlink: 'http://www.w3.org/1999/xlink',
  xhtml: 'http://www.w3.org/1999/xhtml',
  xml: 'http://www.w3.org/XML/1998/namespace',
} as const
const KNOWN_NS = new Set<string>([NS.svg, NS.xlink, NS.xhtml])

const words = (s: string) => new Set(s.split(/\s+/).filter(Boolean))

/** SVG 1.1 and 2 elements; `metadata` is not among them. */
const SVG_ELEMENTS = words(`
  a animate animateColor animateMotion animateTransform circle clipPath color-profile cursor defs desc discard ellipse
  feBlend feColorMatrix feComponentTransfer feComposite feConvolveMatrix feDiffuseLighting feDisplacementMap
  feDistantLight feDropShadow feFlood feFuncA feFuncB feFuncG feFuncR feGaussianBlur feImage feMerge feMergeNode
  feMorphology feOffset fePointLight feSpecularLighting feSpotLight feTile feTurbulence filter font font-face
  font-face-format font-face-name font-face-src font-face-uri foreignObject g glyph glyphRef hatch hatchpath hkern
  image line linearGradient marker mask mesh meshgradient meshpatch meshrow missing-glyph mpath path pattern polygon
  polyline radialGradient rect script set solidcolor stop style svg switch symbol text textPath title tref tspan use
  view vkern`)

/** Elements that describe rather than draw: dropped under 'all'. */
const DESCRIPTIVE = new Set(['title', 'desc'])

/** SVG attributes (geometry, presentation, text, gradients, filters, animation, fonts, links). */
const SVG_ATTRIBUTES = words(`
  id class style lang tabindex requiredExtensions requiredFeatures systemLanguage externalResourcesRequired transform
  viewBox preserveAspectRatio x y x1 y1 x2 y2 cx cy r rx ry fx fy fr width height d points pathLength href version
  baseProfile zoomAndPan contentScriptType contentStyleType type media dx dy rotate textLength lengthAdjust
  startOffset method spacing side gradientUnits gradientTransform spreadMethod offset patternUnits
  patternContentUnits patternTransform clipPathUnits maskUnits maskContentUnits markerUnits markerWidth markerHeight
  refX refY orient filterUnits primitiveUnits filterRes result in in2 mode values operator k1 k2 k3 k4 order
  kernelMatrix divisor bias targetX targetY edgeMode kernelUnitLength preserveAlpha surfaceScale diffuseConstant
  specularConstant specularExponent scale xChannelSelector yChannelSelector stdDeviation radius baseFrequency
  numOctaves seed stitchTiles azimuth elevation pointsAtX pointsAtY pointsAtZ limitingConeAngle tableValues slope
  intercept amplitude exponent attributeName attributeType begin dur end min max restart repeatCount repeatDur
  calcMode keyTimes keySplines from to by additive accumulate keyPoints path target rel hreflang referrerpolicy
  crossorigin decoding viewTarget horiz-adv-x horiz-origin-x horiz-origin-y vert-adv-y vert-origin-x vert-origin-y
  units-per-em ascent descent unicode glyph-name arabic-form g1 g2 u1 u2 k unicode-range panose-1 stemv stemh
  cap-height x-height accent-height alphabetic mathematical ideographic hanging underline-position
  underline-thickness strikethrough-position strikethrough-thickness overline-position overline-thickness bbox
  widths local name rendering-intent format glyphRef orientation
  alignment-baseline baseline-shift clip clip-path clip-rule color color-interpolation color-interpolation-filters
  color-profile color-rendering cursor direction display dominant-baseline enable-background fill fill-opacity
  fill-rule filter flood-color flood-opacity font font-family font-size font-size-adjust font-stretch font-style
  font-variant font-weight glyph-orientation-horizontal glyph-orientation-vertical image-rendering kerning
  letter-spacing lighting-color marker marker-end marker-mid marker-start mask mask-type opacity overflow
  paint-order pointer-events shape-rendering stop-color stop-opacity stroke stroke-dasharray stroke-dashoffset
  stroke-linecap stroke-linejoin stroke-miterlimit stroke-opacity stroke-width text-anchor text-decoration
  text-rendering transform-origin unicode-bidi vector-effect visibility word-spacing writing-mode mix-blend-mode
  isolation`)

/** XHTML inside `foreignObject` (diagram labels): its layout elements and attributes. */
const XHTML_ELEMENTS = words(`
  div span p br b i u s em strong small sub sup font a ul ol li table thead tbody tr td th pre code hr h1 h2 h3 h4 h5
  h6 blockquote center`)
const XHTML_ATTRIBUTES = words('style class id dir lang width height align colspan rowspan color face size')

/** Attributes whose value may be an image to clean (a data: URL). */
const HREF = new Set(['href'])

const LT = 0x3c
const GT = 0x3e
const SLASH = 0x2f
const QMARK = 0x3f
const BANG = 0x21
const EQ = 0x3d
const QUOTE = 0x22
const APOS = 0x27
const LBRACKET = 0x5b
const RBRACKET = 0x5d

const PI_END = [0x3f, 0x3e] // ?>
const COMMENT = [0x21, 0x2d, 0x2d] // !--
const COMMENT_END = [0x2d, 0x2d, 0x3e] // -->
const CDATA = [0x21, 0x5b, 0x43, 0x44, 0x41, 0x54, 0x41, 0x5b] // ![CDATA[
const CDATA_END = [0x5d, 0x5d, 0x3e] // ]]>
const DOCTYPE = [0x21, 0x44, 0x4f, 0x43, 0x54, 0x59, 0x50, 0x45] // !DOCTYPE
const XML_DECL = [0x3c, 0x3f, 0x78, 0x6d, 0x6c] // <?xml
const BOM = [0xef, 0xbb, 0xbf]
/** The XML declaration as XML 1.x writes it: version, then optionally encoding and standalone; nothing else kept. */
const XML_DECL_FORM =
  /^<\?xml[ \t\r\n]+version[ \t\r\n]*=[ \t\r\n]*("1\.[0-9]+"|'1\.[0-9]+')([ \t\r\n]+encoding[ \t\r\n]*=[ \t\r\n]*("[A-Za-z][\w.-]*"|'[A-Za-z][\w.-]*'))?([ \t\r\n]+standalone[ \t\r\n]*=[ \t\r\n]*("(yes|no)"|'(yes|no)'))?[ \t\r\n]*\?>$/

const malformed = () => unsafe('an SVG that is not well-formed XML')

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d
const isNameEnd = (c: number | undefined) => c === undefined || isSpace(c) || c === GT || c === SLASH || c === EQ

function startsAt(b: Uint8Array, at: number, seq: readonly number[]): boolean {
  for (let k = 0; k < seq.length; k++) if (b[at + k] !== seq[k]) return false
  return true
}

const decoder = new TextDecoder('latin1')
/** Bytes as a string of their char codes; names are short, and a view per name costs more than the loop. */
function text(b: Uint8Array, start: number, end: number): string {
  if (end - start > 32) return decoder.decode(b.subarray(start, end))
  let s = ''
  for (let i = start; i < end; i++) s += String.fromCharCode(b[i]!)
  return s
}

interface Attribute {
  /** The whole `name="value"`, the name and the value (without quotes). */
  start: number
  end: number
  name: string
  valueStart: number
  valueEnd: number
}

/** An open element: its name's bytes (for the end tag), whether it is written, the prefixes it declared. */
interface Open {
  nameStart: number
  nameEnd: number
  kept: boolean
  /** 'xhtml' inside foreignObject, 'svg' elsewhere. */
  content: 'svg' | 'xhtml'
  declared: string[]
  /** The text of a kept `style` element, checked for data: URLs when it ends. */
  css: string[] | null
}

/** Prefix -> namespace, as a stack per prefix: a declaration is pushed when its element opens, popped when it ends. */
class Scope {
  private bound = new Map<string, string[]>()
  declare(prefix: string, uri: string) {
    const stack = this.bound.get(prefix) ?? []
    stack.push(uri)
    this.bound.set(prefix, stack)
  }
  release(prefixes: string[]) {
    for (const p of prefixes) this.bound.get(p)!.pop()
  }
  lookup(prefix: string): string | undefined {
    if (prefix === 'xml') return NS.xml
    const stack = this.bound.get(prefix)
    return stack?.[stack.length - 1]
  }
}

const splitName = (qname: string): [string, string] => {
  const colon = qname.indexOf(':')
  return colon < 0 ? ['', qname] : [qname.slice(0, colon), qname.slice(colon + 1)]
}

/**
 * CSS (a `style` attribute or element) may load images only from data: URLs, which could carry metadata that cannot
 * be cleaned there; fonts are allowed. Case-insensitive, linear.
 */
function checkCss(css: string): void {
  for (const m of css.matchAll(/data:([^,;)'"\s]*)/gi)) {
    const type = m[1]!.toLowerCase()
    if (!type.startsWith('font/') && !/^application\/(x-)?font/.test(type))
      throw unsafe('an SVG whose CSS embeds data that is not a font')
  }
}

/**
 * A DOCTYPE is kept when its internal subset holds only entity declarations with plain values (Illustrator declares
 * its namespaces so); markup, parameter entities or attribute defaults there are refused, since a reader would add
 * them to the document. Returns where the DOCTYPE ends; the entities go into `entities`.
 */
function doctypeEnd(b: Uint8Array, at: number, entities: Map<string, string>, cost: Cost): number {
  let i = at + 9
  for (;;) {
    const c = b[i]
    cost.add(1)
    if (c === undefined) throw malformed()
    if (c === GT) return i + 1
    if (c === QUOTE || c === APOS) {
      const close = find(b, c, i + 1, cost)
      if (close < 0) throw malformed()
      i = close + 1
    } else if (c === LBRACKET) {
      i = subsetEnd(b, i + 1, entities, cost)
    } else i++
  }
}

const ENTITY = /^<!ENTITY\s+([A-Za-z_][\w.-]*)\s+(?:"([^"<%&]*)"|'([^'<%&]*)')\s*>$/

function subsetEnd(b: Uint8Array, from: number, entities: Map<string, string>, cost: Cost): number {
  let i = from
  for (;;) {
    while (isSpace(b[i])) i++
    cost.add(i - from + 1)
    if (b[i] === RBRACKET) return i + 1
    if (b[i] !== LT) throw unsafe('an SVG DOCTYPE declaring more than plain entities')
    // An entity value cannot hold '>' here (no markup at all), so the declaration ends at the next '>'.
    const end = find(b, GT, i, cost)
    const entity = end < 0 ? null : ENTITY.exec(text(b, i, end + 1))
    if (!entity) throw unsafe('an SVG DOCTYPE declaring more than plain entities')
    entities.set(entity[1]!, entity[2] ?? entity[3]!)
    i = end + 1
    from = i
  }
}

/** The attributes of a start tag from `at` (after its name) to its '>' or '/>'. */
function readAttributes(b: Uint8Array, at: number, cost: Cost): { attrs: Attribute[]; end: number; empty: boolean } {
  const attrs: Attribute[] = []
  let i = at
  for (;;) {
    const from = i
    while (isSpace(b[i])) i++
    cost.add(i - from + 1)
    if (b[i] === GT) return { attrs, end: i + 1, empty: false }
    if (b[i] === SLASH && b[i + 1] === GT) return { attrs, end: i + 2, empty: true }
    if (i === from || b[i] === undefined) throw malformed() // attributes are separated by white space
    const start = i
    while (!isNameEnd(b[i])) i++
    const nameEnd = i
    while (isSpace(b[i])) i++
    if (nameEnd === start || b[i] !== EQ) throw malformed()
    i++
    while (isSpace(b[i])) i++
    const quote = b[i]
    if (quote !== QUOTE && quote !== APOS) throw malformed()
    const close = find(b, quote, i + 1, cost)
    if (close < 0) throw malformed()
    cost.add(close - start)
    attrs.push({ start, end: close + 1, name: text(b, start, nameEnd), valueStart: i + 1, valueEnd: close })
    i = close + 1
  }
}

/** The bytes a data: URL holds, or null when the value is not a data: URL. */
function dataUrl(value: string): Uint8Array | null {
  const m = /^\s*data:([^,]*),/i.exec(value)
  if (!m) return null
  const payload = value.slice(m[0].length)
  if (/;base64\s*$/i.test(m[1]!)) return Uint8Array.from(Buffer.from(payload.replace(/\s+/g, ''), 'base64'))
  try {
    return new TextEncoder().encode(decodeURIComponent(payload))
  } catch {
    return new Uint8Array()
  }
}

/**
 * The attribute as it is written again: unchanged, cleaned (an embedded image), or null when dropped.
 */
type AttributeRule = (a: Attribute) => Uint8Array | null | 'same'

/** The rebuilt SVG, or null when it has nothing to drop. */
export function stripSvg(b: Uint8Array, mode: 'gps' | 'all', cost: Cost, inner: InnerStrip): Uint8Array | null {
  const out = new Splice(b)
  const keep = (start: number, end: number) => out.copy(start, end)
  let pos = startsAt(b, 0, BOM) ? 3 : 0
  keep(0, pos)
  if (startsAt(b, pos, XML_DECL) && isSpace(b[pos + 5])) {
    const end = findSeq(b, PI_END, pos + 5, cost)
    if (end < 0 || end - pos > 200 || !XML_DECL_FORM.test(text(b, pos, end + 2))) throw malformed()
    keep(pos, end + 2)
    pos = end + 2
  }
  const scope = new Scope()
  const entities = new Map<string, string>()
  /** A namespace name as readers take it: an entity of the DOCTYPE (Illustrator's `&ns_svg;`) stands for its value. */
  const namespaceOf = (a: Attribute) => {
    const value = text(b, a.valueStart, a.valueEnd)
    const ref = /^&([A-Za-z_][\w.-]*);$/.exec(value)
    return (ref && entities.get(ref[1]!)) ?? value
  }
  const stack: Open[] = []
  let rootSeen = false

  /** An embedded image cleaned as an upload of its format; a data: URL that is no image is dropped. */
  const embedded = (a: Attribute): Uint8Array | null | 'same' => {
    const data = dataUrl(text(b, a.valueStart, a.valueEnd))
    if (!data) return 'same'
    cost.add(data.length)
    const format = detectFormat(data.subarray(0, 64 * 1024))
    if (!format) return null
    const cleaned = inner(data, format, mode, cost)
    if (!cleaned) return 'same'
    const encoded = Buffer.from(cleaned).toString('base64')
    cost.add(encoded.length)
    return new TextEncoder().encode(`${a.name}="data:${FORMATS[format].mime};base64,${encoded}"`)
  }

  const attributeRule =
    (content: 'svg' | 'xhtml'): AttributeRule =>
    (a) => {
      if (a.name === 'xmlns' || a.name.startsWith('xmlns:')) return KNOWN_NS.has(namespaceOf(a)) ? 'same' : null
      const [prefix, local] = splitName(a.name)
      const ns = prefix === '' ? '' : scope.lookup(prefix)
      if (ns === NS.xml) return local === 'space' || local === 'lang' ? 'same' : null
      if (ns === NS.xlink) return local === 'href' ? embedded(a) : null
      if (ns !== '') return null
      if (!(content === 'svg' ? SVG_ATTRIBUTES : XHTML_ATTRIBUTES).has(local)) return null
      if (local === 'style') checkCss(text(b, a.valueStart, a.valueEnd))
      return HREF.has(local) ? embedded(a) : 'same'
    }

  for (;;) {
    const lt = find(b, LT, pos, cost)
    const top = stack[stack.length - 1]
    const textEnd = lt < 0 ? b.length : lt
    if (textEnd > pos) {
      if (top?.kept) {
        top.css?.push(text(b, pos, textEnd))
        keep(pos, textEnd)
      } else if (!top) {
        // Outside the root only white space may stand; it stays, so a file with nothing to drop keeps its bytes.
        for (let i = pos; i < textEnd; i++) if (!isSpace(b[i])) throw malformed()
        cost.add(textEnd - pos)
        keep(pos, textEnd)
      }
    }
    if (lt < 0) break
    pos = lt + 1
    const c = b[pos]
    if (c === QMARK) {
      const end = findSeq(b, PI_END, pos, cost)
      if (end < 0) throw malformed()
      pos = end + 2
    } else if (startsAt(b, pos, COMMENT)) {
      const end = findSeq(b, COMMENT_END, pos + 3, cost)
      if (end < 0) throw malformed()
      pos = end + 3
    } else if (startsAt(b, pos, CDATA)) {
      const end = findSeq(b, CDATA_END, pos + 8, cost)
      if (end < 0 || !top) throw malformed()
      if (top.kept) {
        top.css?.push(text(b, pos + 8, end))
        keep(lt, end + 3)
      }
      pos = end + 3
    } else if (startsAt(b, pos, DOCTYPE)) {
      if (rootSeen) throw malformed()
      const end = doctypeEnd(b, lt, entities, cost)
      keep(lt, end)
      pos = end
    } else if (c === BANG) {
      throw malformed()
    } else if (c === SLASH) {
      pos = closeElement(b, lt, stack, scope, out, cost)
    } else {
      if (rootSeen && stack.length === 0) throw malformed() // a second root
      rootSeen = true
      const nameStart = pos
      while (!isNameEnd(b[pos])) pos++
      cost.add(pos - nameStart)
      if (pos === nameStart) throw malformed()
      const { attrs, end, empty } = readAttributes(b, pos, cost)
      const declared: string[] = []
      for (const a of attrs) {
        if (a.name !== 'xmlns' && !a.name.startsWith('xmlns:')) continue
        const prefix = a.name === 'xmlns' ? '' : a.name.slice(6)
        scope.declare(prefix, namespaceOf(a))
        declared.push(prefix)
      }
      const [prefix, local] = splitName(text(b, nameStart, pos))
      // An unprefixed name outside any default namespace is read as SVG (librsvg draws such files).
      const ns = scope.lookup(prefix) ?? (prefix === '' ? NS.svg : undefined)
      const parentContent = top?.content ?? 'svg'
      const content = ns === NS.xhtml && parentContent === 'xhtml' ? 'xhtml' : 'svg'
      const known =
        ns === NS.svg
          ? parentContent === 'svg' && SVG_ELEMENTS.has(local) && !(mode === 'all' && DESCRIPTIVE.has(local))
          : ns === NS.xhtml && parentContent === 'xhtml' && XHTML_ELEMENTS.has(local)
      const kept = (top ? top.kept : true) && known
      if (!top && !kept) throw unsafe('an SVG whose root is not an SVG element')
      if (kept) writeStartTag(lt, pos, end, empty, attrs, attributeRule(content), out)
      const open: Open = {
        nameStart,
        nameEnd: pos,
        kept,
        content: ns === NS.svg && local === 'foreignObject' ? 'xhtml' : content,
        declared,
        css: kept && ns === NS.svg && local === 'style' ? [] : null,
      }
      pos = end
      if (empty) scope.release(declared)
      else stack.push(open)
    }
  }
  if (stack.length > 0 || !rootSeen) throw malformed()

  return out.result(cost)
}

/** An end tag at `lt`: it must close the open element; written when that one is. Returns where it ends. */
function closeElement(b: Uint8Array, lt: number, stack: Open[], scope: Scope, out: Splice, cost: Cost): number {
  const open = stack.pop()
  if (!open) throw malformed()
  const nameLength = open.nameEnd - open.nameStart
  const gt = find(b, GT, lt, cost)
  if (gt < 0) throw malformed()
  let i = lt + 2 + nameLength
  while (isSpace(b[i])) i++
  cost.add(nameLength)
  for (let k = 0; k < nameLength; k++) if (b[lt + 2 + k] !== b[open.nameStart + k]) throw malformed()
  if (i !== gt) throw malformed()
  if (open.kept) out.copy(lt, gt + 1)
  if (open.css) checkCss(open.css.join(''))
  scope.release(open.declared)
  return gt + 1
}

/** A kept start tag: copied whole when every attribute stays as it is, else written with the kept ones. */
function writeStartTag(
  lt: number,
  nameEnd: number,
  end: number,
  empty: boolean,
  attrs: Attribute[],
  rule: AttributeRule,
  out: Splice,
): void {
  const kept = attrs.map(rule)
  if (kept.every((k) => k === 'same')) {
    out.copy(lt, end)
    return
  }
  out.copy(lt, nameEnd)
  kept.forEach((k, i) => {
    if (k === null) return
    out.add(SPACE)
    if (k === 'same') out.copy(attrs[i]!.start, attrs[i]!.end)
    else out.add(k)
  })
  out.add(empty ? EMPTY_END : END)
}

const SPACE = new Uint8Array([0x20])
const END = new Uint8Array([GT])
const EMPTY_END = new Uint8Array([SLASH, GT])
