import { escapeHtml } from '../../web/html'

/**
 * The share codes of an image, defined once: the viewer page fills them here, the upload page hands them to its script
 * (upload.js) in a data attribute. A template names the image's links (`{url}`, `{viewer}`) and its name (`{alt}`);
 * `:markdown` or `:html` after a name says how that value is escaped.
 */
export const SHARE_CODES = [
  { key: 'viewer', label: 'Viewer link', template: '{viewer}' },
  { key: 'direct', label: 'Direct link', template: '{url}' },
  { key: 'markdown', label: 'Markdown', template: '[![{alt:markdown}]({url})]({viewer})' },
  { key: 'bbcode', label: 'BBCode', template: '[url={viewer}][img]{url}[/img][/url]' },
  { key: 'html', label: 'HTML', template: '<a href="{viewer:html}"><img src="{url:html}" alt="{alt:html}"></a>' },
] as const

export type ShareCode = (typeof SHARE_CODES)[number]

/**
 * The codes as the page scripts list them (site.js `shareFields`: upload results, dashboard), the direct link first
 * (what an upload is most often for), as JSON for a data attribute.
 */
const LISTED: ShareCode['key'][] = ['direct', 'viewer', 'markdown', 'bbcode', 'html']
export const LISTED_SHARE_CODES = JSON.stringify(LISTED.map((key) => SHARE_CODES.find((code) => code.key === key)))

const SLOT = /\{(url|viewer|alt)(?::(markdown|html))?\}/g
const ESCAPES = { markdown: (v: string) => v.replace(/[\\[\]]/g, (c) => `\\${c}`), html: escapeHtml }

/** Fills a template in one pass, so a name that looks like a slot (a file "{url}.png") is never expanded again. */
export function fillShareCode(template: string, values: { url: string; viewer: string; alt: string }): string {
  return template.replace(SLOT, (_, slot: keyof typeof values, how?: keyof typeof ESCAPES) =>
    how ? ESCAPES[how](values[slot]) : values[slot],
  )
}
