import type { User } from '../../db/schema'

/** The JWT signer the auth guard puts in every handler's context. */
interface Signer {
  sign(payload: { sub: string }): Promise<string>
}

/** The one way a sign-in (password, two-factor, passkey, single sign-on) gets its session token. */
export const issueToken = (jwt: Signer, user: User) => jwt.sign({ sub: String(user.id) })
