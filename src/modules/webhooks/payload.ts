import type { Image } from '../../db/schema'
import { humanSize } from '../../lib/size'
import { iso } from '../../lib/time'
import type { ImageEventType } from '../images/events'
import { imageLinks, type LinkBase } from '../images/links'
import { IMAGE_SHAPES } from '../images/model'
import { imageFields, pickImage } from '../images/view'

/** Discord's own webhook URLs get a Discord-shaped body (an embed) instead of the generic one. */
const DISCORD = /^https:\/\/(?:(?:ptb|canary)\.)?discord(?:app)?\.com\/api(?:\/v\d+)?\/webhooks\//i
export const isDiscordUrl = (url: string) => DISCORD.test(url)

/** The image as every generic delivery describes it. */
export function imagePayload(base: LinkBase, image: Image) {
  return pickImage(imageFields(base, image), IMAGE_SHAPES.delivered)
}

export interface PayloadContext {
  base: LinkBase
  siteName: string
  siteColor: string
}

/**
 * The JSON body of one delivery. Generic: `{ id, event, timestamp, image }`. Discord: an embed with the viewer link,
 * the image itself (not for NSFW images, which Discord would show unblurred) and its size.
 */
export function deliveryBody(
  ctx: PayloadContext,
  url: string,
  delivery: { id: string; event: ImageEventType; at: number },
  image: Image,
): string {
  if (!isDiscordUrl(url)) {
    return JSON.stringify({
      id: delivery.id,
      event: delivery.event,
      timestamp: iso(delivery.at),
      image: imagePayload(ctx.base, image),
    })
  }
  const links = imageLinks(ctx.base, image)
  const color = parseInt(ctx.siteColor.slice(1), 16)
  const details = `${image.width}×${image.height} · ${humanSize(image.size)} · ${image.mime}`
  const embed =
    delivery.event === 'image.uploaded'
      ? {
          title: image.filename.slice(0, 256),
          url: links.viewer,
          description: image.nsfw ? `${details}\nMarked NSFW: open the link to view it.` : details,
          color,
          timestamp: iso(delivery.at),
          footer: { text: `${ctx.siteName} · ${image.visibility}` },
          ...(image.nsfw ? {} : { image: { url: links.url } }),
        }
      : {
          title: `Deleted: ${image.filename}`.slice(0, 256),
          description: `Image ${image.id} (${details}) was deleted.`,
          color,
          timestamp: iso(delivery.at),
          footer: { text: ctx.siteName },
        }
  return JSON.stringify({ username: ctx.siteName.slice(0, 80), embeds: [embed], allowed_mentions: { parse: [] } })
}
