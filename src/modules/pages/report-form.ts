import { html } from '../../web/html'
import { DETAILS_MAX } from '../reports/model'

/** The report reasons as offered on the viewer page, in the order of the API's enum. */
const REASONS = [
  ['illegal', 'Illegal content'],
  ['nsfw', 'Mature content that is not marked as such'],
  ['copyright', 'Copyright infringement'],
  ['spam', 'Spam'],
  ['other', 'Something else'],
] as const

/**
 * The "Report this image" disclosure of the viewer page: a form that report.js sends to POST /api/reports.
 * It works as a plain <details> without scripts; only sending needs report.js.
 */
export function reportForm(imageId: string) {
  return html`<details class="report-box">
<summary>Report this image</summary>
<form class="report-form" data-report-image="${imageId}">
<div class="field"><label for="report-reason">Reason</label>
<select id="report-reason" name="reason" required>
${REASONS.map(([value, label]) => html`<option value="${value}">${label}</option>\n`)}</select></div>
<div class="field"><label for="report-details">Details (optional)</label>
<textarea id="report-details" name="details" maxlength="${DETAILS_MAX}" rows="3"></textarea></div>
<button type="submit">Send report</button>
<p class="report-status" role="status" data-report-status hidden></p>
</form>
</details>`
}
