import type { FastifyInstance, FastifyRequest } from 'fastify';
import { acceptTotpCode, findAccountByLogin, type Account } from '../accounts/accounts.ts';
import { verifyPassword } from '../accounts/passwords.ts';
import { recordSecurityEvent } from '../accounts/security-events.ts';
import { verifyTotp } from '../accounts/totp.ts';
import { attemptLimit, countAttempt, type AttemptLimit } from '../http/attempt-limits.ts';

/**
 * The attempt limits of every page that checks a password or a two-step code (the login pages
 * and the account page). Created once per server, so all of them count in the same buckets.
 */
export interface SignInLimits {
  passwordByIp: AttemptLimit;
  passwordByAccount: AttemptLimit;
  codeByIp: AttemptLimit;
  codeByAccount: AttemptLimit;
}

declare module 'fastify' {
  interface FastifyInstance {
    signInLimits: SignInLimits;
  }
}

const WINDOW_MS = 15 * 60_000;

/** Registers the shared limits on the pages' scope. DESIGN: 10 a window per account and per IP for codes. */
export function registerSignInLimits(web: FastifyInstance): void {
  web.decorate('signInLimits', {
    passwordByIp: attemptLimit(web, { name: 'password-ip', max: 30, windowMs: WINDOW_MS }),
    passwordByAccount: attemptLimit(web, { name: 'password-account', max: 10, windowMs: WINDOW_MS }),
    codeByIp: attemptLimit(web, { name: 'totp-ip', max: 10, windowMs: WINDOW_MS }),
    codeByAccount: attemptLimit(web, { name: 'totp-account', max: 10, windowMs: WINDOW_MS }),
  });
}

/** Which page checks: recorded with the security events. */
interface CheckContext {
  page: 'sign_in' | 'account';
  /** The application being signed in to (the login pages). */
  clientId?: string;
}

/**
 * The outcome of a password or code check: the account; or a refusal by a limit (`retryAfterMs`,
 * and whether the account's own limit refused it); or a wrong answer (`used`: a right code whose
 * time step was accepted before).
 */
export type CheckOutcome =
  | { ok: true; account: Account }
  | { ok: false; retryAfterMs: number; accountLimited: boolean; used: boolean };

const wrong = (used = false): CheckOutcome => ({ ok: false, retryAfterMs: 0, accountLimited: false, used });

/**
 * Checks a password under the attempt limits: the attempt is counted before the slow hash check
 * and given back when the password is right. `account` is the signed-in account (the account page),
 * else the one `login` names (a username or email address). Failures and lockouts are recorded.
 */
export async function checkSignInPassword(
  request: FastifyRequest,
  password: string,
  who: { account: Account } | { login: string },
  context: CheckContext,
): Promise<CheckOutcome> {
  const { passwordByIp, passwordByAccount } = request.server.signInLimits;
  const db = request.server.database.db;
  const login = 'login' in who ? who.login : who.account.username;
  const account = 'account' in who ? who.account : await findAccountByLogin(db, login);
  const event = { userId: account?.userId, clientId: context.clientId };
  const attempt = await countAttempt([
    passwordByIp.of(request.ip),
    // Keyed by the account, so its username and its email address share one count.
    passwordByAccount.of(account ? `user:${account.userId}` : `login:${login.toLowerCase()}`),
  ]);
  if (attempt.refusedBy.length > 0) {
    await recordSecurityEvent(db, request, { kind: 'sign_in_locked_out', ...event, details: { step: 'password', page: context.page, retry_after_s: Math.ceil(attempt.retryAfterMs / 1000) } });
    return { ok: false, retryAfterMs: attempt.retryAfterMs, accountLimited: attempt.refusedBy.includes(passwordByAccount), used: false };
  }
  if (!(await verifyPassword(account?.passwordHash, password)) || !account) {
    await recordSecurityEvent(db, request, { kind: 'sign_in_failed', ...event, details: { reason: account ? 'wrong_password' : 'unknown_account', page: context.page } });
    return wrong();
  }
  await attempt.succeeded();
  return { ok: true, account };
}

/**
 * Checks a two-step code of `account` under the attempt limits (per IP and per account). A code of
 * the account's secret is accepted once (acceptTotpCode); with `setupSecret` (turning two-step on)
 * the code is checked against that secret instead. Failures and lockouts are recorded.
 */
export async function checkTwoStepCode(request: FastifyRequest, account: Account, code: string, context: CheckContext & { setupSecret?: string }): Promise<CheckOutcome> {
  const { codeByIp, codeByAccount } = request.server.signInLimits;
  const db = request.server.database.db;
  const event = { userId: account.userId, clientId: context.clientId };
  const attempt = await countAttempt([codeByIp.of(request.ip), codeByAccount.of(account.userId)]);
  if (attempt.refusedBy.length > 0) {
    await recordSecurityEvent(db, request, { kind: 'sign_in_locked_out', ...event, details: { step: 'two_step', page: context.page, retry_after_s: Math.ceil(attempt.retryAfterMs / 1000) } });
    return { ok: false, retryAfterMs: attempt.retryAfterMs, accountLimited: attempt.refusedBy.includes(codeByAccount), used: false };
  }
  const outcome = context.setupSecret !== undefined ? (verifyTotp(context.setupSecret, code) ? 'accepted' : 'wrong') : await acceptTotpCode(db, account.userId, code);
  if (outcome !== 'accepted') {
    await recordSecurityEvent(db, request, { kind: 'two_step_failed', ...event, details: { page: context.page, reason: outcome } });
    return wrong(outcome === 'used');
  }
  await attempt.succeeded();
  return { ok: true, account };
}
