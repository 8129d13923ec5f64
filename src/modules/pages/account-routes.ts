import { Elysia, t } from 'elysia'
import type { Config } from '../../config'
import type { PageRenderer } from '../../web/page'
import { renderForgot, renderLogin, renderLogout, renderRegister, renderReset, renderVerify } from './account'
import { renderAdminBlocks } from './admin-blocks'
import { renderAdminReports } from './admin-reports'
import { renderDashboard } from './dashboard'
import { hidden } from './model'

/** The account pages, the dashboard and the admin pages: shells the JSON API fills from their scripts. */
export function accountPageRoutes(renderer: PageRenderer, config: Config) {
  return new Elysia({ name: 'module-pages-account' })
    .get('/login', ({ query }) => renderLogin(renderer, config, query.next), {
      query: t.Object({ next: t.Optional(t.String()) }),
      ...hidden,
    })
    .get('/register', () => renderRegister(renderer, config), hidden)
    .get('/verify', () => renderVerify(renderer, config), hidden)
    .get('/forgot', () => renderForgot(renderer, config), hidden)
    .get('/reset', () => renderReset(renderer, config), hidden)
    .get('/logout', () => renderLogout(renderer, config), hidden)
    .get('/dashboard', () => renderDashboard(renderer, config), hidden)
    .get('/admin/reports', () => renderAdminReports(renderer, config), hidden)
    .get('/admin/blocks', () => renderAdminBlocks(renderer, config), hidden)
}
