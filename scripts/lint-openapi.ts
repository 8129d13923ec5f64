/**
 * Lints the OpenAPI document a running server publishes (/swagger/json) with `@redocly/cli lint` and the rules of
 * redocly.yaml. `bun scripts/lint-openapi.ts` (a CI step: exits 1 on any error) starts a server of its own, as the
 * tests do; test/http/openapi-lint.test.ts calls `lintOpenApi` on its server's document.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')
const CLI = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js')
/** Offline and quiet: no usage report, no update check (redocly.yaml says `telemetry: off` too). */
const QUIET = { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
/**
 * The address the document's `servers` gets (PUBLIC_URL): a name of the reserved .test domain, since the linter warns
 * about localhost and example.com.
 */
export const LINT_PUBLIC_URL = 'https://images.imghost.test'

export interface LintProblem {
  ruleId: string
  severity: 'error' | 'warn'
  message: string
  /** JSON pointer of the place in the document. */
  pointer: string
}
export interface LintResult {
  errors: number
  warnings: number
  problems: LintProblem[]
}

type RawProblem = { ruleId: string; severity: 'error' | 'warn'; message: string; location?: { pointer?: string }[] }

/** The linter's findings on a document (run by Node, as its package wants, on a copy written to a temp directory). */
export async function lintOpenApi(document: unknown): Promise<LintResult> {
  const dir = mkdtempSync(join(tmpdir(), 'imghost-openapi-'))
  try {
    const file = join(dir, 'openapi.json')
    await Bun.write(file, JSON.stringify(document))
    const run = Bun.spawn(
      ['node', CLI, 'lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json', '--max-problems', '1000'],
      { cwd: dir, env: { ...process.env, ...QUIET }, stdout: 'pipe', stderr: 'pipe' },
    )
    const [out, err] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
    let report: { totals: { errors: number; warnings: number }; problems: RawProblem[] }
    try {
      report = JSON.parse(out)
    } catch {
      throw new Error(`redocly lint gave no report: ${err.trim() || out.trim()}`)
    }
    const problems = report.problems.map((p) => ({
      ruleId: p.ruleId,
      severity: p.severity,
      message: p.message,
      pointer: p.location?.[0]?.pointer ?? '',
    }))
    return { errors: report.totals.errors, warnings: report.totals.warnings, problems }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const { startTestServer } = await import('../test/helpers')
  const server = await startTestServer({ PUBLIC_URL: LINT_PUBLIC_URL })
  let code = 1
  try {
    const result = await lintOpenApi(await (await server.fetch('/swagger/json')).json())
    for (const p of result.problems) console.log(`${p.severity.padEnd(5)} ${p.ruleId}  ${p.pointer}  ${p.message}`)
    console.log(`OpenAPI lint: ${result.errors} errors, ${result.warnings} warnings`)
    code = result.errors === 0 ? 0 : 1
  } finally {
    await server.stop()
  }
  process.exit(code)
}
