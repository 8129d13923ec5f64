// Reference: a bare Elysia route doing one SQLite primary-key lookup and returning the row as JSON.
// Usage: bun bench/ref/elysia-sqlite.ts <port> <sqlite file>; reads the service's own database, read-only.
// bench/profile.ts uses the same app in process.
import { Database } from 'bun:sqlite'
import { Elysia } from 'elysia'

export function referenceApp(file: string) {
  const byId = new Database(file, { readonly: true }).query('SELECT * FROM images WHERE id = ?1')
  return new Elysia().get('/api/v1/image/:id', ({ params, set }) => {
    const row = byId.get(params.id)
    if (!row) {
      set.status = 404
      return { error: 'Not found' }
    }
    return { success: true, data: row }
  })
}

if (import.meta.main) {
  const [port, file] = process.argv.slice(2)
  referenceApp(file).listen({ hostname: '127.0.0.1', port: Number(port) })
  console.log(JSON.stringify({ listening: Number(port) }))
}
