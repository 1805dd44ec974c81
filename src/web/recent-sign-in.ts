import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Account, findAccount } from '../accounts/accounts.ts';
import { checkCurrentPassword, checkTwoStepCode, signInSucceeded } from '../accounts/sign-in.ts';
import { field, sendPage, tooManyAttempts, wrongCodeMessage } from './pages.ts';
import { passkeySignInView } from './passkey-availability.ts';
import { safeReturnPath } from './return-path.ts';
import { signInContext } from './sign-in.ts';
import { readWebSession, startBrowserSignIn } from './web-sessions.ts';

/**
 * Actions that cannot be undone (deleting an application, a new client secret, removing a
 * passkey; the operator console's) need a recent sign-in: the browser's sign-in (`signedInAt`)
 * within the last 10 minutes. Otherwise the person proves it is them again on a re-authentication
 * page (password, plus a two-step code when the account has two-step on; or a passkey), through the
 * sign-in service and its attempt limits, which starts a fresh browser sign-in and goes back to
 * `returnTo` (a GET page: the action's confirmation).
 */

export const RECENT_SIGN_IN_MS = 10 * 60_000;
export const REAUTH = '/account/reauth';
const SIGN_IN = '/account/sign-in';

export interface RecentSignInOptions {
  /** How recent the sign-in must be; 10 minutes unless told. */
  maxAgeMs?: number;
  /** Where to go once the person proved it is them: a path of this service, opened with GET. */
  returnTo: string;
  /** Where "Cancel" leads. */
  cancel?: string;
}

/**
 * True when the browser signed in recently enough. Otherwise sends the re-authentication page
 * (or, for a browser not signed in at all, sends it to sign in) and answers false.
 */
export async function requireRecentSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  options: RecentSignInOptions,
): Promise<boolean> {
  const session = await readWebSession(request);
  const account =
    session && !session.mfaPending ? await findAccount(request.server.database.db, session.userId) : undefined;
  if (!session || !account) {
    reply.code(303).header('location', SIGN_IN).header('cache-control', 'no-store').send();
    return false;
  }
  if (Date.now() - session.signedInAt <= (options.maxAgeMs ?? RECENT_SIGN_IN_MS)) return true;
  sendReauthPage(reply, account, { returnTo: options.returnTo, cancel: options.cancel ?? '/account' });
  return false;
}

function sendReauthPage(
  reply: FastifyReply,
  account: Account,
  view: { returnTo: string; cancel: string; error?: string },
  status = 200,
): FastifyReply {
  const back = encodeURIComponent(view.returnTo);
  return sendPage(
    reply,
    'reauth',
    {
      username: account.username,
      twoStep: account.totpSecret !== null,
      returnTo: view.returnTo,
      cancel: view.cancel,
      error: view.error,
      ...passkeySignInView(reply.server, `${REAUTH}/passkey?return_to=${back}`),
    },
    status,
  );
}

/** POST /account/reauth: the re-authentication page's form. */
export async function reauthRoutes(web: FastifyInstance): Promise<void> {
  web.post<{ Body: Record<string, unknown> | undefined }>(
    REAUTH,
    { preHandler: web.csrfProtection },
    async (request, reply) => {
      const session = await readWebSession(request);
      const account = session && !session.mfaPending ? await findAccount(web.database.db, session.userId) : undefined;
      if (!session || !account) return reply.code(303).header('location', SIGN_IN).send();
      const returnTo = safeReturnPath(field(request.body, 'return_to')) ?? '/account';
      const cancel = safeReturnPath(field(request.body, 'cancel')) ?? '/account';
      const again = (error: string, status: number) =>
        sendReauthPage(reply, account, { returnTo, cancel, error }, status);
      const ctx = signInContext(request, { page: 'reauth' });
      const password = await checkCurrentPassword(ctx, account, field(request.body, 'password'));
      if (password.kind === 'limited')
        return again(tooManyAttempts(reply, 'failed sign-ins', password.retryAfterMs), 429);
      if (password.kind === 'wrong') return again('That password is not right.', 401);
      let twoStep: 'off' | 'code' | 'backup_code' = 'off';
      if (account.totpSecret !== null) {
        const code = await checkTwoStepCode(ctx, account, field(request.body, 'code'));
        if (code.kind === 'limited') return again(tooManyAttempts(reply, 'wrong codes', code.retryAfterMs), 429);
        if (code.kind === 'wrong') return again(wrongCodeMessage(code), 401);
        twoStep = code.method === 'backup_code' ? 'backup_code' : 'code';
      }
      await signInSucceeded(ctx, account, 'password', twoStep);
      // A fresh browser sign-in: its signedInAt is now.
      await startBrowserSignIn(request, reply, { kind: 'signed_in', account });
      return reply.code(303).header('location', returnTo).header('cache-control', 'no-store').send();
    },
  );
}
