/**
 * How much drawing an SVG asks for, read from its markup without drawing it (src/media/work.ts turns it into pixel
 * work): the elements drawn and the filter primitives run once every reference is followed. A `<use href="#a">`, and
 * every `url(#a)` in an attribute or a style (a filter, a pattern, a mask, a clip path, a marker), draws `#a` with
 * all it holds again, so ten levels of ten `<use>`s of a blurred rectangle are 10^10 blurs in a file of 2 KB.
 * Counts are upper bounds (definitions are counted where they stand, and again where referenced); a `<style>`
 * sheet's references count once. One pass over the text, then one over the elements and references: linear in the
 * file's size.
 */
import { MediaError } from './errors'

export interface SvgWork {
  /** Elements drawn, references followed. */
  elements: number
  /** Filter primitives (`fe*` elements) run, references followed. */
  filterPasses: number
}

interface Element {
  children: number[]
  refs: string[]
  filterPrimitive: boolean
}

/** Counts stop growing here: far past any budget, and still exact as doubles. */
const SATURATED = 2 ** 52

const REF = /url\(\s*['"]?#([^'")\s]+)/g
const ATTRIBUTE = /([^\s=/>]+)\s*=\s*("[^"]*"|'[^']*')/g
const TAG_NAME = /^[^\s/>]+/

function refsIn(value: string, into: string[]) {
  for (const match of value.matchAll(REF)) into.push(match[1]!)
}

/** The end of a tag starting at `from` (the index of its `>`), quotes honoured; -1 when it never ends. */
function tagEnd(text: string, from: number): number {
  let quote = ''
  for (let i = from; i < text.length; i++) {
    const c = text[i]!
    if (quote) {
      if (c === quote) quote = ''
    } else if (c === '"' || c === "'") quote = c
    else if (c === '>') return i
  }
  return -1
}

/**
 * Skips a `<!...>` declaration at `at`. A DOCTYPE's internal subset may declare entities: one whose text holds markup
 * would add elements this count never sees, so such a file is refused.
 */
function skipDeclaration(text: string, at: number): number {
  const close = text.indexOf('>', at)
  const subset = text.indexOf('[', at)
  if (subset >= 0 && (close < 0 || subset < close)) {
    const end = text.indexOf(']', subset)
    if (end < 0) return text.length
    if (/<!ENTITY[^>]*</i.test(text.slice(subset, end)))
      throw new MediaError('SVG entities that hold markup are not accepted')
    const after = text.indexOf('>', end)
    return after < 0 ? text.length : after + 1
  }
  return close < 0 ? text.length : close + 1
}

/** The elements of the document, under a root of index 0, with their ids and references. */
function parse(text: string) {
  const elements: Element[] = [{ children: [], refs: [], filterPrimitive: false }]
  const ids = new Map<string, number>()
  const open = [0]
  for (let i = text.indexOf('<'); i >= 0; i = text.indexOf('<', i)) {
    if (text.startsWith('<!--', i)) {
      const end = text.indexOf('-->', i + 4)
      i = end < 0 ? text.length : end + 3
    } else if (text.startsWith('<![CDATA[', i)) {
      const end = text.indexOf(']]>', i)
      i = end < 0 ? text.length : end + 3
    } else if (text.startsWith('<?', i)) {
      const end = text.indexOf('?>', i)
      i = end < 0 ? text.length : end + 2
    } else if (text.startsWith('<!', i)) {
      i = skipDeclaration(text, i)
    } else if (text[i + 1] === '/') {
      if (open.length > 1) open.pop()
      const end = text.indexOf('>', i)
      i = end < 0 ? text.length : end + 1
    } else {
      const end = tagEnd(text, i + 1)
      if (end < 0) break
      i = readTag(text.slice(i + 1, end), text, end + 1, elements, ids, open)
    }
  }
  return { elements, ids }
}

/** Adds the element whose tag is `tag` (the text between `<` and `>`); returns where reading goes on. */
function readTag(
  tag: string,
  text: string,
  after: number,
  elements: Element[],
  ids: Map<string, number>,
  open: number[],
) {
  const name = TAG_NAME.exec(tag)?.[0] ?? ''
  const local = name.slice(name.indexOf(':') + 1)
  const element: Element = { children: [], refs: [], filterPrimitive: /^fe[A-Z]/.test(local) }
  for (const [, attribute, quoted] of tag.matchAll(ATTRIBUTE)) {
    const value = quoted!.slice(1, -1)
    if (attribute === 'id') ids.set(value, elements.length)
    if ((attribute === 'href' || attribute!.endsWith(':href')) && value.startsWith('#'))
      element.refs.push(value.slice(1))
    refsIn(value, element.refs)
  }
  const index = elements.length
  elements.push(element)
  elements[open.at(-1)!]!.children.push(index)
  if (tag.endsWith('/')) return after
  if (local === 'style') {
    // A style sheet's text (CDATA or not) may reference filters and patterns: counted once, from the root.
    const end = text.indexOf('</', after)
    refsIn(text.slice(after, end < 0 ? text.length : end), elements[0]!.refs)
  }
  open.push(index)
  return after
}

/** The elements drawn and filter passes run from the root, every reference followed (memoised, iteratively). */
export function svgWork(text: string): SvgWork {
  const { elements, ids } = parse(text)
  const drawn = new Float64Array(elements.length)
  const passes = new Float64Array(elements.length)
  const state = new Uint8Array(elements.length) // 0 not seen, 1 on the path, 2 counted
  const edges = (n: number) => {
    const element = elements[n]!
    const targets = [...element.children]
    for (const ref of element.refs) {
      const target = ids.get(ref)
      if (target !== undefined) targets.push(target)
    }
    return targets
  }
  const stack: { node: number; targets: number[]; next: number }[] = [{ node: 0, targets: edges(0), next: 0 }]
  state[0] = 1
  while (stack.length > 0) {
    const top = stack.at(-1)!
    if (top.next < top.targets.length) {
      const target = top.targets[top.next++]!
      if (state[target] === 1) throw new MediaError('SVG refers to itself (a reference loop)')
      if (state[target] === 0) {
        state[target] = 1
        stack.push({ node: target, targets: edges(target), next: 0 })
      }
      continue
    }
    const { node, targets } = stack.pop()!
    let d = node === 0 ? 0 : 1
    let p = elements[node]!.filterPrimitive ? 1 : 0
    for (const target of targets) {
      d = Math.min(SATURATED, d + drawn[target]!)
      p = Math.min(SATURATED, p + passes[target]!)
    }
    drawn[node] = d
    passes[node] = p
    state[node] = 2
  }
  return { elements: drawn[0]!, filterPasses: passes[0]! }
}
