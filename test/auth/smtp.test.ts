/**
 * Email verification by SMTP (DECISIONS.md "Accounts and authentication"): with SMTP_URL set, the token travels by mail
 * to a real SMTP server (smtp-server on loopback) and, unlike the no-SMTP fallback, never reaches the server log.
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import { jsonBody, registerUser, startTestServer, type TestServer } from '../helpers'

// bun 1.4.5 applies test/setup.ts's setDefaultTimeout only to the first file of a multi-file run: say it here too.
const TIMEOUT = 60_000

interface ReceivedMail {
  from: string
  to: string[]
  raw: string
}

const mails: ReceivedMail[] = []
let smtp: SMTPServer
let t: TestServer

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        })
        callback()
      })
    },
  })
  await new Promise<void>((resolve, reject) => {
    smtp.once('error', reject)
    smtp.listen(0, '127.0.0.1', () => resolve())
  })
  const port = (smtp.server.address() as AddressInfo).port
  t = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${port}`, SMTP_FROM: 'imghost@example.test' })
}, TIMEOUT)

afterAll(async () => {
  await t?.stop()
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()))
}, TIMEOUT)

/** Waits (bounded) until `count` mails have arrived for `address`, and returns them. */
async function mailsFor(address: string, count: number, timeoutMs = 10_000): Promise<ReceivedMail[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = mails.filter((m) => m.to.some((to) => to.toLowerCase() === address.toLowerCase()))
    if (found.length >= count || Date.now() > deadline) return found
    await Bun.sleep(25)
  }
}

/** The decoded text body of a single-part message (7bit, quoted-printable or base64, as nodemailer picks). */
function textBody(raw: string): { headers: string; body: string } {
  const split = raw.indexOf('\r\n\r\n')
  expect(split).toBeGreaterThan(0)
  const headers = raw.slice(0, split)
  const body = raw.slice(split + 4)
  expect(headers).toMatch(/^content-type:\s*text\/plain/im)
  const encoding = /^content-transfer-encoding:\s*(\S+)/im.exec(headers)?.[1]?.toLowerCase() ?? '7bit'
  if (encoding === 'quoted-printable') {
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    return { headers, body: Buffer.from(bytes, 'latin1').toString('utf8') }
  }
  if (encoding === 'base64') return { headers, body: Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8') }
  return { headers, body }
}

const TOKEN_LINE = /verification token: ([A-Za-z0-9_-]+)/

function tokenOf(mail: ReceivedMail): string {
  const { body } = textBody(mail.raw)
  const match = TOKEN_LINE.exec(body)
  expect(match).not.toBeNull()
  // The link in the mail carries the same token.
  const link = /(https?:\/\/\S+\/verify\?token=(\S+))/.exec(body)
  expect(link).not.toBeNull()
  expect(decodeURIComponent(link![2])).toBe(match![1])
  return match![1]
}

/** Runs `action` while recording everything the server writes through the console (passed through as usual). */
async function captureLog(action: () => Promise<unknown>): Promise<string> {
  const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((level) => spyOn(console, level))
  try {
    await action()
    return spies.flatMap((spy) => spy.mock.calls.map((args) => args.map(String).join(' '))).join('\n')
  } finally {
    for (const spy of spies) spy.mockRestore()
  }
}

describe('email verification over SMTP', () => {
  test(
    'register mails one token to the address; it verifies the account; resend mails another; none is logged',
    async () => {
      const name = `smtp${Date.now().toString(36)}`
      const email = `${name}@example.com`
      let session: Awaited<ReturnType<typeof registerUser>> | undefined
      const registerLog = await captureLog(async () => {
        session = await registerUser(t, name)
      })
      expect(session!.user.emailVerified).toBe(false)

      const first = await mailsFor(email, 1)
      expect(first.length).toBe(1)
      // Nothing else went out: only this address got mail.
      expect(mails.length).toBe(1)
      expect(first[0].to).toEqual([email])
      expect(first[0].from).toBe('imghost@example.test')
      expect(textBody(first[0].raw).headers).toMatch(/^subject:.*verify/im)
      const firstToken = tokenOf(first[0])
      expect(firstToken.length).toBeGreaterThanOrEqual(32)
      // With SMTP configured the token goes by mail only, never into the server log.
      expect(registerLog).not.toContain(firstToken)
      expect(registerLog).not.toContain('verification token')

      // The link in the mail opens a real page of this server.
      const link = /(https?:\/\/\S+\/verify\?token=\S+)/.exec(textBody(first[0].raw).body)![1]
      expect(link.startsWith(`${t.url}/verify?`)).toBe(true)
      const page = await fetch(link)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toContain('text/html')

      // Resend: a second, different token by mail, still not logged.
      let resend: { status: number; body: any } | undefined
      const resendLog = await captureLog(async () => {
        resend = await t.json('/api/auth/resend-verification', { method: 'POST', headers: session!.bearer })
      })
      expect(resend!.status).toBe(200)
      expect(resend!.body.success).toBe(true)
      const both = await mailsFor(email, 2)
      expect(both.length).toBe(2)
      const secondToken = tokenOf(both[1])
      expect(secondToken).not.toBe(firstToken)
      expect(resendLog).not.toContain(secondToken)
      expect(resendLog).not.toContain('verification token')

      // The mailed token verifies the account, once.
      const verified = await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({ token: firstToken }) })
      expect(verified.status).toBe(200)
      expect(verified.body.success).toBe(true)
      const me = await t.json('/api/auth/me', { headers: session!.bearer })
      expect(me.status).toBe(200)
      expect(me.body.user.emailVerified).toBe(true)
      const again = await t.json('/api/auth/verify-email', { method: 'POST', ...jsonBody({ token: firstToken }) })
      expect(again.status).toBe(400)
      expect(typeof again.body.error).toBe('string')

      // A verified account gets no more mail.
      const late = await t.json('/api/auth/resend-verification', { method: 'POST', headers: session!.bearer })
      expect(late.status).toBe(400)
      await Bun.sleep(200)
      expect((await mailsFor(email, 3, 0)).length).toBe(2)
    },
    TIMEOUT,
  )

  test(
    'an SMTP server that is down does not fail registration, and the token is still not logged',
    async () => {
      // A second app pointed at a port nobody listens on.
      const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
      const deadPort = probe.port
      probe.stop(true)
      const down = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${deadPort}` })
      try {
        const name = `down${Date.now().toString(36)}`
        let session: Awaited<ReturnType<typeof registerUser>> | undefined
        const log = await captureLog(async () => {
          session = await registerUser(down, name)
        })
        expect(session!.user.emailVerified).toBe(false)
        expect(log).toContain('sending verification email failed')
        expect(log).not.toContain('verification token')
        const me = await down.json('/api/auth/me', { headers: session!.bearer })
        expect(me.body.user.emailVerified).toBe(false)
      } finally {
        await down.stop()
      }
    },
    TIMEOUT,
  )
})

describe('password reset over SMTP', () => {
  test(
    'forgot mails a link to the reset page with a token that resets the password; nothing is logged',
    async () => {
      const name = `reset${Date.now().toString(36)}`
      const email = `${name}@example.com`
      const account = await registerUser(t, name)
      expect((await mailsFor(email, 1)).length).toBe(1)
      const log = await captureLog(async () => {
        const res = await t.json('/api/auth/forgot', { method: 'POST', ...jsonBody({ email }) })
        expect(res.status).toBe(200)
      })
      const mail = (await mailsFor(email, 2))[1]
      const { headers, body } = textBody(mail.raw)
      expect(headers).toMatch(/^subject:.*reset your password/im)
      const token = /reset token: ([A-Za-z0-9_-]+)/.exec(body)![1]
      const link = /(https?:\/\/\S+\/reset\?token=(\S+))/.exec(body)!
      expect(link[1].startsWith(`${t.url}/reset?`)).toBe(true)
      expect(decodeURIComponent(link[2])).toBe(token)
      expect(body).toContain('1 hour')
      expect(log).not.toContain(token)
      expect(log).not.toContain('reset token')
      const reset = await t.json('/api/auth/reset', {
        method: 'POST',
        ...jsonBody({ token, newPassword: 'mailed new password' }),
      })
      expect(reset.status).toBe(200)
      expect((await t.json('/api/auth/me', { headers: account.bearer })).status).toBe(401)
    },
    TIMEOUT,
  )
})
