/**
 * The tables of this process's engine (src/db/engine.ts), under the SQLite schema's types: the tables are written once
 * (src/db/tables.ts) and the repositories too, and src/db/schema-pg.ts gives the same JS values for the same columns
 * (test/db/schema-pg.test.ts holds it to that). Queries use only what both dialects of drizzle share
 * (src/db/client.ts).
 */
import { engine } from './engine'
import type * as sqlite from './schema-sqlite'

// Only the running engine's schema (and its drizzle dialect) is loaded: the other costs memory and start-up time.
const tables = (engine === 'pg'
  ? await import('./schema-pg')
  : await import('./schema-sqlite')) as unknown as typeof sqlite

export const {
  users,
  apiKeys,
  verificationTokens,
  sessions,
  invites,
  passkeys,
  totpSecrets,
  recoveryCodes,
  oidcIdentities,
  authFlows,
  embedProfiles,
  images,
  imageCounts,
  listedImage,
  albums,
  albumImages,
  uploadWindows,
  reports,
  blocks,
  blockSha256s,
  tusUploads,
  uploadIntents,
  webhooks,
  variants,
  variantFailures,
  healthProbe,
} = tables

export type {
  Album,
  ApiKey,
  Block,
  EmbedProfile,
  Image,
  ImageCounts,
  Invite,
  Passkey,
  Report,
  Session,
  TotpSecret,
  TusUpload,
  User,
  Webhook,
} from './schema-sqlite'
