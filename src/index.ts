import { ConfigError, loadConfig } from './config'
import { DataDirLockedError } from './db/lock'
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
    if (error instanceof DataDirLockedError) {
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
  console.log(JSON.stringify({ level: 'info', msg: 'shutting down', signal }))
  await server.stop()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
// Announced once a signal would shut it down cleanly: a supervisor (or a test) may send one as soon as it reads this.
console.log(JSON.stringify({ level: 'info', msg: 'listening', url: config.publicUrl, port: server.port }))
