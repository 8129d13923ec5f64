import type { Config } from '../../config'
import { html } from '../../web/html'
import type { PageRenderer } from '../../web/page'

/**
 * `/admin/reports`: the moderation queue. The page is a static shell; admin-reports.js fills it from
 * GET /api/admin/reports with the session's JWT (localStorage `imghost.token`) and acts through the admin endpoints,
 * so the page itself reveals nothing to non-admins.
 */
export function renderAdminReports(pages: PageRenderer, config: Pick<Config, 'siteName'>): Response {
  const body = html`<section class="admin-reports" data-admin-reports>
<h1>Abuse reports</h1>
<p class="muted" data-reports-signed-out hidden>This page is for administrators. <a href="/login?next=/admin/reports">Log in</a> with an admin account.</p>
<div data-reports-app hidden>
<p class="muted"><a href="/admin/blocks">Blocked pictures</a></p>
<div class="toolbar" role="group" aria-label="Status">
<button type="button" data-status-filter="open" aria-pressed="true">Open</button>
<button type="button" data-status-filter="dismissed" aria-pressed="false">Dismissed</button>
<button type="button" data-status-filter="actioned" aria-pressed="false">Actioned</button>
</div>
<p class="report-status" role="status" data-reports-message></p>
<ol class="report-list" data-reports-list></ol>
<nav class="pager" aria-label="Pages"><button type="button" class="secondary" data-page-prev disabled>Previous</button><span data-page-label></span><button type="button" class="secondary" data-page-next disabled>Next</button></nav>
</div>
<noscript><p>This page needs JavaScript.</p></noscript>
</section>`
  return pages.respond({
    title: `Abuse reports · ${config.siteName}`,
    body,
    noindex: true,
    scripts: ['admin-reports.js'],
    styles: ['reports.css'],
    bodyClass: 'admin-reports-page',
  })
}
