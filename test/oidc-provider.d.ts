// oidc-provider ships no types (DefinitelyTyped's lag behind); what test/auth/oidc-provider.ts uses of it.
declare module 'oidc-provider' {
  import type { Server } from 'node:http'

  interface Account {
    accountId: string
    claims(): Promise<Record<string, unknown>>
  }
  export default class Provider {
    constructor(
      issuer: string,
      configuration: {
        clients: Record<string, unknown>[]
        claims: Record<string, string[]>
        cookies: { keys: string[] }
        features: Record<string, { enabled: boolean }>
        pkce: { required: () => boolean }
        findAccount(ctx: unknown, sub: string): Promise<Account>
      },
    )
    listen(port: number): Server
  }
}
