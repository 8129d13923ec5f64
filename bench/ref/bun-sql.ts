// Reference: a bare Bun.serve route doing one PostgreSQL primary-key lookup through Bun.SQL (its default pool, the
// statement prepared by the driver) and returning the row as JSON: what the service's metadata route is held to when
// it runs on PostgreSQL (bench/postgres.ts).
// Usage: bun bench/ref/bun-sql.ts <port> <postgres url>; reads the service's own database.
import { SQL } from 'bun'

export function referenceServer(port: number, url: string) {
  const sql = new SQL(url)
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port,
    routes: {
      '/api/v1/image/:id': async (req) => {
        const [row] = await sql`SELECT * FROM images WHERE id = ${req.params.id}`
        if (!row) return Response.json({ error: 'Not found' }, { status: 404 })
        return Response.json({ success: true, data: row })
      },
    },
    fetch: () => new Response('Not found', { status: 404 }),
  })
  return { server, sql }
}

if (import.meta.main) {
  const [port, url] = process.argv.slice(2)
  if (!port || !url) throw new Error('usage: bun bench/ref/bun-sql.ts <port> <postgres url>')
  referenceServer(Number(port), url)
  console.log(JSON.stringify({ listening: Number(port) }))
}
