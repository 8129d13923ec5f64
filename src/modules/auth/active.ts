import type { User } from '../../db/schema'
import { forbidden } from '../../errors'

/** The account, unless it is banned (403): every way of signing in ends here. */
export function assertActive(user: User) {
  if (user.banned) throw forbidden('This account is banned')
  return user
}
