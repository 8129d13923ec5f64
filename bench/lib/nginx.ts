import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { freePort, spawnLogged, stopChild, waitHealthy } from './proc'

/**
 * nginx serving `filesDir` on 127.0.0.1 with a config written to a temp prefix; null when nginx is not installed.
 * One worker process, like the single-threaded servers it is compared with (wrk takes the other core).
 */
export async function startNginx(
  workDir: string,
  filesDir: string,
  probeName: string,
): Promise<{ url: string; child: Subprocess; stop(): Promise<void> } | null> {
  const nginx = Bun.which('nginx') ?? ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find((p) => Bun.file(p).size > 0)
  if (!nginx) return null
  const prefix = join(workDir, 'nginx')
  mkdirSync(join(prefix, 'tmp'), { recursive: true })
  // Workers may run as an unprivileged user: let them read the files.
  for (const dir of [workDir, filesDir]) chmodSync(dir, 0o755)
  const port = freePort()
  const conf = join(prefix, 'nginx.conf')
  writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 10000000;
  client_body_temp_path ${prefix}/tmp/body;
  proxy_temp_path ${prefix}/tmp/proxy;
  fastcgi_temp_path ${prefix}/tmp/fastcgi;
  uwsgi_temp_path ${prefix}/tmp/uwsgi;
  scgi_temp_path ${prefix}/tmp/scgi;
  types { image/jpeg jpg; image/webp webp; }
  server {
    listen 127.0.0.1:${port};
    root ${filesDir};
  }
}
`,
  )
  const child = spawnLogged([nginx, '-p', prefix, '-e', join(prefix, 'error.log'), '-c', conf], {
    log: join(prefix, 'stdout.log'),
  })
  const url = `http://127.0.0.1:${port}`
  await waitHealthy(`${url}/${probeName}`, performance.now(), 10_000, child)
  return { url, child, stop: () => stopChild(child) }
}
