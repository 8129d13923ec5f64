import { escapeHtml } from '../../web/html'
import { browserPictureRule } from '../images/links'

/**
 * The share codes of an image, defined once: the viewer page fills them here, the upload page and the dashboard hand
 * them to their scripts in a data attribute. A template names the image's links (`{url}` the original, `{viewer}`),
 * the picture the embedding codes show (`{img}`: the original where every browser shows it, else its JPEG preset, so
 * a HEIC or TIFF embedded in a forum post still shows) and its name (`{alt}`); `:markdown` or `:html` after a name
 * says how that value is escaped.
 */
export const SHARE_CODES = [
  { key: 'viewer', label: 'Viewer link', template: '{viewer}' },
  { key: 'direct', label: 'Direct link', template: '{url}' },
  { key: 'markdown', label: 'Markdown', template: '[![{alt:markdown}]({img})]({viewer})' },
  { key: 'bbcode', label: 'BBCode', template: '[url={viewer}][img]{img}[/img][/url]' },
  { key: 'html', label: 'HTML', template: '<a href="{viewer:html}"><img src="{img:html}" alt="{alt:html}"></a>' },
] as const

export type ShareCode = (typeof SHARE_CODES)[number]

/**
 * The codes as the page scripts list them (site.js `shareFields`: upload results, dashboard), the direct link first
 * (what an upload is most often for), with the rule for `{img}`, as JSON for a data attribute.
 */
const LISTED: ShareCode['key'][] = ['direct', 'viewer', 'markdown', 'bbcode', 'html']
export const listedShareCodes = (cdnBase: string) =>
  JSON.stringify({
    codes: LISTED.map((key) => SHARE_CODES.find((code) => code.key === key)),
    picture: browserPictureRule(cdnBase),
  })

const SLOT = /\{(url|img|viewer|alt)(?::(markdown|html))?\}/g
const ESCAPES = { markdown: (v: string) => v.replace(/[\\[\]]/g, (c) => `\\${c}`), html: escapeHtml }

/** Fills a template in one pass, so a name that looks like a slot (a file "{url}.png") is never expanded again. */
export function fillShareCode(
  template: string,
  values: { url: string; img: string; viewer: string; alt: string },
): string {
  return template.replace(SLOT, (_, slot: keyof typeof values, how?: keyof typeof ESCAPES) =>
    how ? ESCAPES[how](values[slot]) : values[slot],
  )
}
