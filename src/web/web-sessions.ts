import { fastifyCookie } from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Account } from '../accounts/accounts.ts';
import type { SignInMethod, TwoStep } from '../accounts/sign-in.ts';
import {
  authMethodsOf,
  createWebSession,
  deleteWebSession,
  findWebSession,
  touchWebSession,
  type WebSession,
} from '../accounts/web-sessions.ts';

/**
 * The browser's side of a sign-in: the cookie that carries its web session's token. The sessions
 * themselves are the accounts feature's (src/accounts/web-sessions.ts).
 */

export type { WebSession };
export const SESSION_COOKIE = 'sid';

function cookieOptions(request: FastifyRequest, maxAgeMs: number) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: request.server.config.baseUrl.startsWith('https:'),
    maxAge: Math.floor(maxAgeMs / 1000),
  };
}

export async function readWebSession(request: FastifyRequest): Promise<WebSession | undefined> {
  const token = request.cookies[SESSION_COOKIE];
  if (!token) return undefined;
  const session = await findWebSession(request.server.database.db, token);
  // The account page lists when each browser was last active: a page load says so (once a minute).
  if (session) await touchWebSession(request.server.database.db, session, request.ip);
  return session;
}

/** The sign-in of a request outside the pages (no cookie plugin there: the authorization endpoint's prompt=none). */
export async function readWebSessionFromHeaders(request: FastifyRequest): Promise<WebSession | undefined> {
  const header = request.headers.cookie;
  if (!header) return undefined;
  const token = fastifyCookie.parse(header)[SESSION_COOKIE];
  return token ? findWebSession(request.server.database.db, token) : undefined;
}

/**
 * After a sign-in step: signs the browser in (`signed_in`), or starts the sign-in that waits for
 * its two-step code (`needs_code`), remembering how the person proved who they are (an ID token's
 * amr; a sign-up's or reset's new password counts as a password), replacing any earlier sign-in of this browser under a new token.
 */
export async function startBrowserSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  outcome: { kind: 'signed_in' | 'needs_code'; account: Account; method?: SignInMethod; twoStep?: TwoStep },
): Promise<void> {
  await endWebSession(request, reply);
  const { token, ttlMs } = await createWebSession(
    request.server.database.db,
    outcome.account.userId,
    outcome.kind === 'needs_code',
    Date.now(),
    authMethodsOf(outcome.method ?? 'password', outcome.twoStep),
    { userAgent: request.headers['user-agent'], ip: request.ip },
  );
  reply.setCookie(SESSION_COOKIE, token, cookieOptions(request, ttlMs));
}

/** Signs this browser out. */
export async function endWebSession(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const token = request.cookies[SESSION_COOKIE];
  if (!token) return;
  await deleteWebSession(request.server.database.db, token);
  forgetWebSession(reply);
}

/** Clears the cookie of a sign-in that has ended already (too many wrong codes). */
export function forgetWebSession(reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, { path: '/' });
}
