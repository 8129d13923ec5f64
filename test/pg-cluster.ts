/**
 * A throwaway PostgreSQL cluster for tests: initdb into a fresh temp directory, started on 127.0.0.1 at a free port
 * with its unix sockets in that directory, trust authentication, fsync off (nothing here must survive a crash).
 * UTF8 with the C.UTF-8 locale: search's normalization (migrations-pg/0001_search.sql) needs a UTF8 database.
 */
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { freePort } from './helpers'

export interface PgCluster {
  /** The superuser's URL to the `postgres` database. */
  url: string
  port: number
  stop(): Promise<void>
}

/** Where initdb and pg_ctl are: PATH, else `pg_config --bindir`, else the newest /usr/lib/postgresql/<n>/bin. */
export function pgBinDir(): string {
  const onPath = Bun.which('initdb')
  if (onPath) return join(onPath, '..')
  const pgConfig = Bun.which('pg_config')
  if (pgConfig) {
    const dir = Bun.spawnSync([pgConfig, '--bindir']).stdout.toString().trim()
    if (existsSync(join(dir, 'initdb'))) return dir
  }
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  if (versions.length === 0) throw new Error('PostgreSQL binaries not found (install Debian package postgresql)')
  return join(root, versions[0], 'bin')
}

/** initdb refuses to run as root: then the cluster runs as the `postgres` user, which must own its directory. */
function asClusterUser(): { prefix: string[]; uid?: number; gid?: number } {
  if (userInfo().uid !== 0) return { prefix: [] }
  const id = (flag: string) => {
    const out = Bun.spawnSync(['id', flag, 'postgres'])
    if (out.exitCode !== 0) throw new Error('running as root, and there is no postgres user to run the cluster as')
    return Number(out.stdout.toString().trim())
  }
  return { prefix: ['runuser', '-u', 'postgres', '--'], uid: id('-u'), gid: id('-g') }
}

function run(cmd: string[]) {
  const out = Bun.spawnSync(cmd, { stdout: 'pipe', stderr: 'pipe' })
  if (out.exitCode !== 0) throw new Error(`${cmd.join(' ')} failed: ${out.stderr.toString()}${out.stdout.toString()}`)
}

export async function startPgCluster(): Promise<PgCluster> {
  const bin = pgBinDir()
  const user = asClusterUser()
  const dir = mkdtempSync(join(tmpdir(), 'imghost-pg-'))
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid!)
  const data = join(dir, 'data')
  const port = freePort()
  try {
    run([
      ...user.prefix,
      join(bin, 'initdb'),
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ])
    const options = [
      `-p ${port}`,
      "-c listen_addresses='127.0.0.1'",
      `-c unix_socket_directories='${dir}'`,
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      // A test file starts many servers, each with a pool of its own.
      '-c max_connections=300',
    ].join(' ')
    run([...user.prefix, join(bin, 'pg_ctl'), '-D', data, '-l', join(dir, 'log'), '-w', '-o', options, 'start'])
  } catch (err) {
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      Bun.spawnSync([...user.prefix, join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop'])
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
