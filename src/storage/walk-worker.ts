// Reads directories for walk.ts, off the server's thread: at a million files a directory read costs hundreds of
// milliseconds of CPU, and the names' garbage as much again, which the server's event loop must not carry.
import { opendir } from 'node:fs/promises'
import { join } from 'node:path'
import type { WalkReply, WalkRequest } from './walk'

declare const self: Worker

let walk: AsyncGenerator<string[]> | undefined

async function* batches(root: string, dirs: readonly string[], size: number): AsyncGenerator<string[]> {
  let names: string[] = []
  for (const dir of dirs) {
    for await (const { name } of await opendir(join(root, dir))) {
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
    walk = batches(msg.root, msg.dirs, msg.batch)
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
