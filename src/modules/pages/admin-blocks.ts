import type { Config } from '../../config'
import { html } from '../../web/html'
import type { PageRenderer } from '../../web/page'

/**
 * `/admin/blocks`: the blocklist. A static shell, as `/admin/reports`: admin-blocks.js fills it from
 * GET /api/admin/blocks with the session's JWT and lifts blocks through DELETE /api/admin/blocks/:id.
 */
export function renderAdminBlocks(pages: PageRenderer, config: Pick<Config, 'siteName'>): Response {
  const body = html`<section class="admin-reports" data-admin-blocks>
<h1>Blocked pictures</h1>
<p class="muted" data-blocks-signed-out hidden>This page is for administrators. <a href="/login?next=/admin/blocks">Log in</a> with an admin account.</p>
<div data-blocks-app hidden>
<p class="muted">Uploads of these pictures, and of close copies of them, are refused. <a href="/admin/reports">Abuse reports</a></p>
<p class="report-status" role="status" data-blocks-message></p>
<ol class="report-list" data-blocks-list></ol>
<nav class="pager" aria-label="Pages"><button type="button" class="secondary" data-page-prev disabled>Previous</button><span data-page-label></span><button type="button" class="secondary" data-page-next disabled>Next</button></nav>
</div>
<noscript><p>This page needs JavaScript.</p></noscript>
</section>`
  return pages.respond({
    title: `Blocked pictures · ${config.siteName}`,
    body,
    noindex: true,
    scripts: ['admin-blocks.js'],
    styles: ['reports.css'],
    bodyClass: 'admin-reports-page',
  })
}
