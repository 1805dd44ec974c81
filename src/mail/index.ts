/**
 * Mail: one message per kind, plain text plus HTML, sent through SMTP_URL or written to the log.
 *
 * API (the `mail` decoration, registered by this plugin):
 *
 *   const result = await app.mail.send('sign-up-code', address, { code, link });
 *   if (result.outcome === 'failed') … // show "we could not send the message, try again"
 *
 * - `send(kind, to, data)` renders templates/<kind>.eta with `data` (typed by MailData in
 *   kinds.ts), sends it and resolves to `{ outcome: 'sent' }` or `{ outcome: 'failed', reason }`;
 *   it never throws. A failed attempt is tried again twice (after 0.2 s, then 0.8 s). Every send is
 *   logged (the address masked) and counted in /metrics as mail_messages_total{kind,outcome}.
 * - The recipient must be one plain address (isMailableAddress): anything with CR, LF, NUL, a
 *   comma or a display name is refused (`reason: 'invalid_address'`) without being sent, so no
 *   header can be injected. Check form input with isMailableAddress first to show the error.
 * - `delivers` is false when SMTP_URL is unset: every message is then one JSON log line
 *   `"mail":{"to","subject","text"}` and the start-up log warns that no mail is sent.
 * - A new kind: an entry in MailData and MAIL_KINDS (kinds.ts) and a template templates/<kind>.eta,
 *   written with the helpers paragraph/code/link/button so that one file gives both parts.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Mailer, RETRY_DELAYS_MS } from './mailer.ts';
import { logTransport, type MailTransport, smtpTransport } from './transport.ts';

export type { MailData, MailKind } from './kinds.ts';
export { Mailer };

declare module 'fastify' {
  interface FastifyInstance {
    mail: Mailer;
  }
}

export interface MailPluginOptions {
  /** Replaces the transport chosen from SMTP_URL (tests). */
  transport?: MailTransport;
  /** Waits between tries (default 0.2 s and 0.8 s). */
  retryDelaysMs?: readonly number[];
}

async function mailPlugin(app: FastifyInstance, options: MailPluginOptions): Promise<void> {
  if (
    options.retryDelaysMs !== undefined &&
    !options.retryDelaysMs.every((delay) => Number.isInteger(delay) && delay >= 0)
  ) {
    throw new Error('mail: retryDelaysMs must be non-negative integers');
  }
  const { smtpUrl, mailFrom, baseUrl } = app.config;
  const log = app.log.child({}, { level: app.log.level });
  const transport = options.transport ?? (smtpUrl ? await smtpTransport(smtpUrl) : logTransport(log));
  if (!transport.delivers)
    app.log.warn('SMTP_URL is unset: no mail is sent; every message is written to the log instead');
  const mailer = new Mailer({
    transport,
    from: mailFrom,
    baseUrl,
    log,
    retryDelaysMs: options.retryDelaysMs ?? RETRY_DELAYS_MS,
  });
  app.decorate('mail', mailer);
  app.addHook('onClose', async () => mailer.close());
}

export const mail = fp(mailPlugin, { name: 'mail', fastify: '5.x', decorators: { fastify: ['config'] } });
