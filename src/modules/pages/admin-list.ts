import type { Config } from '../../config'
import { html, type SafeHtml } from '../../web/html'
import type { PageRenderer } from '../../web/page'

/** One admin list page: its `data-*` name, heading, path (for the sign-in link), what stands above the list, script. */
interface AdminList {
  name: 'reports' | 'blocks'
  title: string
  path: string
  intro: SafeHtml
  script: string
}

/**
 * The static shell of an admin list (`/admin/reports`, `/admin/blocks`): its script fills it through `adminList` in
 * site.js with the session's JWT, so the page itself reveals nothing to non-admins.
 */
export function renderAdminList(pages: PageRenderer, config: Pick<Config, 'site'>, list: AdminList): Response {
  const { name, title, path, intro } = list
  const body = html`<section class="admin-reports" data-admin-${name}>
<h1>${title}</h1>
<p class="muted" data-${name}-signed-out hidden>This page is for administrators. <a href="/login?next=${path}">Log in</a> with an admin account.</p>
<div data-${name}-app hidden>
${intro}
<p class="report-status" role="status" data-${name}-message></p>
<ol class="report-list" data-${name}-list></ol>
<nav class="pager" aria-label="Pages"><button type="button" class="secondary" data-page-prev disabled>Previous</button><span data-page-label></span><button type="button" class="secondary" data-page-next disabled>Next</button></nav>
</div>
<noscript><p>This page needs JavaScript.</p></noscript>
</section>`
  return pages.respond({
    title: `${title} · ${config.site.name}`,
    body,
    noindex: true,
    scripts: [list.script],
    styles: ['reports.css'],
    bodyClass: 'admin-reports-page',
  })
}
