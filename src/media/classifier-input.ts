/**
 * The pixels media cuts for the NSFW classifier (src/moderation): a square of IMAGE_SIDE pixels, RGB, row-major, what
 * the model takes. Media owns the form of what it makes; the classifier reads it from here.
 */
export const IMAGE_SIDE = 224
export const IMAGE_BYTES = IMAGE_SIDE * IMAGE_SIDE * 3
