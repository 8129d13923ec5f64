import type { Config } from '../../config'
import { html } from '../../web/html'
import type { PageRenderer } from '../../web/page'
import { MAX_BULK_EMBED, MAX_EMBED_PROFILES, PLACEHOLDERS } from '../embeds/model'
import { needsScript } from './account'
import {
  albumsPanel,
  embedsPanel,
  imagesPanel,
  keysPanel,
  securityPanel,
  settingsPanel,
  usagePanel,
} from './dashboard-panels'
import { listedShareCodes } from './share-codes'

const tabs = [
  ['images', 'Images'],
  ['albums', 'Albums'],
  ['keys', 'API keys'],
  ['embeds', 'Embeds'],
  ['usage', 'Usage'],
  ['settings', 'Settings'],
  ['security', 'Security'],
] as const

/** The dashboard: a client-side app over the JSON API (dashboard.js and dashboard-<tab>.js); this is its static markup. */
export function renderDashboard(renderer: PageRenderer, config: Config): Response {
  const body = html`<div class="dashboard" id="dashboard" data-site-name="${config.site.name}" data-site-color="${config.site.color}" data-public-url="${config.site.publicUrl}" data-max-embeds="${MAX_EMBED_PROFILES}" data-max-bulk="${MAX_BULK_EMBED}" data-placeholders="${PLACEHOLDERS.join(' ')}" data-share-codes="${listedShareCodes(config.site.cdnUrl)}">
<div class="dash-head">
<h1>Dashboard</h1>
<p class="muted" id="dash-user">Loading your account…</p>
</div>
${needsScript}
<p class="banner" id="dash-banner" hidden></p>
<nav class="tabs" aria-label="Dashboard sections">
${tabs.map(([id, label]) => html`<a href="#${id}" id="tab-${id}" data-tab="${id}">${label}</a>`)}
</nav>

${imagesPanel(config)}

${albumsPanel}

${keysPanel}

${embedsPanel(config)}

${usagePanel}

${settingsPanel}

${securityPanel}
</div>`

  return renderer.respond({
    title: `Dashboard · ${config.site.name}`,
    body,
    // The shared part first: each tab's script registers with it.
    scripts: [
      'dashboard.js',
      'dashboard-images.js',
      'dashboard-albums.js',
      'dashboard-keys.js',
      'dashboard-embeds.js',
      'dashboard-usage.js',
      'dashboard-settings.js',
      'passkeys.js',
      'dashboard-security.js',
      'dashboard-totp.js',
      'dashboard-sessions.js',
    ],
    bodyClass: 'dashboard-page',
    noindex: true,
  })
}
