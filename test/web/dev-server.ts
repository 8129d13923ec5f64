// Scratch: not a test. Starts a server with sample data for manual screenshots.
import { startServer, uploadImage, send } from '../pages/support'
import { userWithKey } from '../helpers'
const t = await startServer({ SITE_NAME: 'Pixbin', ANON_UPLOADS_PER_WINDOW: '3' })
const owner = await userWithKey(t, 'alice')
for (let i = 0; i < 5; i++) await uploadImage(t, owner.keyHeader, {}, { width: 300 + i * 40, height: 200 })
await uploadImage(t, owner.keyHeader, { nsfw: 'true' })
const album = (await t.json('/api/albums', send('POST', { title: 'Trip', isPublic: true }, owner.bearer))).body.album
console.log(JSON.stringify({ url: t.url, token: owner.token, album: album.id }))
await new Promise(() => {})
