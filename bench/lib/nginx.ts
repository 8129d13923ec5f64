import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { freePort, spawnLogged, stopChild, waitHealthy } from './proc'

/** The nginx binary: PATH, else the usual places; undefined when it is not installed. */
const nginxBinary = () =>
  Bun.which('nginx') ?? ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find((p) => Bun.file(p).size > 0)

/** nginx's temp paths inside `prefix` (its compiled-in defaults may not be writable). */
const tempPaths = (prefix: string) =>
  ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((kind) => `  ${kind}_temp_path ${prefix}/tmp/${kind === 'client_body' ? 'body' : kind};`)
    .join('\n')

/**
 * Writes nginx's config into `prefix` (the settings both uses share, then `http`: the rest of its http block) and
 * starts it in the foreground.
 */
function runNginx(nginx: string, prefix: string, http: string, workers = 1): Subprocess {
  mkdirSync(join(prefix, 'tmp'), { recursive: true })
  const conf = join(prefix, 'nginx.conf')
  writeFileSync(
    conf,
    `worker_processes ${workers};
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 10000000;
${tempPaths(prefix)}
${http}
}
`,
  )
  return spawnLogged([nginx, '-p', prefix, '-e', join(prefix, 'error.log'), '-c', conf], {
    log: join(prefix, 'stdout.log'),
  })
}

/**
 * nginx serving `filesDir` on 127.0.0.1 with a config written to a temp prefix; null when nginx is not installed.
 * One worker process, like the single-threaded servers it is compared with (wrk takes the other core).
 */
export async function startNginx(
  workDir: string,
  filesDir: string,
  probeName: string,
): Promise<{ url: string; child: Subprocess; stop(): Promise<void> } | null> {
  const nginx = nginxBinary()
  if (!nginx) return null
  // Workers may run as an unprivileged user: let them read the files.
  for (const dir of [workDir, filesDir]) chmodSync(dir, 0o755)
  const port = freePort()
  const child = runNginx(
    nginx,
    join(workDir, 'nginx'),
    `  sendfile on;
  tcp_nopush on;
  types { image/jpeg jpg; image/webp webp; }
  server {
    listen 127.0.0.1:${port};
    root ${filesDir};
  }`,
  )
  const url = `http://127.0.0.1:${port}`
  await waitHealthy(`${url}/${probeName}`, performance.now(), 10_000, child)
  return { url, child, stop: () => stopChild(child) }
}

/**
 * nginx as a reverse proxy on 127.0.0.1: one listener per entry of `upstreams`, each proxying to its backends (base
 * URLs, `http://127.0.0.1:<port>`) round-robin over kept-alive HTTP/1.1 connections; null when nginx is not installed.
 * All listeners are in one nginx (same workers), so a figure through one and a figure through another pay the same
 * proxy. `probePath` must answer 200 through every listener before this returns.
 */
export async function startNginxProxy(
  workDir: string,
  upstreams: Record<string, string[]>,
  opts: { probePath: string; workers?: number; name?: string },
): Promise<{ urls: Record<string, string>; child: Subprocess; stop(): Promise<void> } | null> {
  const nginx = nginxBinary()
  if (!nginx) return null
  chmodSync(workDir, 0o755)
  const urls: Record<string, string> = {}
  const blocks = Object.entries(upstreams).map(([name, backends], i) => {
    const port = freePort()
    urls[name] = `http://127.0.0.1:${port}`
    const servers = backends.map((b) => `    server ${new URL(b).host};`).join('\n')
    return `  upstream backend${i} {
${servers}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backend${i};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
    }
  }`
  })
  const child = runNginx(nginx, join(workDir, opts.name ?? 'nginx-proxy'), blocks.join('\n'), opts.workers)
  for (const url of Object.values(urls)) await waitHealthy(url + opts.probePath, performance.now(), 10_000, child)
  return { urls, child, stop: () => stopChild(child) }
}
