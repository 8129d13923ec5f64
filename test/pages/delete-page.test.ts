import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { tableRows } from '../db-dump'
import { makeImage, uploadForm } from '../fixtures'
import { registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'

// Deleting from a link: every upload door answers a `deletePage` link that opens a confirmation page; its form posts
// the token back and the image is gone. Tokens are stored hashed and work once (the image goes with them).

let t: TestServer
let user: Awaited<ReturnType<typeof userWithKey>>
let seed = 0

beforeAll(async () => {
  t = await startTestServer({ SITE_NAME: 'Pixbin' })
  user = await userWithKey(t)
})
afterAll(() => t.stop())

const png = () => makeImage('png', 40, 30, ++seed)
const ip = () => `198.51.100.${++seed}`

/** The token of a delete page link, and its two addresses: the page and where its form posts. */
function parse(deletePage: string, id: string) {
  const prefix = `${t.url}/delete/${id}/`
  expect(deletePage.startsWith(prefix)).toBe(true)
  const token = deletePage.slice(prefix.length)
  expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/)
  return { token, page: deletePage, action: `${t.url}/delete/${id}` }
}

const confirm = (id: string, token: string) =>
  fetch(`${t.url}/delete/${id}`, { method: 'POST', body: new URLSearchParams({ token }) })

async function keyUpload(name = 'shot.png', count = 1) {
  const parts = await Promise.all(Array.from({ length: count }, async () => ({ bytes: await png(), name })))
  const res = await t.json('/api/v1/upload', { method: 'POST', headers: user.keyHeader, body: uploadForm(parts) })
  expect(res.status).toBe(201)
  return res.body
}

async function expectGone(id: string) {
  expect((await t.fetch(`/cdn/${id}.png`)).status).toBe(404)
  expect((await t.fetch(`/api/v1/image/${id}`)).status).toBe(404)
}

describe('every upload door answers a deletePage link', () => {
  test('API key: one file, and each item of a batch, with a token of its own', async () => {
    const one = await keyUpload()
    parse(one.deletePage, one.id)
    // The contract's fields stay as they were: `delete` is the API link, no bare token for an account's upload.
    expect(one.delete).toBe(`${t.url}/api/v1/image/${one.id}`)
    expect(one.deleteToken).toBeUndefined()
    const batch = await keyUpload('b.png', 3)
    const tokens = batch.images.map(
      (image: { id: string; deletePage: string }) => parse(image.deletePage, image.id).token,
    )
    expect(new Set(tokens).size).toBe(3)
  })

  test('web upload: anonymous (the link carries its deleteToken) and logged in', async () => {
    const anon = await t.json('/api/upload', {
      method: 'POST',
      headers: { 'x-forwarded-for': ip() },
      body: uploadForm([{ bytes: await png(), name: 'anon.png' }]),
    })
    expect(anon.status).toBe(201)
    expect(parse(anon.body.deletePage, anon.body.id).token).toBe(anon.body.deleteToken)
    const account = await registerUser(t)
    const web = await t.json('/api/upload', {
      method: 'POST',
      headers: account.bearer,
      body: uploadForm([{ bytes: await png(), name: 'web.png' }]),
    })
    expect(web.status).toBe(201)
    parse(web.body.deletePage, web.body.id)
  })

  test('tus: the finished upload answers it, and it deletes', async () => {
    const bytes = await png()
    const created = await t.fetch('/api/v1/tus', {
      method: 'POST',
      headers: { ...user.keyHeader, 'tus-resumable': '1.0.0', 'upload-length': String(bytes.length) },
    })
    expect(created.status).toBe(201)
    const done = await fetch(created.headers.get('location')!, {
      method: 'PATCH',
      headers: {
        ...user.keyHeader,
        'tus-resumable': '1.0.0',
        'content-type': 'application/offset+octet-stream',
        'upload-offset': '0',
      },
      body: bytes,
    })
    expect(done.status).toBe(200)
    const body = await done.json()
    const { token } = parse(body.deletePage, body.id)
    // The answer kept for a client that lost it has no plain token: not in the answer, not in the database.
    const kept = await (await fetch(created.headers.get('location')!, { headers: user.keyHeader })).json()
    expect(kept).toMatchObject({ id: body.id, url: body.url })
    expect(kept.deletePage).toBeUndefined()
    const rows = await tableRows(t.server.db, 'tus_uploads')
    expect(rows.length).toBeGreaterThan(0)
    expect(rows.some((row) => Object.values(row).some((value) => String(value).includes(token)))).toBe(false)
    expect((await confirm(body.id, token)).status).toBe(200)
    await expectGone(body.id)
  })

  test('Chevereto: image.delete_url is the delete page', async () => {
    const form = new FormData()
    form.append('source', new Blob([await png()], { type: 'image/png' }), 'c.png')
    const res = await t.json(`/api/1/upload?key=${user.apiKey}`, { method: 'POST', body: form })
    expect(res.status).toBe(200)
    const { id_encoded: id, delete_url: link } = res.body.image
    const { token } = parse(link, id)
    expect((await fetch(link)).status).toBe(200)
    expect((await confirm(id, token)).status).toBe(200)
    await expectGone(id)
  })
})

describe('the delete page', () => {
  test('shows the image, escaped, with a form that posts the token; strict CSP, noindex, no referrer', async () => {
    const image = await keyUpload("<img src=x onerror='alert(1)'>&.png")
    const { token, page } = parse(image.deletePage, image.id)
    const res = await fetch(page)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const html = await res.text()
    // The same policy as every other page.
    const viewer = await t.fetch(`/i/${image.id}`)
    expect(res.headers.get('content-security-policy')).toBe(viewer.headers.get('content-security-policy'))
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(html).toContain('<meta name="robots" content="noindex">')
    expect(html).toContain('&lt;img src=x onerror=&#39;alert(1)&#39;&gt;&amp;.png')
    expect(html).not.toContain('<img src=x')
    expect(html).toContain(`<form method="post" action="/delete/${image.id}">`)
    expect(html).toContain(`<input type="hidden" name="token" value="${token}">`)
    expect(html).toContain(`/cdn/`)
    // Opening the page deletes nothing.
    expect((await t.fetch(`/api/v1/image/${image.id}`)).status).toBe(200)
  })

  test('a mature image is shown blurred behind a Show button, never in the markup', async () => {
    const form = uploadForm([{ bytes: await png(), name: 'mature.png' }], { nsfw: 'true' })
    const image = (await t.json('/api/v1/upload', { method: 'POST', headers: user.keyHeader, body: form })).body
    const html = await (await fetch(image.deletePage)).text()
    expect(html).toContain('<figure class="viewer nsfw is-hidden">')
    expect(html).toContain(`<img data-preview="${image.thumbnail}"`)
    expect(html).not.toContain(` src="${t.url}/cdn/`)
    expect(html).toContain('<button type="button" data-reveal>Show image</button>')
  })

  test('confirming deletes the image; the link works once', async () => {
    const image = await keyUpload()
    const { token, page } = parse(image.deletePage, image.id)
    const done = await confirm(image.id, token)
    expect(done.status).toBe(200)
    expect(await done.text()).toContain('Image deleted')
    await expectGone(image.id)
    // Used: both the page and a second confirmation say the image is gone.
    for (const again of [await fetch(page), await confirm(image.id, token)]) {
      expect(again.status).toBe(404)
      expect(await again.text()).toContain('This image no longer exists')
    }
  })

  test('a wrong token (or another image’s, or none) deletes nothing and says the link is not valid', async () => {
    const image = await keyUpload()
    const other = await keyUpload()
    const otherToken = parse(other.deletePage, other.id).token
    const refusals = [
      await fetch(`${t.url}/delete/${image.id}/${'A'.repeat(32)}`),
      await fetch(`${t.url}/delete/${image.id}/${otherToken}`),
      await confirm(image.id, otherToken),
      await confirm(image.id, ''),
      // A form from another site (no token to send): no cookie makes it count.
      await fetch(`${t.url}/delete/${image.id}`, {
        method: 'POST',
        headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
        body: '',
      }),
    ]
    for (const res of refusals) {
      expect(res.status).toBe(404)
      const html = await res.text()
      expect(html).toContain('This delete link is not valid')
      expect(html).toContain('<meta name="robots" content="noindex">')
    }
    expect((await t.fetch(`/api/v1/image/${image.id}`)).status).toBe(200)
    expect((await t.fetch(`/api/v1/image/${other.id}`)).status).toBe(200)
    // An id nobody uploaded: the image is gone (or never was).
    const unknown = await fetch(`${t.url}/delete/ZZZZZZZZ/${otherToken}`)
    expect(unknown.status).toBe(404)
    expect(await unknown.text()).toContain('This image no longer exists')
  })

  test('the database holds only the token’s SHA-256', async () => {
    const image = await keyUpload()
    const { token } = parse(image.deletePage, image.id)
    const row = (await tableRows(t.server.db, 'images')).find((r) => r.id === image.id)!
    expect(row.delete_token_hash).toBe(new Bun.CryptoHasher('sha256').update(token).digest('hex'))
    expect(Object.values(row).some((value) => String(value).includes(token))).toBe(false)
  })
})
