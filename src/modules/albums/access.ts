import type { Config } from '../../config'
import type { Db } from '../../db/client'
import type { Album, User } from '../../db/schema'
import { RateLimited } from '../../errors'
import { ipKey } from '../../http/client-ip'
import { guessWindow, refundAttempt, takeAttempt, type WindowRule } from '../../limits/windows'
import type { Audience } from './present'

/** The outcome of opening an album as someone; the API turns it into statuses, the album page into HTML. */
export type AlbumAccess =
  | { kind: 'ok'; album: Album; audience: Audience }
  | { kind: 'not-found' }
  | { kind: 'password'; album: Album; wrong: boolean }
  /** Too many wrong passwords for this album or from this address: the 429 to answer, with its headers. */
  | { kind: 'throttled'; album: Album; error: RateLimited }

/** Password guesses for an album, counted per album (across addresses) and per address. */
function guessWindows(guesses: Config['limits']['guesses'], album: Album, ip: string): WindowRule[] {
  const window = (key: string, limit: number, message: string) => guessWindow(guesses, key, limit, message)
  return [
    window(`album-password:${album.id}`, guesses.albumPerAlbum, 'Too many wrong passwords for this album'),
    window(`album-password-ip:${ipKey(ip)}`, guesses.albumPerIp, 'Too many wrong album passwords from this address'),
  ]
}

/**
 * Opens an album as `caller` (null: anonymous) from `ip`, with the password they gave, if any. Password guesses are
 * throttled before the hash is verified, so a refused guess costs no hashing; a right password is not counted.
 */
export async function openAlbum(
  deps: {
    db: Db
    guesses: Config['limits']['guesses']
    /** The password-guess windows' clock. */
    now: () => number
    findLive: (id: string) => Promise<Album | undefined>
  },
  caller: User | null,
  id: string,
  password: string | undefined,
  ip: string,
): Promise<AlbumAccess> {
  const album = await deps.findLive(id)
  if (!album) return { kind: 'not-found' }
  if (caller && caller.id === album.userId) return { kind: 'ok', album, audience: 'owner' }
  if (!album.isPublic) return { kind: 'not-found' }
  if (album.passwordHash !== null) {
    if (!password) return { kind: 'password', album, wrong: false }
    const windows = guessWindows(deps.guesses, album, ip)
    const at = deps.now()
    try {
      await takeAttempt(deps.db, windows, at)
    } catch (error) {
      if (error instanceof RateLimited) return { kind: 'throttled', album, error }
      throw error
    }
    const ok = await Bun.password.verify(password, album.passwordHash).catch(() => false)
    if (!ok) return { kind: 'password', album, wrong: true }
    await refundAttempt(deps.db, windows, at)
  }
  return { kind: 'ok', album, audience: 'public' }
}
