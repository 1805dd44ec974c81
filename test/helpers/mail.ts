/**
 * A real SMTP server inside the test process (smtp-server, from nodemailer's project), whose
 * messages are parsed with mailparser: what a person's mailbox would hold.
 *
 *   const mailbox = await startMailbox();
 *   const server = await startServer({ env: { SMTP_URL: mailbox.url } });
 *   const message = await mailbox.next('someone@example.com');
 *   const code = codeIn(message); const link = verifyLinkIn(message, server.config.baseUrl);
 *
 * `mailbox.refuse(n)` answers the next n messages with a temporary failure (451), as a server that
 * is refusing mail; `downUrl()` is an SMTP_URL where nothing listens, as a server that is down.
 */
import { createServer } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  /** The raw message as received, headers included. */
  raw: string;
}

export interface Mailbox {
  /** SMTP_URL for a server that sends here. */
  url: string;
  /** Every message received so far, in order. */
  received: ReceivedMail[];
  /** The next message to `to` not yet taken (waits for it, up to timeoutMs). */
  next(to: string, timeoutMs?: number): Promise<ReceivedMail>;
  /** Refuses the next `count` messages with 451 (temporary failure). */
  refuse(count: number): void;
  /** How many messages were refused so far. */
  refused: number;
  close(): Promise<void>;
}

export async function startMailbox(): Promise<Mailbox> {
  const received: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  const waiters = new Set<() => void>();
  let toRefuse = 0;
  const state = { refused: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (toRefuse > 0) {
          toRefuse--;
          state.refused++;
          callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
          return;
        }
        const raw = Buffer.concat(chunks);
        simpleParser(raw).then(
          (parsed) => {
            received.push({
              from: parsed.from?.text ?? '',
              to: session.envelope.rcptTo.map((rcpt) => rcpt.address.toLowerCase()),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              html: typeof parsed.html === 'string' ? parsed.html : '',
              raw: raw.toString('utf8'),
            });
            for (const wake of waiters) wake();
            callback();
          },
          (error: Error) => callback(error),
        );
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    get refused() {
      return state.refused;
    },
    refuse(count) {
      toRefuse = count;
    },
    async next(to, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = received.find((mail) => !taken.has(mail) && mail.to.includes(to.toLowerCase()));
        if (found) {
          taken.add(found);
          return found;
        }
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(
            `no message to ${to} within ${timeoutMs} ms (received: ${received.map((m) => `${m.to.join(',')}: ${m.subject}`).join('; ') || 'none'})`,
          );
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, left);
          waiters.add(wake);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An SMTP_URL where nothing listens: a mail server that is down. */
export async function downUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return `smtp://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

/** The 6-digit code of a message (its text part). */
export function codeIn(mail: { text: string }): string {
  const match = /(?:^|\s)(\d{6})(?:\s|$)/m.exec(mail.text);
  if (!match) throw new Error(`no 6-digit code in:\n${mail.text}`);
  return match[1]!;
}

/** The `{base}/account/verify?token=…` link of a message (its text part). */
export function verifyLinkIn(mail: { text: string }, baseUrl: string): string {
  const escaped = baseUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`${escaped}/account/verify\\?token=[A-Za-z0-9_-]+`).exec(mail.text);
  if (!match) throw new Error(`no ${baseUrl}/account/verify link in:\n${mail.text}`);
  return match[0];
}
