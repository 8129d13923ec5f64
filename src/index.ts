import { ConfigError, loadConfig } from './config'
import { DataDirLockedError } from './db/lock'
import { log, setLogFormat } from './log'
import { startServer } from './server'

function readConfig() {
  try {
    return loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message)
      process.exit(1)
    }
    throw error
  }
}

async function start() {
  try {
    return await startServer(config)
  } catch (error) {
    // A file the configuration names (LEGACY_REDIRECTS, ROBOTS_TXT) is read by its feature before anything is opened.
    if (error instanceof DataDirLockedError || error instanceof ConfigError) {
      console.error(error.message)
      process.exit(1)
    }
    throw error
  }
}

const config = readConfig()
setLogFormat(config.http.logFormat)
const server = await start()

let stopping = false
async function shutdown(signal: string) {
  if (stopping) return
  stopping = true
  log.info('shutting down', { signal })
  await server.stop()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
// Announced only once the handlers are in: a supervisor that stops the server as soon as it reads this line gets a
// clean shutdown, not the default SIGTERM death (exit 143).
await announce()

/** The start line: where to open the site and, while no account is an admin, how to make the first one. */
async function announce() {
  const local = `http://localhost:${server.port}`
  // PUBLIC_URL, when it names another host than this one (unset, it is localhost with PORT, which may be 0).
  const publicUrl = new URL(config.site.publicUrl).hostname === 'localhost' ? null : config.site.publicUrl
  const where = publicUrl ? `${local} (public address ${publicUrl})` : local
  // Unknown (undefined) if a signal closed the database meanwhile: the line then gives no hint.
  const admin = await server.services.auth.hasAdmin().catch(() => undefined)
  // The compiled binary is its own CLI (src/binary.ts); from source the CLI is the package's `cli` script.
  const cli = import.meta.path.startsWith('/$bunfs/') ? process.execPath : 'bun run cli'
  const hint =
    admin !== false
      ? undefined
      : `no admin yet: run \`${cli} create-admin <username> <email> <password>\` (or start with ADMIN_USERNAME, ADMIN_EMAIL and ADMIN_PASSWORD set)`
  const fields = { url: config.site.publicUrl, port: server.port, admin, ...(hint ? { hint } : {}) }
  log.info('listening', fields, `listening on ${where}${hint ? `, ${hint}` : ''}`)
}
