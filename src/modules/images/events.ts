import type { Image } from '../../db/schema'

export type ImageEventType = 'image.uploaded' | 'image.deleted'
export const IMAGE_EVENTS: readonly ImageEventType[] = ['image.uploaded', 'image.deleted']

/**
 * The one hook the images feature calls when an image is stored or removed (webhooks listen to it).
 * `emit` must return at once and never throw: it runs on the upload and delete paths.
 */
export interface ImageEvents {
  emit(type: ImageEventType, image: Image): void
}

export const noImageEvents: ImageEvents = { emit() {} }
