/**
 * User agents of link unfurlers (chat apps fetching a preview) and search crawlers: their fetches are not views, so
 * they are not counted (docs/api.md: Reading, views). A name matches anywhere in the User-Agent header, case-insensitively.
 */
export const CRAWLER_AGENTS = [
  // Chat and social unfurlers
  'Discordbot',
  'Twitterbot',
  'Slackbot',
  'Slack-ImgProxy',
  'TelegramBot',
  'facebookexternalhit',
  'Facebot',
  'WhatsApp',
  'LinkedInBot',
  'SkypeUriPreview',
  'redditbot',
  'Mastodon',
  'Pinterestbot',
  'vkShare',
  'Iframely',
  'Embedly',
  'MicrosoftPreview',
  // Search and other crawlers
  'Googlebot',
  'Google-InspectionTool',
  'GoogleOther',
  'bingbot',
  'Applebot',
  'DuckDuckBot',
  'YandexBot',
  'Baiduspider',
  'Yeti',
  'SeznamBot',
  'PetalBot',
  'Bytespider',
  'GPTBot',
  'ClaudeBot',
  'CCBot',
] as const

// The names are letters, digits and dashes: none is special in a pattern.
const CRAWLER = new RegExp(CRAWLER_AGENTS.join('|'), 'i')

/** Whether a User-Agent header names a known unfurler or crawler. */
export const isCrawler = (userAgent: string | null | undefined) => !!userAgent && CRAWLER.test(userAgent)
