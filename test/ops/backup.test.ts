/**
 * Backups as an operator runs them (the real CLI, a process): the database and every secret 0600 in a `.tar`'s headers
 * as the system's tar reads them, in a backup directory, and after a restore (an old 0644 backup too); the archive
 * itself private; a restore refused while a server holds the data directory.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, userWithKey } from '../helpers'
import { cliAt, makeLibrary, modeOf, tarModes } from './library'

const scratch = mkdtempSync(join(tmpdir(), 'imghost-backup-'))
const library = join(scratch, 'data')
const PRIVATE = ['imghost.sqlite', 'jwt-secret', 'variant-secret', 'totp-key']

beforeAll(async () => {
  await makeLibrary(library, join(scratch, 'pictures'))
})
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

test('a .tar backup holds the database and the secrets 0600, the images 0644, and is itself 0600', async () => {
  const archive = join(scratch, 'out', 'backup.tar')
  const run = await cliAt(library, ['backup', archive])
  expect(run.code, run.err).toBe(0)
  const modes = tarModes(archive)
  for (const name of PRIVATE) expect(`${name} ${modes[name]}`).toBe(`${name} -rw-------`)
  const images = Object.keys(modes).filter((name) => name.startsWith('files/'))
  expect(images).toHaveLength(6)
  for (const name of images) expect(`${name} ${modes[name]}`).toBe(`${name} -rw-r--r--`)
  expect(modeOf(archive)).toBe('-rw-------')
  // Nothing beside it: the database snapshot made for the archive is gone.
  expect(readdirSync(join(scratch, 'out'))).toEqual(['backup.tar'])
})

test('a restore leaves the database and the secrets 0600, from a .tar and from an old 0644 backup directory', async () => {
  const dir = join(scratch, 'dir-backup')
  expect((await cliAt(library, ['backup', dir])).code).toBe(0)
  for (const name of PRIVATE) expect(`${name} ${modeOf(join(dir, name))}`).toBe(`${name} -rw-------`)
  expect(modeOf(dir)).toBe('drwx------')

  const archive = join(scratch, 'restore-me.tar')
  expect((await cliAt(library, ['backup', archive])).code).toBe(0)
  // A backup of an older version held them 0644: a restore makes them private whatever the backup says.
  for (const name of PRIVATE) chmodSync(join(dir, name), 0o644)
  for (const [source, target] of [
    [archive, join(scratch, 'restored-tar')],
    [dir, join(scratch, 'restored-dir')],
  ]) {
    const run = await cliAt(target, ['restore', source])
    expect(run.code, run.err).toBe(0)
    for (const name of PRIVATE) expect(`${name} ${modeOf(join(target, name))}`).toBe(`${name} -rw-------`)
    const check = await cliAt(target, ['check'])
    expect(check.code, check.out).toBe(0)
    expect(JSON.parse(check.out).images).toBe(3)
  }
})

test('a backup into a directory that is not empty, or onto an existing .tar, fails on one line', async () => {
  const full = join(scratch, 'full')
  mkdirSync(full)
  writeFileSync(join(full, 'keep'), 'x')
  const archive = join(scratch, 'once.tar')
  expect((await cliAt(library, ['backup', archive])).code).toBe(0)
  for (const target of [full, archive]) {
    const run = await cliAt(library, ['backup', target])
    expect(run.code).toBe(1)
    expect(run.err.trim().split('\n')).toHaveLength(1)
    expect(run.err).toStartWith('error: ')
  }
})

test('a restore is refused while a server runs on the data directory, which it leaves as it was', async () => {
  const backup = join(scratch, 'for-live.tar')
  expect((await cliAt(library, ['backup', backup])).code).toBe(0)
  const t = await startTestServer()
  try {
    const user = await userWithKey(t)
    const upload = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: user.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png', 20, 20), name: 'live.png' }]),
    })
    expect(upload.status).toBe(201)
    const before = readdirSync(t.dataDir, { recursive: true }).sort()
    const run = await cliAt(t.dataDir, ['restore', backup])
    expect(run.code).toBe(1)
    expect(run.err.trim()).toMatch(/^error: restore refused: DATA_DIR .* is in use by a running imghost server/)
    expect(run.err.trim().split('\n')).toHaveLength(1)
    // The live library is untouched: its image is still served, and no file of the backup went in.
    expect((await t.fetch(new URL(upload.body.url).pathname)).status).toBe(200)
    expect(readdirSync(t.dataDir, { recursive: true }).sort()).toEqual(before)
  } finally {
    await t.stop()
  }
})
