import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { configVariables } from '../../src/config'

// docs/ is the operator's manual (the README links to it): a variable or command added without documenting it fails
// here. Every variable is in docs/configuration.md, every CLI command in docs/operations.md.

const root = join(import.meta.dir, '..', '..')

/** The text from a heading of a docs/ page to the next heading of the same or a higher level. */
function section(page: string, heading: string): string {
  const text = readFileSync(join(root, 'docs', page), 'utf8')
  const start = `\n${text}`.indexOf(`\n${heading}\n`)
  expect(start, `no "${heading}" in docs/${page}`).toBeGreaterThanOrEqual(0)
  const level = heading.indexOf(' ')
  const rest = text.slice(start + heading.length + 1)
  const end = rest.search(new RegExp(`^#{1,${level}} `, 'm'))
  return end < 0 ? rest : rest.slice(0, end)
}

/** Table rows as arrays of trimmed cells. */
const rows = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('|') && !line.startsWith('|---'))
    .map((line) =>
      line
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((cell) => cell.trim()),
    )

describe('docs', () => {
  test('the Configuration table has every variable config.ts reads, with its default', () => {
    const table = rows(section('configuration.md', '# Configuration'))
    for (const [name, fallback] of Object.entries(configVariables)) {
      const row = table.find((cells) => cells[0].includes(`\`${name}\``))
      expect(row, `${name} is not in the Configuration table`).toBeDefined()
      // Empty defaults read as "unset", "generated", ...; the others are written as they are.
      if (fallback) expect(row![1], `default of ${name}`).toContain(`\`${fallback}\``)
    }
  })

  test('Operations CLI documents every command the CLI lists in its help', () => {
    const help = Bun.spawnSync([process.execPath, join(root, 'src/cli.ts'), 'help'], { cwd: root })
    expect(help.exitCode).toBe(0)
    // After "Commands:", each command's line starts with two spaces and its name; a description wrapped onto more
    // lines goes on after more spaces.
    const commands = help.stdout
      .toString()
      .split('Commands:')[1]!
      .split('\n')
      .filter((line) => /^ {2}\S/.test(line))
      .map((line) => line.trim().split(' ')[0]!)
    expect(commands).toContain('verify-email')
    expect(commands).toContain('unban')
    const documented = rows(section('operations.md', '## Operations CLI')).map((cells) => cells[0])
    for (const command of commands) {
      expect(
        documented.some((cell) => cell.includes(`\`${command}`)),
        `${command} is not in the Operations CLI table`,
      ).toBe(true)
    }
  })
})
