import { Elysia, t } from 'elysia'
import type { Config } from '../../config'
import type { authGuard } from '../../http/auth'
import { errors } from '../../http/errors'
import { Visibility } from '../../http/schemas'
import { attachmentName, type ClientContext, sharexConfig, shellScript } from './service'

const ClientQuery = t.Object({
  visibility: t.Optional(Visibility),
  album: t.Optional(
    t.String({ minLength: 1, maxLength: 100, description: 'Album id, or a folder name created on first use' }),
  ),
})

const SharexConfig = t.Object(
  {
    Version: t.String(),
    Name: t.String(),
    DestinationType: t.Literal('ImageUploader', {
      description: 'What ShareX may send to it: images only (the API refuses other files)',
    }),
    RequestMethod: t.Literal('POST'),
    RequestURL: t.String({ format: 'uri' }),
    Headers: t.Object({ 'X-API-Key': t.String() }),
    Body: t.Literal('MultipartFormData'),
    Arguments: t.Optional(
      t.Record(t.String(), t.String(), { description: 'Extra multipart fields: visibility, album' }),
    ),
    FileFormName: t.Literal('file'),
    URL: t.String(),
    ThumbnailURL: t.String(),
    DeletionURL: t.String(),
    ErrorMessage: t.String(),
  },
  { description: 'A ShareX custom uploader (.sxcu), as an attachment' },
)

const ShellScript = t.String({ description: 'A POSIX sh script (text/x-shellscript), as an attachment' })

const SCRIPT_SUMMARY =
  'holds your API key; uploads with curl, copies the direct link (wl-copy, xclip, xsel or pbcopy) and prints it'

/**
 * Uploader configurations for the calling key. The secret is not stored (only its hash), so the configuration
 * carries the caller's own X-API-Key value.
 */
export function clientsModule(deps: { config: Config; guard: ReturnType<typeof authGuard> }) {
  const { config } = deps
  const context = (apiKey: string, username: string): ClientContext => ({
    publicUrl: config.site.publicUrl,
    siteName: config.site.name,
    apiKey,
    username,
  })
  const script =
    (flavour: 'shell' | 'flameshot', suffix: string) =>
    ({
      headers,
      user,
      query,
      set,
    }: {
      headers: Record<string, string | undefined>
      user: { username: string }
      query: typeof ClientQuery.static
      set: { headers: Record<string, unknown> }
    }) => {
      set.headers['content-type'] = 'text/x-shellscript; charset=utf-8'
      set.headers['content-disposition'] = `attachment; filename="${attachmentName(config.site.name, suffix)}"`
      set.headers['cache-control'] = 'no-store'
      return shellScript(context(headers['x-api-key']!, user.username), query, flavour)
    }

  return new Elysia({ name: 'module-clients' })
    .use(deps.guard)
    .group('/api/v1/clients', { detail: { tags: ['Uploader clients'] } }, (app) =>
      app
        .get(
          '/sharex',
          ({ headers, user, query, set }) => {
            set.headers['content-disposition'] = `attachment; filename="${attachmentName(config.site.name, '.sxcu')}"`
            set.headers['cache-control'] = 'no-store'
            return sharexConfig(context(headers['x-api-key']!, user.username), query)
          },
          {
            apiKey: true,
            query: ClientQuery,
            response: { 200: SharexConfig, ...errors(400, 401, 403) },
            detail: {
              summary: 'ShareX custom uploader (.sxcu) for your API key; visibility and album become upload arguments',
            },
          },
        )
        .get('/shell', script('shell', '-upload.sh'), {
          apiKey: true,
          query: ClientQuery,
          response: { 200: ShellScript, ...errors(400, 401, 403) },
          detail: { summary: `Shell upload script: \`sh it FILE\`; ${SCRIPT_SUMMARY}` },
        })
        .get('/flameshot', script('flameshot', '-flameshot.sh'), {
          apiKey: true,
          query: ClientQuery,
          response: { 200: ShellScript, ...errors(400, 401, 403) },
          detail: { summary: `Flameshot script: captures with \`flameshot gui --raw\` and uploads; ${SCRIPT_SUMMARY}` },
        }),
    )
}
