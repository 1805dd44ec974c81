import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountContext } from '../accounts/account-service.ts';
import type { SignInContext, SignInLimits } from '../accounts/sign-in.ts';
import { attemptLimit } from '../http/attempt-limits.ts';

declare module 'fastify' {
  interface FastifyInstance {
    signInLimits: SignInLimits;
  }
}

const WINDOW_MS = 15 * 60_000;

/**
 * Registers the attempt limits every page that checks a password or a two-step code shares (the
 * login pages, the account page, …): one set per server, so all of them count in the same buckets.
 * DESIGN: 10 a window per account and per IP for codes.
 */
export function registerSignInLimits(web: FastifyInstance): void {
  web.decorate('signInLimits', {
    passwordByIp: attemptLimit(web, { name: 'password-ip', max: 30, windowMs: WINDOW_MS }),
    passwordByAccount: attemptLimit(web, { name: 'password-account', max: 10, windowMs: WINDOW_MS }),
    codeByIp: attemptLimit(web, { name: 'totp-ip', max: 10, windowMs: WINDOW_MS }),
    codeByAccount: attemptLimit(web, { name: 'totp-account', max: 10, windowMs: WINDOW_MS }),
  });
}

/** What the sign-in and account services need from a page's request. */
export function signInContext(request: FastifyRequest, where: { page: string; clientId?: string }): SignInContext {
  return {
    db: request.server.database.db,
    ip: request.ip,
    log: request.log,
    limits: request.server.signInLimits,
    ...where,
  };
}

/** What the account services need: the sign-in context and the applications' sessions they may end. */
export function accountContext(request: FastifyRequest, where: { page: string }): AccountContext {
  return { ...signInContext(request, where), applicationSessions: request.server.applicationSessions };
}
