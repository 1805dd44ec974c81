import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findAccount } from '../accounts/accounts.ts';
import {
  hintNamesSignIn,
  LogoutRefused,
  type LogoutRequest,
  logOut,
  readLogoutRequest,
  returnAddress,
} from '../oauth/rp-logout.ts';
import { logoutSchemas } from '../oauth/schemas.ts';
import { field, START_PAGE, sendMessage, sendPage } from './pages.ts';
import { forgetWebSession, readWebSession } from './web-sessions.ts';

const LOGOUT = '/v4/logout';
const PARAMS = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state'] as const;
type LogoutParams = Record<(typeof PARAMS)[number], string>;

/** The request's parameters (query of a GET, form of a POST); a missing or repeated one is ''. */
function readParams(source: unknown): LogoutParams {
  return Object.fromEntries(PARAMS.map((name) => [name, field(source, name)])) as LogoutParams;
}

/**
 * RP-initiated logout (DESIGN "OpenID Connect", Logout): GET or POST /v4/logout from an
 * application. A bad request is a 400 page and ends nothing. The person confirms (button
 * logout=yes, CSRF-protected) unless a valid id_token_hint names this browser's sign-in; then the
 * sign-in and the named application's sessions from it end, and the browser returns to the
 * application's post_logout_redirect_uri with state, or sees that it is signed out.
 */
export async function logoutPages(web: FastifyInstance): Promise<void> {
  const db = () => web.database.db;

  async function answer(request: FastifyRequest, reply: FastifyReply, params: LogoutParams, confirmed: boolean) {
    let logout: LogoutRequest;
    try {
      logout = await readLogoutRequest(db(), web.signingKeys, web.config.baseUrl, params);
    } catch (error) {
      if (!(error instanceof LogoutRefused)) throw error;
      return sendMessage(reply, 'The sign-out did not work', `${error.message} Nothing was signed out.`, 400, [
        { href: '/account', text: 'Go to your account' },
        START_PAGE,
      ]);
    }
    const signIn = await readWebSession(request);
    if (signIn) {
      const ownRequest = await hintNamesSignIn(db(), logout, signIn);
      if (!confirmed && !ownRequest) {
        const account = await findAccount(db(), signIn.userId);
        return sendPage(reply, 'logout', {
          params,
          appName: logout.application?.name ?? null,
          username: account?.username ?? '',
        });
      }
      await logOut(db(), logout, { token: signIn.token, sessionHash: signIn.sessionHash }, ownRequest);
      forgetWebSession(reply);
    }
    const back = returnAddress(logout);
    if (back !== null) return reply.code(303).header('location', back).header('cache-control', 'no-store').send();
    return sendMessage(reply, 'You are signed out', 'You are signed out of your account in this browser.', 200, [
      { href: '/account/sign-in', text: 'Sign in again' },
      START_PAGE,
    ]);
  }

  web.get<{ Querystring: Record<string, unknown> }>(LOGOUT, { schema: logoutSchemas.get }, async (request, reply) =>
    answer(request, reply, readParams(request.query), false),
  );

  // An application's POST carries no CSRF token (it comes from the application's page); the
  // person's confirmation (logout=yes) must.
  web.post<{ Body: Record<string, unknown> | undefined }>(
    LOGOUT,
    {
      schema: logoutSchemas.post,
      preHandler: (request, reply, done) => {
        if (field(request.body, 'logout') === 'yes') web.csrfProtection.call(web, request, reply, done);
        else done();
      },
    },
    async (request, reply) => answer(request, reply, readParams(request.body), field(request.body, 'logout') === 'yes'),
  );
}
