/** The app's routes as Elysia lists them (`app.routes`): a method and a path pattern (`:param`, `*`). */
export interface RouteLike {
  method: string
  path: string
}

/** A path pattern as a regular expression: `:name` is one segment, `*` the rest. */
export function patternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) =>
      segment === '*' ? '.*' : segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/')
  return new RegExp(`^${source}$`)
}

/** Methods in the order an `Allow` header lists them. */
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/**
 * The methods the app answers on a path, for the 405 of a known path asked with another method (RFC 9110: its `Allow`
 * header lists them). A GET route answers HEAD too. Empty: no route has this path, a plain 404.
 */
export function allowedMethods(routes: RouteLike[]): (path: string) => string[] {
  const byPattern = new Map<string, Set<string>>()
  for (const route of routes) {
    // A wildcard route is a fallback (the legacy links' `GET /*` answers any path, mostly with a 404): it makes no
    // path known.
    if (route.path.includes('*')) continue
    const methods = byPattern.get(route.path) ?? new Set<string>()
    methods.add(route.method.toUpperCase())
    if (route.method.toUpperCase() === 'GET') methods.add('HEAD')
    byPattern.set(route.path, methods)
  }
  const table = [...byPattern].map(([path, methods]) => ({ pattern: patternOf(path), methods }))
  return (path) => {
    const allowed = new Set<string>()
    for (const { pattern, methods } of table) if (pattern.test(path)) for (const m of methods) allowed.add(m)
    return ORDER.filter((m) => allowed.has(m)).concat([...allowed].filter((m) => !ORDER.includes(m)).sort())
  }
}

/** Until the app's routes are known (createApp sets them): no path is known. */
export const noRoutes = (_path: string): string[] => []
