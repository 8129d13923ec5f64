import { log } from '../../log'

export interface Mailer {
  sendVerification(to: string, token: string): Promise<void>
  sendPasswordReset(to: string, token: string): Promise<void>
}

/** What each email says: its subject, the page its link opens, and how long the token lasts. */
const MESSAGES = {
  verification: {
    subject: 'Verify your email',
    page: '/verify',
    text: 'Open this link to verify your email address:',
    lasts: '48 hours',
  },
  reset: {
    subject: 'Reset your password',
    page: '/reset',
    text: 'Someone (hopefully you) asked to reset your password. Open this link to choose a new one:',
    lasts: '1 hour',
  },
} as const

/** Without SMTP the token goes to the server log, so a small self-hosted install still works. */
export function createMailer(opts: { smtpUrl: string; from: string; publicUrl: string; siteName: string }): Mailer {
  // nodemailer (~18 MB resident) is loaded with the first email, not by servers that send none.
  let transport: Promise<import('nodemailer').Transporter> | undefined
  const send = async (kind: keyof typeof MESSAGES, to: string, token: string) => {
    if (!opts.smtpUrl)
      return log.info(`${kind === 'reset' ? 'password reset' : 'verification'} token: ${token}`, { to })
    const message = MESSAGES[kind]
    const link = `${opts.publicUrl}${message.page}?token=${encodeURIComponent(token)}`
    try {
      transport ??= import('nodemailer').then((m) => m.createTransport(opts.smtpUrl))
      await (await transport).sendMail({
        from: opts.from,
        to,
        subject: `${message.subject} for ${opts.siteName}`,
        text: `${message.text}\n\n${link}\n\n${kind} token: ${token}\n\nIt expires in ${message.lasts}.`,
      })
    } catch (error) {
      // A mail outage must not fail the request (nor tell whether the address exists); the user can ask again.
      log.error(`sending ${kind} email failed`, { error: String(error) })
    }
  }
  return {
    sendVerification: (to, token) => send('verification', to, token),
    sendPasswordReset: (to, token) => send('reset', to, token),
  }
}
