import { Argument, type Command } from 'commander'
import { withContext } from './context'

/** create-admin, create-user, set-role, ban, unban, verify-email. */
export function accountCommands(program: Command) {
  for (const role of ['admin', 'user'] as const) {
    program
      .command(`create-${role}`)
      .description(
        role === 'admin'
          ? 'create an admin account (email already verified)'
          : 'create an account (email already verified; whatever REGISTRATION says)',
      )
      .argument('<username>')
      .argument('<email>')
      .argument('<password>')
      .action(
        withContext(async ({ auth }, username: string, email: string, password: string) => {
          const user = await auth.createUser({ username, email, password, role, emailVerified: true })
          console.log(`Created ${role} ${user.username} (id ${user.id})`)
        }),
      )
  }
  program
    .command('set-role')
    .description("change an account's role")
    .argument('<username>')
    .addArgument(new Argument('<role>').choices(['user', 'admin']))
    .action(
      withContext(
        async ({ update }, username: string, role: 'user' | 'admin') => void (await update(username, { role })),
      ),
    )
  program
    .command('ban')
    .description('ban an account (a ban ends its sessions)')
    .argument('<username>')
    // The running server reads sessions on every request: they end at once.
    .action(
      withContext(async ({ auth, update }, username: string) =>
        auth.endAllSessions((await update(username, { banned: true })).id),
      ),
    )
  program
    .command('unban')
    .description('unban an account')
    .argument('<username>')
    .action(withContext(async ({ update }, username: string) => void (await update(username, { banned: false }))))
  program
    .command('verify-email')
    .description("mark an account's email as verified")
    .argument('<username>')
    .action(withContext(async ({ update }, username: string) => void (await update(username, { emailVerified: true }))))
}
