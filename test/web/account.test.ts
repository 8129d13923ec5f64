import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { parse } from 'node-html-parser'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser } from '../browser'
import {
  expectClean,
  openPage,
  pngFile,
  shoot,
  startWebServer,
  type WebPage,
  type WebServer,
  waitForImages,
} from './support'

// One visitor's whole journey through the account pages, step by step, in one browser context.
setDefaultTimeout(60_000)

let t: WebServer
let browser: Browser
let p: WebPage
let page: Page
const username = 'webuser'
const password = 'correct horse battery'
let token = ''
let apiKey = ''
const uploaded: { id: string; filename: string }[] = []

beforeAll(async () => {
  t = await startWebServer()
  browser = await launchBrowser()
  p = await openPage(browser, t, '/register')
  page = p.page
})
afterAll(async () => {
  await p?.close()
  await browser?.close()
  await t?.stop()
})

const bearer = () => ({ authorization: `Bearer ${token}` })
const tab = async (name: string) => {
  await page.click(`[data-tab="${name}"]`)
  await page.waitForSelector(`[data-panel="${name}"]:not([hidden])`)
}
const status = (id: string) => page.textContent(`#${id}`)
/** Clicks a button that makes the page download a file; returns the file's suggested name and its text. */
const download = async (selector: string) => {
  const [file] = await Promise.all([page.waitForEvent('download'), page.click(selector)])
  return { name: file.suggestedFilename(), text: readFileSync((await file.path())!, 'utf8') }
}

describe('account journey in the browser', () => {
  test('register: lands on the dashboard, logged in, asked to verify the email', async () => {
    await page.fill('#register-username', username)
    await page.fill('#register-email', `${username}@example.com`)
    await page.fill('#register-password', password)
    await shoot(page, 'register')
    await Promise.all([page.waitForURL('**/dashboard?welcome=1'), page.click('#register-form button[type="submit"]')])
    await page.waitForFunction(() => document.getElementById('dash-user')!.textContent!.includes('Logged in as'))
    expect(await page.textContent('#dash-user')).toContain(username)
    expect(await page.isVisible('#dash-banner')).toBe(true)
    expect(await page.textContent('#dash-banner')).toContain('Verify your email')
    token = (await page.evaluate(() => localStorage.getItem('imghost.token')))!
    expect((await t.json('/api/auth/me', { headers: bearer() })).body.user.username).toBe(username)
    // The header now offers the dashboard instead of the login.
    expect(await page.isVisible('.site-header a[href="/dashboard"]')).toBe(true)
    expect(await page.isVisible('.site-header a[href="/login"]')).toBe(false)
    expectClean(p)
  })

  test('a registration error is shown on the form', async () => {
    const other = await openPage(browser, t, '/register')
    try {
      await other.page.fill('#register-username', username)
      await other.page.fill('#register-email', `${username}@example.com`)
      await other.page.fill('#register-password', password)
      await other.page.click('#register-form button[type="submit"]')
      await other.page.waitForSelector('[data-form-error]:not([hidden])')
      expect(await other.page.textContent('[data-form-error]')).toMatch(/taken|exists|already/i)
      expectClean(other, [/status of 409/])
    } finally {
      await other.close()
    }
  })

  test('the verification link verifies the email and leaves the address bar', async () => {
    const mailed = t.mailed.get(`${username}@example.com`)!
    expect(mailed).toBeTruthy()
    await page.goto(`${t.url}/verify?token=${encodeURIComponent(mailed)}`)
    await page.waitForSelector('#verify-next:not([hidden])')
    expect(await status('verify-status')).toContain('verified')
    expect(page.url()).toBe(`${t.url}/verify`)
    expect((await t.json('/api/auth/me', { headers: bearer() })).body.user.emailVerified).toBe(true)
    await shoot(page, 'verify-done')
    // A used token is refused with a clear message.
    await page.goto(`${t.url}/verify?token=${encodeURIComponent(mailed)}`)
    await page.waitForSelector('#verify-form [data-form-error]:not([hidden])')
    expect(await status('verify-status')).toContain('did not work')
    expectClean(p, [/status of 400/])
    // That 400 (the refused rename) was expected: the later steps start from a clean record.
    p.problems.length = 0
    p.problems.length = 0
  })

  test('API keys: create one with a name, see the secret once, copy it, download the uploader configs', async () => {
    await page.goto(`${t.url}/dashboard#keys`)
    await page.waitForSelector('[data-panel="keys"]:not([hidden])')
    await page.fill('#key-name', 'ShareX laptop')
    await page.click('#key-create button[type="submit"]')
    await page.waitForSelector('#key-secret:not([hidden])')
    const secret = await page.inputValue('#new-key')
    expect(secret).toMatch(/^ihk_.{40}$/)
    apiKey = secret
    expect(await page.textContent('#key-secret-name')).toBe('ShareX laptop')
    await page.click('#key-secret button[data-copy="new-key"]')
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret)
    // The key works.
    expect((await t.json('/api/v1/me', { headers: { 'x-api-key': secret } })).body.username).toBe(username)

    // The configs are the server's (GET /api/v1/clients/*), fetched with the new key while its secret is known.
    const sharex = await download('#key-secret [data-client="sharex"]')
    expect(sharex.name).toBe('Pixbin.sxcu')
    expect(JSON.parse(sharex.text)).toEqual({
      Version: '15.0.0',
      Name: `Pixbin (${username})`,
      DestinationType: 'ImageUploader',
      RequestMethod: 'POST',
      RequestURL: `${t.url}/api/v1/upload`,
      Headers: { 'X-API-Key': secret },
      Body: 'MultipartFormData',
      FileFormName: 'file',
      URL: '{json:url}',
      ThumbnailURL: '{json:thumbnail}',
      DeletionURL: '{json:deletePage}',
      ErrorMessage: '{json:error}',
    })
    expect(await page.textContent('#key-secret [data-client-status]')).toBe('Downloaded Pixbin.sxcu.')
    // The visibility choice goes into the configs.
    await page.selectOption('#key-secret select[name="visibility"]', 'private')
    const shell = await download('#key-secret [data-client="shell"]')
    expect(shell.name).toBe('Pixbin-upload.sh')
    expect(shell.text).toStartWith('#!/bin/sh\n')
    expect(shell.text).toContain(`ENDPOINT='${t.url}/api/v1/upload'`)
    expect(shell.text).toContain(`API_KEY='${secret}'`)
    expect(shell.text).toContain(`--form-string 'visibility=private'`)
    const flameshot = await download('#key-secret [data-client="flameshot"]')
    expect(flameshot.name).toBe('Pixbin-flameshot.sh')
    expect(flameshot.text).toContain('flameshot gui --raw')
    expect(flameshot.text).toContain(`ENDPOINT='${t.url}/api/v1/upload'`)
    expect(flameshot.text).toContain(`API_KEY='${secret}'`)
    await page.waitForSelector('#key-list [data-key]')
    await shoot(page, 'dashboard-key-created')

    // Once dismissed (or after a reload) the secret is gone; the list shows only its prefix.
    await page.click('#key-secret-done')
    expect(await page.isVisible('#key-secret')).toBe(false)
    await page.reload()
    await page.waitForSelector('#key-list [data-key]')
    expect(await page.content()).not.toContain(secret)
    const row = await page.textContent('#key-list [data-key]')
    expect(row).toContain('ShareX laptop')
    expect(row).toContain(secret.slice(0, 8))
    expect(row).toContain('last used')

    // Configs for an existing key need its secret pasted, checked against the prefix.
    await page.click('#key-list [data-key] button:has-text("Uploader configs")')
    await page.fill('.key-configs input[type="password"]', 'ihk_wrongwrongwrongwrongwrongwrongwrongwrong')
    await page.click('.key-configs [data-client="sharex"]')
    expect(await page.textContent('.key-configs .error')).toContain('not the secret')
    await page.fill('.key-configs input[type="password"]', secret)
    const again = await download('.key-configs [data-client="sharex"]')
    expect(JSON.parse(again.text).Headers['X-API-Key']).toBe(secret)
    expect(await page.isVisible('.key-configs .error')).toBe(false)
    expectClean(p)
  })

  test('uploads from the upload page go to the account', async () => {
    await page.goto(`${t.url}/`)
    await page.waitForFunction(() => document.getElementById('account-text')!.textContent!.includes('Logged in as'))
    expect(await page.textContent('#limits-text')).toContain('Up to 15 files at a time, 50 MB each')
    await page.setInputFiles('#file-input', [
      await pngFile('holiday-1.png', 400, 300),
      await pngFile('holiday-2.png', 300, 400),
    ])
    await page.click('#upload-start')
    await page.waitForFunction(
      () => document.querySelectorAll('.upload-item[data-state="done"]').length === 2,
      undefined,
      { timeout: 20_000 },
    )
    const list = await t.json('/api/images', { headers: bearer() })
    expect(list.body.total).toBe(2)
    for (const image of list.body.images) uploaded.push({ id: image.id, filename: image.filename })
    expect(uploaded.map((i) => i.filename).sort()).toEqual(['holiday-1.png', 'holiday-2.png'])
    await shoot(page, 'upload-logged-in')
    expectClean(p)
  })

  test('dashboard images: make one private, then filter by visibility', async () => {
    await page.goto(`${t.url}/dashboard`)
    await page.waitForSelector('#image-grid [data-id]')
    expect(await page.locator('#image-grid [data-id]').count()).toBe(2)
    await waitForImages(page)
    await shoot(page, 'dashboard-images')
    const target = uploaded.find((i) => i.filename === 'holiday-1.png')!
    await page.check(`#image-grid [data-id="${target.id}"] input[type="checkbox"]`)
    expect(await status('selected-count')).toBe('1 selected')
    await page.click('[data-bulk="private"]')
    await page.waitForFunction(() => document.getElementById('images-status')!.textContent!.includes('made private'))
    expect(await page.textContent(`#image-grid [data-id="${target.id}"] .tags`)).toContain('Private')
    expect((await t.json(`/api/v1/image/${target.id}`)).body.data.visibility).toBe('private')

    await page.selectOption('#filter-visibility', 'private')
    await page.waitForFunction(() => document.querySelectorAll('#image-grid [data-id]').length === 1)
    expect(await page.getAttribute('#image-grid [data-id]', 'data-id')).toBe(target.id)
    await page.selectOption('#filter-visibility', '')
    await page.waitForFunction(() => document.querySelectorAll('#image-grid [data-id]').length === 2)
    expectClean(p)
  })

  test('dashboard images: mark both NSFW, the NSFW filter shows them, then unmark them', async () => {
    const nsfwTags = () => page.locator('#image-grid [data-id] .tag.danger').allTextContents()
    const shown = (n: number) =>
      page.waitForFunction((count) => document.querySelectorAll('#image-grid [data-id]').length === count, n)
    const imageStatus = (text: string) =>
      page.waitForFunction((expected) => document.getElementById('images-status')!.textContent === expected, text)
    expect(await nsfwTags()).toEqual([])
    await page.check('#select-all')
    expect(await status('selected-count')).toBe('2 selected')
    await page.click('[data-bulk="nsfw"]')
    await imageStatus('2 images marked NSFW.')
    expect(await nsfwTags()).toEqual(['NSFW', 'NSFW'])
    for (const image of uploaded) expect((await t.json(`/api/v1/image/${image.id}`)).body.data.nsfw).toBe(true)

    await page.selectOption('#filter-nsfw', 'false')
    await shown(0)
    expect(await page.textContent('#image-grid .empty')).toBe('No images match these filters.')
    await page.selectOption('#filter-nsfw', 'true')
    await shown(2)
    expect(
      (
        await page.locator('#image-grid [data-id]').evaluateAll((els) => els.map((el) => el.getAttribute('data-id')))
      ).sort(),
    ).toEqual(uploaded.map((i) => i.id).sort())

    await page.check('#select-all')
    await page.click('[data-bulk="sfw"]')
    await imageStatus('2 images unmarked as NSFW.')
    // Under the NSFW filter they are gone now; without it they are back, unmarked.
    expect(await page.locator('#image-grid [data-id]').count()).toBe(0)
    for (const image of uploaded) expect((await t.json(`/api/v1/image/${image.id}`)).body.data.nsfw).toBe(false)
    await page.selectOption('#filter-nsfw', '')
    await shown(2)
    expect(await nsfwTags()).toEqual([])
    expectClean(p)
  })

  test('dashboard images: search, sort, copy a link, share codes, rename and expiry', async () => {
    const shownIds = () =>
      page.locator('#image-grid [data-id]').evaluateAll((els) => els.map((el) => el.getAttribute('data-id')))
    const shown = (n: number) =>
      page.waitForFunction((count) => document.querySelectorAll('#image-grid [data-id]').length === count, n)
    await page.fill('#filter-name', 'DAY-2')
    await shown(1)
    const second = uploaded.find((i) => i.filename === 'holiday-2.png')!
    expect(await shownIds()).toEqual([second.id])
    await page.fill('#filter-name', '')
    await shown(2)

    const bySize = (await t.json('/api/images', { headers: bearer() })).body.images
      .sort((a: any, b: any) => a.size - b.size)
      .map((i: any) => i.id)
    for (const [order, ids] of [
      ['size-asc', bySize],
      ['size-desc', [...bySize].reverse()],
    ] as const) {
      await page.selectOption('#sort-images', order)
      await page.waitForFunction(
        (want) =>
          [...document.querySelectorAll('#image-grid [data-id]')].map((el) => el.getAttribute('data-id')).join() ===
          want,
        ids.join(),
      )
    }
    await page.selectOption('#sort-images', 'date-desc')

    const target = uploaded.find((i) => i.filename === 'holiday-1.png')!
    const tile = page.locator(`#image-grid [data-id="${target.id}"]`)
    const image = (await t.json(`/api/v1/image/${target.id}`)).body.data
    await tile.locator('button[data-copy-text]').click()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(image.url)

    await tile.getByRole('button', { name: /^Links & edit/ }).click()
    await page.waitForSelector('#image-dialog[open]')
    expect(await page.textContent('#image-dialog-title')).toBe('holiday-1.png')
    expect(await page.inputValue('#image-code-direct')).toBe(image.url)
    expect(await page.inputValue('#image-code-viewer')).toBe(image.viewer)
    expect(await page.inputValue('#image-code-markdown')).toBe(`[![holiday-1.png](${image.url})](${image.viewer})`)
    expect(await page.inputValue('#image-code-bbcode')).toBe(`[url=${image.viewer}][img]${image.url}[/img][/url]`)
    await page.click('button[data-copy="image-code-html"]')
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(
      `<a href="${image.viewer}"><img src="${image.url}" alt="holiday-1.png"></a>`,
    )

    const dialogStatus = (text: string) =>
      page.waitForFunction((want) => document.getElementById('image-dialog-status')!.textContent === want, text)
    await page.fill('#rename-input', 'Beach <day>.png')
    await page.click('#rename-form button[type="submit"]')
    await dialogStatus('Renamed.')
    expect(await page.textContent('#image-dialog-title')).toBe('Beach <day>.png')
    expect(await page.inputValue('#image-code-markdown')).toBe(`[![Beach <day>.png](${image.url})](${image.viewer})`)
    expect((await t.json('/api/images?q=beach', { headers: bearer() })).body.images[0]).toMatchObject({
      id: target.id,
      filename: 'Beach <day>.png',
    })
    await page.waitForFunction(
      (id) => document.querySelector(`#image-grid [data-id="${id}"] .name`)?.textContent === 'Beach <day>.png',
      target.id,
    )
    // A refused rename says why and changes nothing.
    await page.fill('#rename-input', 'x'.repeat(255))
    await page.evaluate(() => {
      const input = document.getElementById('rename-input') as HTMLInputElement
      input.removeAttribute('maxlength')
      input.value = 'x'.repeat(256)
    })
    await page.click('#rename-form button[type="submit"]')
    await dialogStatus('filename must be 1 to 255 characters')

    await page.selectOption('#expiry-select', 'P7D')
    await page.click('#expiry-form button[type="submit"]')
    await dialogStatus('Expiry set.')
    const expiresAt = (await t.json(`/api/v1/image/${target.id}`)).body.data.expiresAt
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(6 * 86_400_000)
    expect(await page.textContent('#image-dialog-expiry')).toStartWith('Deleted on ')
    await page.selectOption('#expiry-select', 'never')
    await page.click('#expiry-form button[type="submit"]')
    await dialogStatus('It never expires now.')
    expect((await t.json(`/api/v1/image/${target.id}`)).body.data.expiresAt).toBeNull()
    await page.click('#image-dialog form[method="dialog"] button')
    await page.waitForSelector('#image-dialog:not([open])', { state: 'attached' })
    target.filename = 'Beach <day>.png'
    // Only an admin's dashboard links to the reports.
    expect(await page.locator('a[href="/admin/reports"]').count()).toBe(0)
    expectClean(p, [/status of 400/])
    // That 400 (the refused rename) was expected: the later steps start from a clean record.
    p.problems.length = 0
  })

  test('albums: create one, add both images, set a password, edit and delete', async () => {
    await tab('albums')
    await page.fill('#album-title', 'Summer')
    await page.fill('#album-description', 'By the sea')
    await page.check('#album-create input[name="isPublic"]')
    await page.click('#album-create button[type="submit"]')
    await page.waitForSelector('#album-list [data-album]')
    expect(await page.textContent('#album-list [data-album]')).toContain('Summer')
    const albumId = (await page.getAttribute('#album-list [data-album]', 'data-album'))!

    await tab('images')
    await page.check('#select-all')
    expect(await status('selected-count')).toBe('2 selected')
    await page.selectOption('#bulk-album', albumId)
    await page.click('[data-bulk="album"]')
    await page.waitForFunction(() =>
      document.getElementById('images-status')!.textContent!.includes('added to the album'),
    )
    const album = await t.json(`/api/albums/${albumId}`, { headers: bearer() })
    expect(album.body.images.map((i: { id: string }) => i.id).sort()).toEqual(uploaded.map((i) => i.id).sort())

    await tab('albums')
    await page.waitForFunction(() =>
      document.querySelector('#album-list [data-album]')!.textContent!.includes('2 images'),
    )
    await page.click('#album-list [data-album] button:has-text("Edit")')
    await page.fill('#album-list form input[name="title"]', 'Summer 2026')
    await page.fill('#album-list form input[name="password"]', 'sea breeze')
    await page.click('#album-list form button[type="submit"]')
    await page.waitForFunction(() =>
      document.querySelector('#album-list [data-album]')!.textContent!.includes('Password'),
    )
    const updated = await t.json('/api/albums', { headers: bearer() })
    expect(updated.body.albums[0]).toMatchObject({
      title: 'Summer 2026',
      hasPassword: true,
      isPublic: true,
      imageCount: 2,
    })
    await waitForImages(page)
    await shoot(page, 'dashboard-albums')

    // A second album, deleted again.
    await page.fill('#album-title', 'Scratch')
    await page.click('#album-create button[type="submit"]')
    await page.waitForFunction(() => document.querySelectorAll('#album-list [data-album]').length === 2)
    page.once('dialog', (dialog) => dialog.accept())
    await page.click('#album-list [data-album]:has-text("Scratch") button:has-text("Delete")')
    await page.waitForFunction(() => document.querySelectorAll('#album-list [data-album]').length === 1)
    expect((await t.json('/api/albums', { headers: bearer() })).body.albums).toHaveLength(1)
    expectClean(p)
  })

  test("API keys: an existing key's config for uploads into an album; revoking the key ends it", async () => {
    await tab('keys')
    const albumId = (await t.json('/api/albums', { headers: bearer() })).body.albums[0].id
    await page.click('#key-list [data-key] button:has-text("Uploader configs")')
    await page.fill('.key-configs input[type="password"]', apiKey)
    await page.selectOption('.key-configs select[name="album"]', albumId)
    expect(await page.textContent('.key-configs select[name="album"] option:checked')).toBe('Summer 2026')
    const shell = await download('.key-configs [data-client="shell"]')
    expect(shell.text).toContain(`--form-string 'album=${albumId}'`)
    expect(shell.text).toContain(`API_KEY='${apiKey}'`)

    let asked = ''
    page.once('dialog', (dialog) => {
      asked = `${dialog.type()}: ${dialog.message()}`
      return dialog.accept()
    })
    await page.click('#key-list [data-key] button:has-text("Revoke")')
    await page.waitForFunction(() => document.getElementById('key-list')!.textContent === 'No API keys yet.')
    expect(asked).toBe('confirm: Revoke the key “ShareX laptop”? Tools using it stop working at once.')
    expect((await t.json('/api/v1/me', { headers: { 'x-api-key': apiKey } })).status).toBe(401)
    expect((await t.json('/api/keys', { headers: bearer() })).body.keys).toEqual([])
    expectClean(p)
  })

  test('embed profiles: the preview follows the form; create one (the 25 limit shown) and assign it to an image', async () => {
    await tab('embeds')
    expect(await page.textContent('#embed-count')).toBe('0 of 25 profiles used.')
    await page.fill('#embed-name', 'Holidays')
    await page.fill('#embed-title', '{filename} by {username}')
    await page.fill('#embed-description', 'Shot on {date}')
    await page.fill('#embed-site_name', 'My photos')
    await page.fill('#embed-color', '#ff0000')
    expect(await page.textContent('#ep-title')).toBe(`sunset.jpg by ${username}`)
    expect(await page.textContent('#ep-site')).toBe('My photos')
    expect(await page.textContent('#ep-desc')).toMatch(/^Shot on \d{4}-\d{2}-\d{2}$/)
    expect(await page.locator('#embed-preview').evaluate((el) => getComputedStyle(el).borderLeftColor)).toBe(
      'rgb(255, 0, 0)',
    )
    expect(await page.inputValue('#embed-color-picker')).toBe('#ff0000')
    await shoot(page, 'dashboard-embeds')
    await page.click('#embed-submit')
    await page.waitForSelector('#embed-list [data-profile]')
    expect(await page.textContent('#embed-count')).toBe('1 of 25 profiles used.')
    const profileId = (await page.getAttribute('#embed-list [data-profile]', 'data-profile'))!

    await tab('images')
    const target = uploaded.find((i) => i.filename === 'holiday-2.png')!
    await page.check(`#image-grid [data-id="${target.id}"] input[type="checkbox"]`)
    await page.selectOption('#bulk-embed', profileId)
    await page.click('[data-bulk="embed"]')
    await page.waitForFunction(() => document.getElementById('images-status')!.textContent!.includes('embed profile'))
    // The viewer page now unfurls with the profile.
    const viewer = parse(await (await t.fetch(`/i/${target.id}`)).text())
    const meta = (property: string) => viewer.querySelector(`meta[property="${property}"]`)?.getAttribute('content')
    expect(meta('og:title')).toBe(`holiday-2.png by ${username}`)
    expect(meta('og:site_name')).toBe('My photos')
    expect(viewer.querySelector('meta[name="theme-color"]')!.getAttribute('content')).toBe('#ff0000')

    // Editing fills the form; saving updates the profile.
    await tab('embeds')
    await page.click('#embed-list [data-profile] button:has-text("Edit")')
    expect(await page.inputValue('#embed-name')).toBe('Holidays')
    await page.fill('#embed-name', 'Holidays 2026')
    await page.click('#embed-submit')
    await page.waitForFunction(() =>
      document.querySelector('#embed-list [data-profile]')!.textContent!.includes('Holidays 2026'),
    )
    expectClean(p)
  })

  test('the 25-profile limit disables creating more', async () => {
    for (let i = 2; i <= 25; i++) {
      const res = await t.json('/api/embeds', {
        method: 'POST',
        headers: { ...bearer(), 'content-type': 'application/json' },
        body: JSON.stringify({ name: `p${i}` }),
      })
      expect(res.status).toBe(201)
    }
    await page.reload()
    await page.waitForSelector('[data-panel="embeds"]:not([hidden])')
    await page.waitForFunction(() => document.getElementById('embed-count')!.textContent === '25 of 25 profiles used.')
    expect(await page.isDisabled('#embed-submit')).toBe(true)
    expect(await page.textContent('#embed-form [data-form-error]')).toContain('the most allowed')
    expectClean(p)
  })

  test('usage: storage bar, limits and the upload window', async () => {
    await tab('usage')
    await page.waitForFunction(() => document.getElementById('storage-text')!.textContent!.includes('used'))
    const storage = await status('storage-text')
    // Verified: the 10 GB limit.
    expect(storage).toMatch(/^[\d.]+ KB of 10 GB used \(<1%\) · [\d.]+ GB left$/)
    expect(await page.locator('#storage-bar').evaluate((el: HTMLProgressElement) => [el.max, el.value > 0])).toEqual([
      10 * 1024 ** 3,
      true,
    ])
    expect(await page.textContent('#usage-stats')).toContain('50 MB')
    expect(await status('window-text')).toMatch(
      /^2 of 100 uploads used in this 1 hour window · 98 left · resets in \d+ min( \d+ s)?$/,
    )
    await shoot(page, 'dashboard-usage')
    expectClean(p)
  })

  test('settings: a private account', async () => {
    await tab('settings')
    expect(await page.isChecked('#private-account')).toBe(false)
    expect(await page.textContent('#email-status')).toContain('is verified')
    await page.check('#private-account')
    await page.click('#settings-form button[type="submit"]')
    await page.waitForFunction(() => document.getElementById('settings-status')!.textContent!.includes('Saved'))
    expect((await t.json('/api/auth/me', { headers: bearer() })).body.user.privateAccount).toBe(true)
    await shoot(page, 'dashboard-settings')
    // The upload page says so, and offers no public choice any more.
    await page.goto(`${t.url}/`)
    await page.waitForFunction(() =>
      document.getElementById('account-text')!.textContent!.includes('Your account is private'),
    )
    expect(await page.isChecked('input[name="visibility"][value="private"]')).toBe(true)
    expect(await page.isDisabled('input[name="visibility"][value="public"]')).toBe(true)
    await page.goto(`${t.url}/dashboard#settings`)
    await page.waitForSelector('[data-panel="settings"]:not([hidden])')
    expectClean(p)
  })

  test('delete from the dashboard', async () => {
    await tab('images')
    const target = uploaded[0]
    await page.check(`#image-grid [data-id="${target.id}"] input[type="checkbox"]`)
    page.once('dialog', (dialog) => dialog.accept())
    await page.click('[data-bulk="delete"]')
    await page.waitForFunction(() => document.querySelectorAll('#image-grid [data-id]').length === 1)
    expect((await t.json(`/api/v1/image/${target.id}`)).status).toBe(404)
    expectClean(p)
  })

  test('log out, then the dashboard sends to the login page, and logging in comes back', async () => {
    await page.click('#dash-user a[href="/logout"]')
    await page.waitForURL('**/logout')
    expect(await page.evaluate(() => localStorage.getItem('imghost.token'))).toBeNull()
    expect(await page.isVisible('.site-header a[href="/login"]')).toBe(true)
    expect(await page.isVisible('.site-header a[href="/dashboard"]')).toBe(false)
    await shoot(page, 'logout')

    await page.goto(`${t.url}/dashboard#albums`)
    await page.waitForURL('**/login?next=*')
    expect(decodeURIComponent(new URL(page.url()).searchParams.get('next')!)).toBe('/dashboard#albums')
    await page.fill('#login-username', username)
    await page.fill('#login-password', 'wrong password')
    await page.click('#login-form button[type="submit"]')
    await page.waitForSelector('#login-form [data-form-error]:not([hidden])')
    await shoot(page, 'login-error')
    await page.fill('#login-password', password)
    await Promise.all([page.waitForURL('**/dashboard#albums'), page.click('#login-form button[type="submit"]')])
    await page.waitForSelector('[data-panel="albums"]:not([hidden]) [data-album]')
    expectClean(p, [/status of 401/])
  })

  test('an expired or revoked session sends the dashboard back to the login page', async () => {
    const stale = await openPage(browser, t, '/')
    try {
      await stale.page.evaluate(() => localStorage.setItem('imghost.token', 'not.a.token'))
      await stale.page.goto(`${t.url}/dashboard`)
      await stale.page.waitForURL('**/login?next=*')
      expect(await stale.page.evaluate(() => localStorage.getItem('imghost.token'))).toBeNull()
      expectClean(stale, [/status of 401/])
    } finally {
      await stale.close()
    }
  })
})
