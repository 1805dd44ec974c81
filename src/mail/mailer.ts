import type { FastifyBaseLogger } from 'fastify';
import { countMail } from '../http/metrics.ts';
import { isHeaderSafe, isMailableAddress, maskAddress } from './address.ts';
import type { MailData, MailKind } from './kinds.ts';
import { renderMail } from './render.ts';
import type { MailTransport } from './transport.ts';

export type MailOutcome =
  | { outcome: 'sent'; attempts: number }
  /** invalid_address: refused before any attempt; undelivered: every attempt failed. */
  | { outcome: 'failed'; reason: 'invalid_address' | 'undelivered'; attempts: number };

/** Waits between tries: three tries in all, done within about a second and a half (a page waits). */
export const RETRY_DELAYS_MS = [200, 800];

export interface MailerOptions {
  transport: MailTransport;
  from: string;
  baseUrl: string;
  log: FastifyBaseLogger;
  retryDelaysMs?: readonly number[];
}

/** Renders, sends with retries, logs and counts every message; never throws. */
export class Mailer {
  readonly #options: MailerOptions;

  constructor(options: MailerOptions) {
    this.#options = options;
  }

  /** True when messages leave through SMTP; false when they only go to the log. */
  get delivers(): boolean {
    return this.#options.transport.delivers;
  }

  async send<Kind extends MailKind>(kind: Kind, to: string, data: MailData[Kind]): Promise<MailOutcome> {
    const { transport, from, baseUrl, log } = this.#options;
    const delays = this.#options.retryDelaysMs ?? RETRY_DELAYS_MS;
    if (!isMailableAddress(to)) {
      countMail(kind, 'invalid_address');
      log.warn({ mailKind: kind }, 'mail refused: the recipient is not one plain address');
      return { outcome: 'failed', reason: 'invalid_address', attempts: 0 };
    }
    let attempts = 0;
    try {
      const rendered = renderMail(kind, data, { baseUrl });
      if (!isHeaderSafe(rendered.subject)) throw new Error('the subject holds a control character');
      for (;;) {
        attempts++;
        try {
          await transport.send({ from, to, ...rendered });
          countMail(kind, 'sent');
          if (transport.delivers) log.info({ mailKind: kind, to: maskAddress(to), attempts }, 'mail sent');
          return { outcome: 'sent', attempts };
        } catch (error) {
          const delay = delays[attempts - 1];
          if (delay === undefined) throw error;
          log.warn(
            { mailKind: kind, to: maskAddress(to), attempts, err: describe(error) },
            'mail not accepted; trying again',
          );
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    } catch (error) {
      countMail(kind, 'failed');
      log.error({ mailKind: kind, to: maskAddress(to), attempts, err: describe(error) }, 'mail failed');
      return { outcome: 'failed', reason: 'undelivered', attempts };
    }
  }

  close(): void {
    this.#options.transport.close();
  }
}

/** The error without the message it was about (nodemailer's errors may quote the envelope). */
function describe(error: unknown): { message: string; code?: string; responseCode?: number } {
  const { message, code, responseCode } = error as { message?: string; code?: string; responseCode?: number };
  return {
    message: String(message ?? error).slice(0, 300),
    ...(code ? { code } : {}),
    ...(responseCode ? { responseCode } : {}),
  };
}
