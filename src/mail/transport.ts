import type { FastifyBaseLogger } from 'fastify';

/** A message ready to go: rendered and with checked addresses. */
export interface OutgoingMail {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** Where messages go: an SMTP server, or the log. */
export interface MailTransport {
  /** True when messages really leave (SMTP); false when they are only written to the log. */
  readonly delivers: boolean;
  /** Resolves once the server accepted the message; rejects on any failure. */
  send(mail: OutgoingMail): Promise<void>;
  close(): void;
}

/**
 * SMTP through nodemailer, from SMTP_URL: smtp:// upgrades with STARTTLS when the server offers it
 * (and then checks its certificate); smtps:// is TLS from the start (port 465 by default). Timeouts
 * are short because a send happens while a person waits for a page (see Mailer's retries).
 */
export async function smtpTransport(url: string): Promise<MailTransport> {
  const nodemailer = (await import('nodemailer')).default;
  const transporter = nodemailer.createTransport({
    url,
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 10_000,
    // nodemailer's own logger stays off: it would log addresses and message contents.
    logger: false,
  } as Parameters<typeof nodemailer.createTransport>[0]);
  return {
    delivers: true,
    async send(mail) {
      await transporter.sendMail({
        from: mail.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        disableFileAccess: true,
        disableUrlAccess: true,
      });
    },
    close: () => transporter.close(),
  };
}

/**
 * With SMTP_URL unset: every message is written to the log as one JSON line holding
 * `"mail":{"to","subject","text"}`, so an operator trying the service can still follow a code.
 */
export function logTransport(log: FastifyBaseLogger): MailTransport {
  return {
    delivers: false,
    async send(mail) {
      log.info(
        { mail: { to: mail.to, subject: mail.subject, text: mail.text } },
        'mail written to the log (SMTP_URL unset)',
      );
    },
    close() {},
  };
}
