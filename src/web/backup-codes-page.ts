import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { backupCodesOnPage } from '../accounts/account-service.ts';
import type { Account } from '../accounts/accounts.ts';
import { sendPage } from './pages.ts';
import type { WebSession } from './web-sessions.ts';

/**
 * /account/backup-codes: a new set of backup codes (after turning two-step on, or making a new
 * set), shown once on a page of their own, with copy (page script), download as a text file (a
 * form that posts the codes shown back, works without JavaScript), print (print styles), and an
 * "I saved them" step back to the account page. Nothing keeps the codes after this page: the
 * download posts the codes the page holds, the server only checks their shape.
 */

const PAGE = '/account/backup-codes';
const DONE: Record<string, string> = {
  'two-step-on':
    'Two-step verification is on. Signing in now needs a code from your authenticator app, or one of these backup codes.',
  'backup-codes-new': 'You have a new set of backup codes. The old ones no longer work.',
};
const CODE = /^[a-z0-9]{4}-[a-z0-9]{4}$/;
const MAX_CODES = 20;

/** After an action that made new codes: to their page (303), which says what happened. */
export const toBackupCodes = (reply: FastifyReply, done: keyof typeof DONE) =>
  reply.code(303).header('location', `${PAGE}?done=${done}`).header('cache-control', 'no-store').send();

/** The backup codes as the downloaded text file says them. */
export function backupCodesFile(username: string, codes: readonly string[], baseUrl: string): string {
  return [
    `Backup codes for ${username} at ${baseUrl}`,
    '',
    'Each code signs you in once, in place of a code from your authenticator app.',
    '',
    ...codes,
    '',
  ].join('\r\n');
}

export async function backupCodesPage(
  web: FastifyInstance,
  hooks: {
    signedIn(
      request: FastifyRequest,
      reply: FastifyReply,
    ): Promise<{ session: WebSession; account: Account } | undefined>;
  },
): Promise<void> {
  web.get<{ Querystring: { done?: unknown } }>(PAGE, async (request, reply) => {
    const current = await hooks.signedIn(request, reply);
    if (!current) return reply;
    const { account, session } = current;
    if (account.totpSecret === null) return reply.code(303).header('location', '/account').send();
    const codes = await backupCodesOnPage({ db: web.database.db }, account, session);
    const done = request.query.done;
    return sendPage(reply, 'backup-codes-page', {
      notice: typeof done === 'string' && Object.hasOwn(DONE, done) ? DONE[done] : undefined,
      codes: codes.shown,
      left: codes.left,
    });
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(
    `${PAGE}/download`,
    { preHandler: web.csrfProtection },
    async (request, reply) => {
      const current = await hooks.signedIn(request, reply);
      if (!current) return reply;
      const sent = request.body?.code;
      const codes = (Array.isArray(sent) ? sent : [sent]).filter((c): c is string => typeof c === 'string');
      if (codes.length === 0 || codes.length > MAX_CODES || !codes.every((c) => CODE.test(c)))
        return reply
          .code(400)
          .type('text/plain; charset=utf-8')
          .header('cache-control', 'no-store')
          .send('These are not backup codes. Go back to the page that shows them and download them from there.\n');
      return reply
        .type('text/plain; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('content-disposition', 'attachment; filename="backup-codes.txt"')
        .send(backupCodesFile(current.account.username, codes, web.config.baseUrl));
    },
  );
}
