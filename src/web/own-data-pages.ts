import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findAccount } from '../accounts/accounts.ts';
import { deleteOwnAccount, exportData } from '../accounts/lifecycle.ts';
import { field, sendMessage, sendPage, tooManyAttempts, wrongCodeMessage } from './pages.ts';
import { signInContext } from './sign-in.ts';
import { forgetWebSession, readWebSession } from './web-sessions.ts';

const SIGN_IN = '/account/sign-in';

type DeleteErrors = Partial<Record<'form' | 'confirm' | 'password' | 'code', string>>;

/**
 * A person's own data (DESIGN "Operating a public service"): /account/data downloads it as JSON,
 * /account/delete erases the account after the username, the password and (two-step on) a code.
 */
export async function ownDataPages(web: FastifyInstance): Promise<void> {
  const db = () => web.database.db;
  const csrf = { preHandler: web.csrfProtection };

  async function signedIn(request: FastifyRequest, reply: FastifyReply) {
    const session = await readWebSession(request);
    const account = session && !session.mfaPending ? await findAccount(db(), session.userId) : undefined;
    if (!session || !account) {
      reply.code(303).header('location', SIGN_IN).header('cache-control', 'no-store').send();
      return undefined;
    }
    return account;
  }

  web.get('/account/data', async (request, reply) => {
    const account = await signedIn(request, reply);
    if (!account) return reply;
    const data = await exportData(
      {
        db: db(),
        applicationSessions: web.applicationSessions,
        erasers: web.accountErasers,
        origin: { ip: request.ip, log: request.log },
        via: 'web',
        actorId: account.userId,
      },
      account.userId,
    );
    if (!data) return reply.code(303).header('location', SIGN_IN).send();
    return reply
      .header('cache-control', 'no-store')
      .header('content-disposition', `attachment; filename="account-data-${account.username}.json"`)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(data, null, 2));
  });

  const deletePage = (
    reply: FastifyReply,
    account: { username: string; totpSecret: string | null },
    error: DeleteErrors = {},
    status = 200,
  ) =>
    sendPage(
      reply,
      'account-delete',
      { username: account.username, twoStep: account.totpSecret !== null, error },
      status,
    );

  web.get('/account/delete', async (request, reply) => {
    const account = await signedIn(request, reply);
    if (!account) return reply;
    return deletePage(reply, account);
  });

  web.post<{ Body: Record<string, unknown> | undefined }>('/account/delete', csrf, async (request, reply) => {
    const account = await signedIn(request, reply);
    if (!account) return reply;
    const outcome = await deleteOwnAccount(
      {
        ...signInContext(request, { page: 'account_delete' }),
        applicationSessions: web.applicationSessions,
        erasers: web.accountErasers,
      },
      account,
      {
        confirm: field(request.body, 'confirm'),
        password: field(request.body, 'password'),
        code: field(request.body, 'code'),
      },
    );
    switch (outcome.kind) {
      case 'deleted':
        forgetWebSession(reply);
        return sendMessage(reply, 'Your account is deleted', 'Your account and everything about it were erased.');
      case 'not confirmed':
        return deletePage(reply, account, { confirm: 'Type your username exactly as shown.' }, 400);
      case 'last operator':
        return deletePage(
          reply,
          account,
          { form: 'You are the last operator of this service: make another operator first.' },
          409,
        );
      case 'wrong password':
        return outcome.refusal.kind === 'limited'
          ? deletePage(
              reply,
              account,
              { password: tooManyAttempts(reply, 'failed sign-ins', outcome.refusal.retryAfterMs) },
              429,
            )
          : deletePage(reply, account, { password: 'The password is not right.' }, 401);
      case 'wrong code':
        return outcome.refusal.kind === 'limited'
          ? deletePage(
              reply,
              account,
              { code: tooManyAttempts(reply, 'wrong codes', outcome.refusal.retryAfterMs) },
              429,
            )
          : deletePage(reply, account, { code: wrongCodeMessage(outcome.refusal) }, 401);
    }
  });
}
