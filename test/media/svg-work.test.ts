/** What an SVG's markup asks of its renderer (src/media/svg-work.ts): elements and filter passes, references followed. */
import { describe, expect, test } from 'bun:test'
import { MediaError } from '../../src/media/errors'
import { svgWork } from '../../src/media/svg-work'
import { nestedUseSvg } from './hostile-files'

const svg = (body: string, head = '') =>
  `${head}<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100">${body}</svg>`

describe('svgWork', () => {
  test('counts every element drawn; comments, CDATA and processing instructions are not elements', () => {
    const text = svg(
      '<!-- <rect/> --><g><rect width="1" height="1"/><circle r="2"></circle></g><?pi <rect/>?>',
      '<?xml version="1.0"?>',
    )
    // svg, g, rect, circle
    expect(svgWork(text)).toEqual({ elements: 4, filterPasses: 0 })
  })

  test('a <use> draws what it references again, by href or xlink:href', () => {
    const text = svg('<defs><g id="a"><rect/><rect/></g></defs><use href="#a"/><use xlink:href="#a"/>')
    // svg, defs, g + 2 rects (3), two uses (1 + 3 each)
    expect(svgWork(text).elements).toBe(1 + 1 + 3 + 2 * (1 + 3))
  })

  test('url(#...) references in attributes and style attributes count; a style sheet counts once', () => {
    const filter = '<filter id="f"><feGaussianBlur stdDeviation="3"/><feOffset dx="1"/></filter>'
    const direct = svg(`${filter}<rect filter="url(#f)"/><rect style="fill:red;filter:url('#f')"/>`)
    // The definition's 2 primitives, then 2 for each of the two rectangles that use it.
    expect(svgWork(direct).filterPasses).toBe(2 + 2 * 2)
    const sheet = svg(`<style><![CDATA[ rect { filter: url(#f) } ]]></style>${filter}<rect/><rect/><rect/>`)
    expect(svgWork(sheet).filterPasses).toBe(2 + 2)
  })

  test("issue 17's nested <use>: a million blurred rectangles from 2 KB", () => {
    const { elements, filterPasses } = svgWork(nestedUseSvg(6, 10))
    // The blur's definition, each level's definition (level k holds 10^k blurred rectangles), and the drawn top level.
    let definitions = 0
    for (let k = 0; k <= 6; k++) definitions += 10 ** k
    expect(filterPasses).toBe(1 + definitions + 10 ** 6)
    expect(elements).toBeGreaterThan(10 ** 6)
  })

  test('counts saturate instead of overflowing: 40 levels of 10 stay a finite, huge number', () => {
    const { filterPasses } = svgWork(nestedUseSvg(40, 10, 100))
    expect(Number.isFinite(filterPasses)).toBe(true)
    expect(filterPasses).toBeGreaterThan(1e15)
  })

  test('a reference loop is refused', () => {
    expect(() => svgWork(svg('<g id="a"><use href="#a"/></g>'))).toThrow(MediaError)
    expect(() => svgWork(svg('<g id="a"><use href="#b"/></g><g id="b"><use href="#a"/></g>'))).toThrow(
      'SVG refers to itself',
    )
  })

  test('entities that hold markup are refused; plain ones (Illustrator namespaces) are read past', () => {
    const markup = "<!DOCTYPE svg [<!ENTITY lots \"<use href='#a'/><use href='#a'/>\">]>"
    expect(() => svgWork(svg('<g id="a"/>&lots;', markup))).toThrow('SVG entities that hold markup are not accepted')
    const plain = '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x" [<!ENTITY ns_svg "http://www.w3.org/2000/svg">]>'
    expect(svgWork(svg('<rect/>', plain))).toEqual({ elements: 2, filterPasses: 0 })
  })

  test('a reference to an id that does not exist counts nothing', () => {
    expect(svgWork(svg('<use href="#nowhere"/><rect fill="url(#none)"/>'))).toEqual({ elements: 3, filterPasses: 0 })
  })
})
