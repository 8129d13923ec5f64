/**
 * `npm run test:s3`: the whole suite again with STORAGE=s3, against a local S3-protocol server (test/s3-server.ts)
 * started here on loopback. Arguments go to `bun test` (e.g. a path filter). Each test server gets its own S3_PREFIX
 * (test/helpers.ts), so tests never see each other's objects.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { spawnS3Server } from './s3-server'

const server = await spawnS3Server()
console.error(`[test:s3] S3 server on ${server.endpoint}, bucket ${server.bucket}`)
let code = 1
try {
  const proc = Bun.spawn([process.execPath, 'test', '--timeout', '60000', ...process.argv.slice(2)], {
    cwd: join(import.meta.dir, '..'),
    env: { ...process.env, ...server.env },
    stdio: ['inherit', 'inherit', 'inherit'],
  })
  code = await proc.exited
} finally {
  await server.kill()
  rmSync(server.dir, { recursive: true, force: true })
}
process.exit(code)
