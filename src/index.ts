import { ConfigError, loadConfig } from './config'
import { DataDirLockedError } from './db/lock'
import { log } from './log'
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
log.info('listening', { url: config.site.publicUrl, port: server.port })
