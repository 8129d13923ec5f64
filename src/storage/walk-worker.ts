// Reads directories for walk.ts, off the server's thread: at a million files a directory read costs hundreds of
// milliseconds of CPU, and the names' garbage as much again, which the server's event loop must not carry.
import { opendir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { WalkReply, WalkRequest } from './walk'

declare const self: Worker

let walk: AsyncGenerator<string[]> | undefined

/**
 * The names in the large directory `path`, as `find` reads them. Bun's own directory reads (opendir, readdir, Glob)
 * take in the whole directory before the first name: at a million files ~160 MB held while the walk lasts, so the
 * sweep and `cli check` grew with the library. find hands names out as it reads them and waits while the pipe is
 * full, so memory stays flat. `-prune` keeps it to the directory itself; NUL ends each name (a name may hold a
 * newline); both are in GNU, BSD and BusyBox find. A small directory is read by Bun (namesOf): starting find costs a
 * few milliseconds.
 */
async function* streamedNames(path: string): AsyncGenerator<string> {
  const find = Bun.spawn(['find', `${path}/.`, '!', '-name', '.', '-prune', '-print0'], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const prefix = `${path}/./`.length
  const decoder = new TextDecoder()
  let rest = ''
  try {
    for await (const chunk of find.stdout) {
      const names = (rest + decoder.decode(chunk, { stream: true })).split('\0')
      rest = names.pop() ?? ''
      for (const name of names) yield name.slice(prefix)
    }
    if ((await find.exited) !== 0)
      throw new Error(`cannot read ${path}: ${(await new Response(find.stderr).text()).trim()}`)
  } finally {
    // A walk left early (an error downstream) stops find.
    find.kill()
  }
}

/** The names in the directory `path`, as Bun reads them: all at once, before the first. */
async function* namesOf(path: string): AsyncGenerator<string> {
  for await (const { name } of await opendir(path)) yield name
}

async function* batches(root: string, dirs: readonly string[], size: number, streamAbove: number) {
  let names: string[] = []
  for (const dir of dirs) {
    const path = join(root, dir)
    for await (const name of (await stat(path)).size > streamAbove ? streamedNames(path) : namesOf(path)) {
      names.push(`${dir}/${name}`)
      if (names.length < size) continue
      yield names
      names = []
    }
  }
  if (names.length > 0) yield names
}

self.onmessage = async (event: MessageEvent<WalkRequest>) => {
  const msg = event.data
  if (msg.type === 'start') {
    walk = batches(msg.root, msg.dirs, msg.batch, msg.streamAbove)
    return
  }
  let reply: WalkReply
  try {
    const next = await walk!.next()
    reply = { names: next.done ? [] : next.value }
  } catch (error) {
    reply = { error: error instanceof Error ? error.message : String(error) }
  }
  self.postMessage(reply)
}
