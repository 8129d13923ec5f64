import { Database } from 'bun:sqlite'
import { readFileSync } from 'node:fs'
import { probeLines } from '../lib/lag'
import type { ReadResult } from './reads'

/** A statement the server probe timed (bench/lib/server-probe.ts, BENCH_SQL_FILE). */
interface Timed {
  end: number
  ms: number
  sql: string
  /** Run on a Worker's thread (off the event loop). */
  worker?: boolean
}

function readTimed(file: string): Timed[] {
  return probeLines(file).map((line) => JSON.parse(line) as Timed)
}

/** SQLite's EXPLAIN QUERY PLAN of a statement, as an indented tree. */
function planOf(db: Database, statement: string): string {
  try {
    const rows = db.query(`EXPLAIN QUERY PLAN ${statement}`).all() as { id: number; parent: number; detail: string }[]
    const depth = new Map<number, number>([[0, -1]])
    return rows
      .map((r) => {
        const d = (depth.get(r.parent) ?? -1) + 1
        depth.set(r.id, d)
        return `${'  '.repeat(d)}${r.detail}`
      })
      .join('\n')
  } catch (error) {
    return `(no plan: ${String(error)})`
  }
}

/** Statements and their plans, grouped per read by the window of its requests, as Markdown. */
function perRead(
  results: ReadResult[],
  label: string,
  timed: (Timed & { plan?: string })[],
  planOf: (t: Timed & { plan?: string }) => string,
) {
  const out: string[] = []
  for (const r of results) {
    const windows = r.sites[label].windows
    const mine = timed.filter((t) => windows.some(([from, to]) => t.end > from && t.end - t.ms < to))
    if (mine.length === 0) continue
    // One statement whatever the time it was asked at (`now` is written into the expiry conditions).
    const shape = (t: Timed) => t.sql.replace(/\b\d{12,}\b/g, '?')
    const bySql = new Map<string, (Timed & { plan?: string })[]>()
    for (const t of mine) bySql.set(shape(t), [...(bySql.get(shape(t)) ?? []), t])
    out.push(`### ${r.read} (${label}: ${r.sites[label].medianMs.toFixed(1)} ms median)`, '')
    const slowest = (ts: Timed[]) => Math.max(...ts.map((t) => t.ms))
    const sorted = [...bySql].sort((a, b) => slowest(b[1]) - slowest(a[1]))
    for (const [, ts] of sorted.slice(0, 4)) {
      const worst = ts.reduce((w, t) => (t.ms > w.ms ? t : w))
      const statement = worst.sql
      out.push(
        `- ${worst.ms.toFixed(1)} ms at most, ${ts.length} runs over ${windows.length} requests${worst.worker ? ', on a Worker (off the event loop)' : ''}:`,
        '',
        '```sql',
        statement.length > 1500 ? `${statement.slice(0, 1500)} ...` : statement,
        '```',
        '',
        '```',
        planOf(worst),
        '```',
        '',
      )
    }
  }
  return out.join('\n')
}

/**
 * PostgreSQL's slow statements as auto_explain logged them in the cluster's log (`logFile`; statements of 20 ms or more,
 * with their plans and actual row counts), per read.
 */
export function slowQueriesPg(results: ReadResult[], label: string, logFile: string): string {
  const entries: (Timed & { plan: string })[] = []
  const text = readFileSync(logFile, 'utf8')
  // An entry starts with its time stamp; auto_explain's are `... LOG:  duration: N ms  plan:` then the query and plan.
  for (const block of text.split(/\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ )/)) {
    const head = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+) (\S+) .*duration: ([\d.]+) ms\s+plan:\n([\s\S]*)$/.exec(
      block,
    )
    if (!head) continue
    const [, day, time, zone, ms, body] = head
    const query = /Query Text: ([\s\S]*?)\n\t(?=\S)/.exec(body)?.[1] ?? ''
    const end = Date.parse(`${day}T${time}${zone === 'UTC' ? 'Z' : ''}`)
    entries.push({
      end,
      ms: Number(ms),
      sql: query.trim(),
      plan: body.slice(body.indexOf(query) + query.length).trim(),
    })
  }
  return perRead(results, label, entries, (t) => t.plan ?? '')
}

/**
 * Each read's statements of 2 ms or more on the SQLite library `dbPath` (those whose run overlaps one of the read's
 * requests on the site `label`), slowest first, with how often they ran and their query plans, as Markdown.
 */
export function slowQueriesSqlite(results: ReadResult[], label: string, sqlFile: string, dbPath: string): string {
  const db = new Database(dbPath, { readonly: true })
  try {
    return perRead(results, label, readTimed(sqlFile), (t) => planOf(db, t.sql))
  } finally {
    db.close()
  }
}
