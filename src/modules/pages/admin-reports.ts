import type { Config } from '../../config'
import { html } from '../../web/html'
import type { PageRenderer } from '../../web/page'
import { renderAdminList } from './admin-list'

/** `/admin/reports`: the abuse reports, filled from GET /api/admin/reports and acted on through the admin endpoints. */
export const renderAdminReports = (pages: PageRenderer, config: Pick<Config, 'site'>) =>
  renderAdminList(pages, config, {
    name: 'reports',
    title: 'Abuse reports',
    path: '/admin/reports',
    intro: html`<p class="muted"><a href="/admin/blocks">Blocked pictures</a></p>
<div class="toolbar" role="group" aria-label="Status">
<button type="button" data-status-filter="open" aria-pressed="true">Open</button>
<button type="button" data-status-filter="dismissed" aria-pressed="false">Dismissed</button>
<button type="button" data-status-filter="actioned" aria-pressed="false">Actioned</button>
</div>`,
    script: 'admin-reports.js',
  })
