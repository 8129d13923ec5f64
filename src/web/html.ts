/** HTML that is already safe to send: produced only by `html` templates or by `raw` for trusted constants. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString() {
    return this.value
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
}

/** Escapes text for element content and quoted attribute values alike. */
export const escapeHtml = (value: string) => value.replace(/[&<>"'`]/g, (c) => ESCAPES[c])

type Interpolation = SafeHtml | string | number | boolean | null | undefined | Interpolation[]

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return ''
  if (value instanceof SafeHtml) return value.value
  if (Array.isArray(value)) return value.map(render).join('')
  return escapeHtml(String(value))
}

/** Tagged template: every interpolated value is escaped unless it is already SafeHtml. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0]
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]
  return new SafeHtml(out)
}

/** For trusted constants only (never for anything a user sent). */
export const raw = (value: string) => new SafeHtml(value)
