import { dlopen } from 'bun:ffi'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'

let libvips: ReturnType<typeof openLibvips> | undefined

const openLibvips = (path: string) => dlopen(path, { vips_version: { args: ['i32'], returns: 'i32' } })

/**
 * Single binary only: scripts/build-binary.ts makes sharp call this, with the path of the embedded libvips, right
 * before sharp requires its native addon.
 *
 * Bun writes the embedded addon to a temporary file and loads it from there, so the rpath of the addon (libvips in
 * node_modules next to it) leads nowhere, and its dependency on `libvips-cpp.so.<version>` can only be met by a
 * library with that soname that is already loaded. So: copy the embedded libvips to a private temporary directory,
 * load it, and delete it again (the mapping outlives the file; nothing is left behind).
 */
export function preloadLibvips(embeddedPath: string): void {
  if (libvips) return
  const dir = mkdtempSync(join(tmpdir(), 'imghost-libvips-'))
  try {
    const file = join(dir, basename(embeddedPath))
    writeFileSync(file, readFileSync(embeddedPath), { mode: 0o700 })
    libvips = openLibvips(file)
  } catch (error) {
    throw new Error(
      `Could not load the embedded libvips from ${dir} (is ${tmpdir()} mounted noexec? Point TMPDIR at a directory that is not): ${error}`,
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
