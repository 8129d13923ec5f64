import type { Image } from '../../../db/schema'
import type { WindowState } from '../../../limits/windows'
import type { ImageEvents } from '../events'
import type { ImageService } from '../service'

/** Step 6, answer: after the commit, tells the listeners and the metrics, and gives the answer every door sends. */

type UploadedView = ReturnType<ImageService['uploadedView']>

export interface AnswerDeps {
  /** Gives the answer's view of each stored image. */
  images: Pick<ImageService, 'uploadedView'>
  events: ImageEvents
  metrics?: { uploaded(count: number, bytes: number): void }
}

export function answer(
  deps: AnswerDeps,
  committed: { rows: Image[]; window: WindowState; deleteTokens: string[] },
  duplicates: (string | undefined)[],
) {
  const { rows, window, deleteTokens } = committed
  // Listeners (webhooks) only queue work: they never hold the answer up.
  for (const row of rows) deps.events.emit('image.uploaded', row)
  deps.metrics?.uploaded(
    rows.length,
    rows.reduce((sum, row) => sum + row.size, 0),
  )
  // Each image as the answer shows it (its delete page link included): the plain tokens exist only here.
  const views = rows.map((row, i) => deps.images.uploadedView(row, deleteTokens[i], duplicates[i]))
  return { body: uploadAnswer(views), views, window, rows }
}

/** The answer of every upload door (multipart or tus): one file a flat object, several `{ success, images }`. */
function uploadAnswer(views: UploadedView[]) {
  return views.length === 1 ? { success: true as const, ...views[0] } : { success: true as const, images: views }
}
