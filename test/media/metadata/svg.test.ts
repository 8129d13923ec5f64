import { describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { detectFormat } from '../../../src/media/detect'
import { locationTags, readTagsOf } from '../exiftool'
import { bytes, GPS, hasLatitudeBytes, photo } from '../hostile-files'
import { refusal, strip, stripAndJudge } from './containers'

// SVG written again from the elements and attributes that draw: judged by exiftool, the rendering by librsvg.

sharp.cache(false)

const render = (svg: Uint8Array) => sharp(svg).raw().toBuffer()
const text = (b: Uint8Array) => new TextDecoder().decode(b)

const RDF_WITH_GPS =
  '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:cc="http://creativecommons.org/ns#" ' +
  'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:exif="http://ns.adobe.com/exif/1.0/" ' +
  'xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"><cc:Work rdf:about=""><dc:title>Trip</dc:title>' +
  '<dc:coverage>London</dc:coverage></cc:Work><rdf:Description rdf:about="" exif:GPSLatitude="51,30.0N" ' +
  'photoshop:City="London"><exif:GPSLongitude>0,7.2W</exif:GPSLongitude></rdf:Description></rdf:RDF>'

const DRAWING =
  '<g id="layer1"><rect width="40" height="30" fill="#c33"/><circle cx="20" cy="15" r="8" style="fill:#3c3"/>' +
  '<text x="2" y="28" font-size="6">hi</text></g>'

/** As Inkscape saves a drawing: its namespaces, named view, layer labels, document name, RDF metadata. */
const inkscape = `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!-- Created with Inkscape (http://www.inkscape.org/) at 51.5N 0.12W -->
<svg width="40" height="30" viewBox="0 0 40 30" version="1.1" id="svg5"
   inkscape:version="1.2.2" sodipodi:docname="/home/ann/trips/london-51.5N.svg"
   xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape"
   xmlns:sodipodi="http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd"
   xmlns="http://www.w3.org/2000/svg" xmlns:svg="http://www.w3.org/2000/svg">
  <title id="title1">Our house</title>
  <desc>Drawn at home</desc>
  <sodipodi:namedview id="namedview7" pagecolor="#ffffff" inkscape:location="51.5,-0.12"/>
  <defs id="defs2"/>
  <metadata id="metadata1">${RDF_WITH_GPS}</metadata>
  <g inkscape:label="Layer GPS" inkscape:groupmode="layer">${DRAWING}</g>
</svg>
`

/** As Illustrator saves one: a DOCTYPE declaring the namespaces as entities (SVG's too), its private data, XMP. */
const illustrator = `<?xml version="1.0" encoding="utf-8"?>
<!-- Generator: Adobe Illustrator 27.0.0, SVG Export Plug-In . SVG Version: 6.00 Build 0)  -->
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd" [
	<!ENTITY ns_extend "http://ns.adobe.com/Extensibility/1.0/">
	<!ENTITY ns_ai "http://ns.adobe.com/AdobeIllustrator/10.0/">
	<!ENTITY ns_svg "http://www.w3.org/2000/svg">
	<!ENTITY ns_xlink "http://www.w3.org/1999/xlink">
]>
<svg version="1.1" id="Layer_1" xmlns:x="&ns_extend;" xmlns:i="&ns_ai;" xmlns="&ns_svg;"
	 xmlns:xlink="&ns_xlink;" x="0px" y="0px" width="40px" height="30px" viewBox="0 0 40 30"
	 xml:space="preserve">
<metadata><x:xmpmeta xmlns:x="adobe:ns:meta/">${RDF_WITH_GPS}</x:xmpmeta></metadata>
<switch><foreignObject requiredExtensions="&ns_ai;" x="0" y="0" width="1" height="1"><i:pgf id="adobe_illustrator_pgf">GPS 51.5N base64 private data</i:pgf></foreignObject>
<g i:extraneous="self">${DRAWING}</g></switch>
</svg>
`

/** A hand-made one: location in attributes exiftool reads off the root, a processing instruction, RDF outside metadata. */
const handmade = `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="30" gpslatitude="51.5" data-city="London"
  onload="alert(1)">
<?gps 51.5N?>
${RDF_WITH_GPS}
${DRAWING}
<foo:location xmlns:foo="urn:x" foo:GPSLatitude="51.5">London</foo:location>
</svg>`

describe('SVG metadata', () => {
  test("Inkscape's, Illustrator's and hand-made location goes in both modes; the drawing stays as it renders", async () => {
    const files = [
      { name: 'inkscape', file: bytes(inkscape) },
      { name: 'illustrator', file: bytes(illustrator) },
      { name: 'handmade', file: bytes(handmade) },
    ]
    const judged = await stripAndJudge(files, 'svg')
    for (const j of judged) {
      const original = files.find((f) => f.name === j.name)!.file
      expect([j.name, j.changed]).toEqual([j.name, true])
      const out = text(j.stored)
      for (const gone of ['51.5', 'London', 'rdf:', 'sodipodi', 'inkscape:', '<!--', '<?gps', 'onload', 'pgf'])
        expect([j.name, j.mode, gone, out.includes(gone)]).toEqual([j.name, j.mode, gone, false])
      expect(detectFormat(j.stored)).toBe('svg')
      expect((await render(j.stored)).equals(await render(original))).toBe(true)
      // 'gps' keeps the title and description (what the author wrote for readers); 'all' drops them.
      expect([j.name, j.mode, j.after['SVG:Title']]).toEqual([
        j.name,
        j.mode,
        j.mode === 'gps' && j.name === 'inkscape' ? 'Our house' : undefined,
      ])
    }
  })

  test('an image embedded as a data: URL is cleaned as an upload of its own; other data: URLs go', async () => {
    const jpeg = await photo(16, 12)
      .jpeg()
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
      .toBuffer()
    const inner = `<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><metadata>${RDF_WITH_GPS}</metadata><rect width="4" height="4"/></svg>`
    const file =
      bytes(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="40" height="30">
<image width="16" height="12" xlink:href="data:image/jpeg;base64,${jpeg.toString('base64')}"/>
<image x="20" width="4" height="4" href="data:image/svg+xml,${encodeURIComponent(inner)}"/>
<a href="data:text/html,GPS%2051.5N"><rect x="30" width="4" height="4"/></a>
</svg>`)
    expect(hasLatitudeBytes(Buffer.from(text(file).match(/base64,([^"]+)/)![1]!, 'base64'))).toBe(true)
    for (const mode of ['gps', 'all'] as const) {
      const out = text(strip(file, 'svg', mode).stored)
      const urls = [...out.matchAll(/href="data:([^;]+);base64,([^"]+)"/g)].map((m) => ({
        type: m[1],
        data: new Uint8Array(Buffer.from(m[2]!, 'base64')),
      }))
      expect(urls.map((u) => u.type)).toEqual(['image/jpeg', 'image/svg+xml'])
      expect(out).not.toContain('text/html')
      const tags = await readTagsOf(urls.map((u) => u.data))
      for (const t of tags) expect(locationTags(t)).toEqual([])
      expect(tags[0]!['IFD0:Make']).toBe(mode === 'gps' ? 'Acme' : undefined)
      expect(text(urls[1]!.data)).not.toContain('rdf:')
      // The embedded JPEG is not re-encoded.
      expect((await sharp(urls[0]!.data).raw().toBuffer()).equals(await sharp(jpeg).raw().toBuffer())).toBe(true)
    }
  })

  test('an SVG with nothing to drop is stored byte for byte', () => {
    const clean = bytes(`<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="40" height="30" viewBox="0 0 40 30">
  <defs><linearGradient id="g"><stop offset="0" stop-color="#fff"/></linearGradient></defs>
  <style><![CDATA[ rect { fill: url(#g) } ]]></style>
  ${DRAWING}
</svg>
`)
    for (const mode of ['gps', 'all'] as const) expect(strip(clean, 'svg', mode).out).toBeNull()
    const standalone = bytes(
      `<?xml version='1.1' encoding='utf-8' standalone='no' ?>\n<svg xmlns="http://www.w3.org/2000/svg"/>`,
    )
    expect(strip(standalone, 'svg', 'all').out).toBeNull()
  })

  test('what cannot be vouched for is refused: a DOCTYPE declaring more than entities, CSS with an image, broken XML', () => {
    const cases = [
      `<!DOCTYPE svg [<!ATTLIST svg gpslatitude CDATA "51.5">]><svg xmlns="http://www.w3.org/2000/svg"/>`,
      `<!DOCTYPE svg [<!ENTITY m "<metadata>51.5</metadata>">]><svg xmlns="http://www.w3.org/2000/svg">&m;</svg>`,
      `<svg xmlns="http://www.w3.org/2000/svg"><style>rect{fill:url(data:image/png;base64,AAAA)}</style></svg>`,
      `<svg xmlns="http://www.w3.org/2000/svg"><rect style="background:url('DATA:image/jpeg;base64,AA')"/></svg>`,
      `<svg xmlns="http://www.w3.org/2000/svg"><g><rect/></svg>`,
      `<svg xmlns="http://www.w3.org/2000/svg"><rect width=4/></svg>`,
      `<svg xmlns="http://example.com/not-svg"><rect/></svg>`,
      // An XML declaration must be one: a version, then only encoding and standalone.
      `<?xml version="1\x81\x81.0"?><svg xmlns="http://www.w3.org/2000/svg"/>`,
      `<?xml version="1.0" gps="51.5"?><svg xmlns="http://www.w3.org/2000/svg"/>`,
      `<?xml encoding="UTF-8"?><svg xmlns="http://www.w3.org/2000/svg"/>`,
    ]
    for (const svg of cases) expect([svg, refusal(bytes(svg), 'svg')]).toEqual([svg, expect.any(String)])
    // A font in CSS is not an image: kept.
    const font = bytes(
      `<svg xmlns="http://www.w3.org/2000/svg"><style>@font-face{src:url(data:font/woff2;base64,AAAA)}</style></svg>`,
    )
    expect(strip(font, 'svg', 'all').out).toBeNull()
  })
})

describe('SVG costs', () => {
  test('grow linearly with the document: deep nesting, namespace declarations, attribute runs', () => {
    const svg = (n: number) =>
      bytes(
        `<svg xmlns="http://www.w3.org/2000/svg">${'<g xmlns:a="urn:a" a:x="1" fill="red">'.repeat(n)}${'</g>'.repeat(n)}</svg>`,
      )
    const perByte = [5_000, 40_000].map((n) => {
      const file = svg(n)
      return strip(file, 'svg', 'all').cost / file.length
    })
    expect(perByte[1]!).toBeLessThan(perByte[0]! * 1.1)
    expect(perByte[1]!).toBeLessThan(8)
  })
})
