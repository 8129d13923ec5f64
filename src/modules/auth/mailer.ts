import { createTransport } from 'nodemailer'
import { log } from '../../log'

export interface Mailer {
  sendVerification(to: string, token: string): Promise<void>
}

/** Without SMTP the token goes to the server log, so a small self-hosted install still works. */
export function createMailer(opts: { smtpUrl: string; from: string; publicUrl: string; siteName: string }): Mailer {
  if (!opts.smtpUrl) {
    return {
      async sendVerification(to, token) {
        log.info(`verification token: ${token}`, { to })
      },
    }
  }
  const transport = createTransport(opts.smtpUrl)
  return {
    async sendVerification(to, token) {
      const link = `${opts.publicUrl}/verify?token=${encodeURIComponent(token)}`
      try {
        await transport.sendMail({
          from: opts.from,
          to,
          subject: `Verify your email for ${opts.siteName}`,
          text: `Open this link to verify your email address:\n\n${link}\n\nverification token: ${token}\n\nIt expires in 48 hours.`,
        })
      } catch (error) {
        // A mail outage must not fail registration; the user can ask for a new token later.
        log.error('sending verification email failed', { error: String(error) })
      }
    },
  }
}
