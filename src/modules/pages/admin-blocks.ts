import type { Config } from '../../config'
import { html } from '../../web/html'
import type { PageRenderer } from '../../web/page'
import { renderAdminList } from './admin-list'

/** `/admin/blocks`: the blocklist, filled from GET /api/admin/blocks; blocks are lifted through DELETE. */
export const renderAdminBlocks = (pages: PageRenderer, config: Pick<Config, 'site'>) =>
  renderAdminList(pages, config, {
    name: 'blocks',
    title: 'Blocked pictures',
    path: '/admin/blocks',
    intro: html`<p class="muted">Uploads of these pictures, and of close copies of them, are refused. <a href="/admin/reports">Abuse reports</a></p>`,
    script: 'admin-blocks.js',
  })
