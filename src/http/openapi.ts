import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import { dirname, join } from 'node:path'

const swaggerUiDir = dirname(Bun.resolveSync('swagger-ui-dist/package.json', import.meta.dir))
const ASSETS = '/swagger/assets'

/** OpenAPI document at /swagger/json and Swagger UI at /swagger, its assets served from the installed package. */
export function apiDocs(siteName: string) {
  return new Elysia({ name: 'api-docs' })
    .use(
      openapi({
        path: '/swagger',
        specPath: '/swagger/json',
        provider: 'swagger-ui',
        swagger: { cdn: `${ASSETS}/swagger-ui-bundle.js`, theme: `${ASSETS}/swagger-ui.css` },
        exclude: { paths: [/^\/swagger/, /^\/cdn/, /^\/assets/] },
        documentation: {
          info: {
            title: `${siteName} API`,
            version: '1.0.0',
            description: 'Image hosting: uploads, links, albums and embed profiles. Errors are always `{ "error": "..." }`.',
          },
          components: {
            securitySchemes: {
              apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
              bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
              deleteToken: { type: 'apiKey', in: 'header', name: 'X-Delete-Token', description: 'Returned with each anonymous upload' },
            },
          },
        },
      }),
    )
    .get('/swagger/assets/:file', ({ params, set }) => {
      // Only the two files the UI page loads; anything else is unknown.
      if (params.file !== 'swagger-ui-bundle.js' && params.file !== 'swagger-ui.css') {
        set.status = 404
        return { error: 'Not found' }
      }
      return Bun.file(join(swaggerUiDir, params.file))
    }, { detail: { hide: true } })
}
