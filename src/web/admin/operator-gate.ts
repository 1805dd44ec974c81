import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Account, findAccount } from '../../accounts/accounts.ts';
import { listPasskeys } from '../../accounts/passkeys.ts';
import { sendNotFoundPage } from '../not-found-pages.ts';
import { sendMessage } from '../pages.ts';
import { requireRecentSignIn } from '../recent-sign-in.ts';
import { readWebSession, type WebSession } from '../web-sessions.ts';

/** The signed-in operator a console request acts as (set by the gate; null outside /admin). */
export interface OperatorSignIn {
  account: Account;
  session: WebSession;
}

declare module 'fastify' {
  interface FastifyRequest {
    operator: OperatorSignIn | null;
  }
}

/**
 * The console's first check, before the body is read or the CSRF token checked (DESIGN "Operating
 * a public service"): a browser fully signed in to an unlocked operator account goes on; anyone
 * else gets the same 404 page as an unknown address, so the console's existence is not told. An operator without two-step or a
 * passkey gets a page saying what to set up.
 */
export async function operatorGate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const session = await readWebSession(request);
  const account =
    session && !session.mfaPending ? await findAccount(request.server.database.db, session.userId) : undefined;
  if (!session || !account?.operator || account.locked) {
    sendNotFoundPage(reply);
    return reply;
  }
  if (account.totpSecret === null && (await listPasskeys(request.server.database.db, account.userId)).length === 0) {
    sendMessage(
      reply,
      'Set up two-step verification first',
      'The operator console needs two-step verification or a passkey on your account. Set one up on your account page, then come back.',
      403,
      [{ href: '/account#security', text: 'Go to your account' }],
    );
    return reply;
  }
  request.operator = { account, session };
}

/**
 * Actions that change an account or application need a sign-in within the last 10 minutes:
 * otherwise the operator proves it is them again and comes back to `returnTo` (the page the
 * action's button is on), where one more press acts. Answers true when the action may go on.
 */
export function requireFreshOperatorSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  returnTo: string,
): Promise<boolean> {
  return requireRecentSignIn(request, reply, { returnTo, cancel: returnTo });
}

/** The operator a console route acts as; the gate guarantees one on every /admin route. */
export function operatorOf(request: FastifyRequest): OperatorSignIn {
  if (!request.operator) throw new Error('an /admin route ran without the operator gate');
  return request.operator;
}
