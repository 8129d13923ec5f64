/** An image the user sent cannot be accepted; `message` is safe to show to the user. */
export class MediaError extends Error {
  override name = 'MediaError'
}

export function exceedsMessage(maxPixels: number): string {
  return `Image exceeds ${Number((maxPixels / 1e6).toFixed(2))} megapixels`
}
