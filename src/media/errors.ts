/** An image the user sent cannot be accepted; `message` is safe to show to the user. */
export class MediaError extends Error {
  override name = 'MediaError';
}
