/**
 * Search never finds images through a password-protected album's title (issue 17: `q=zeph` found the images of a
 * public album titled "Zephyr ..." behind a password). Migration 0004 indexes album titles of public, live albums
 * without a password only, and follows a password being set or removed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeImage, uploadForm } from '../fixtures'
import { jsonBody, startTestServer, type TestServer, userWithKey } from '../helpers'

const TIMEOUT = 60_000
let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
}, TIMEOUT)
afterAll(() => t?.stop(), TIMEOUT)

async function albumWithImage(title: string, seed: number, password?: string) {
  const album = await t.json('/api/albums', { method: 'POST', ...jsonBody({ title, isPublic: true }, owner.bearer) })
  expect(album.status).toBe(201)
  if (password)
    expect(
      (await t.json(`/api/albums/${album.body.album.id}`, { method: 'PUT', ...jsonBody({ password }, owner.bearer) }))
        .status,
    ).toBe(200)
  const up = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: owner.keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 32, 32, seed), name: `img${seed}.png` }], {
      album: album.body.album.id,
    }),
  })
  expect(up.status).toBe(201)
  return { albumId: album.body.album.id as string, imageId: up.body.id as string }
}

const found = async (q: string) => {
  const res = await t.json(`/api/search?q=${encodeURIComponent(q)}`)
  expect(res.status).toBe(200)
  return (res.body.images as { id: string }[]).map((i) => i.id)
}

describe('search and password-protected albums', () => {
  test(
    "a guarded album's title finds nothing; an open album's does; setting and removing a password follow",
    async () => {
      const guarded = await albumWithImage('Zephyrine holiday', 1, 'a secret password')
      const open = await albumWithImage('Aurora borealis', 2)

      expect(await found('zeph')).toEqual([])
      expect(await found('zephyrine holiday')).toEqual([])
      expect(await found('auro')).toEqual([open.imageId])

      // A password set later takes the album out of the index; removing it puts it back.
      expect(
        (
          await t.json(`/api/albums/${open.albumId}`, {
            method: 'PUT',
            ...jsonBody({ password: 'another secret' }, owner.bearer),
          })
        ).status,
      ).toBe(200)
      expect(await found('auro')).toEqual([])
      expect(
        (
          await t.json(`/api/albums/${guarded.albumId}`, {
            method: 'PUT',
            ...jsonBody({ password: null }, owner.bearer),
          })
        ).status,
      ).toBe(200)
      expect(await found('zeph')).toEqual([guarded.imageId])

      // An image added to a guarded album is not indexed under its title either.
      const extra = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 32, 32, 3), name: 'img3.png' }]),
      })
      expect(
        (
          await t.json(`/api/albums/${open.albumId}/images`, {
            method: 'POST',
            ...jsonBody({ imageId: extra.body.id }, owner.bearer),
          })
        ).status,
      ).toBe(200)
      expect(await found('aurora')).toEqual([])
      // The filename still finds it: only the guarded title is kept out.
      expect(await found('img3')).toEqual([extra.body.id])
    },
    TIMEOUT,
  )
})
