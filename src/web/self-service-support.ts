import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccountMail, SendAccountMail } from '../accounts/account-mail.ts';
import type { SelfServiceContext } from '../accounts/self-service.ts';
import { type AttemptLimit, attemptLimit, countAttempt } from '../http/attempt-limits.ts';
import type { MailData, MailKind } from '../mail/index.ts';
import { field as formField } from './pages.ts';
import { accountContext } from './sign-in.ts';

/** What the self-service pages share: their request limits, the mail sender, the flow cookies and the return address. */

declare module 'fastify' {
  interface FastifyInstance {
    selfServiceLimits: { byAddress: AttemptLimit; byIp: AttemptLimit };
  }
}

const HOUR_MS = 60 * 60_000;

/** DESIGN: at most 5 requests per address per hour and 20 per IP per hour. */
export function registerSelfServiceLimits(web: FastifyInstance): void {
  web.decorate('selfServiceLimits', {
    byAddress: attemptLimit(web, { name: 'self-service-address', max: 5, windowMs: HOUR_MS }),
    byIp: attemptLimit(web, { name: 'self-service-ip', max: 20, windowMs: HOUR_MS }),
  });
}

/** Counts a request for a code or link (sign-up, reset, e-mail change); answers the wait when over a limit. */
export async function countCodeRequest(request: FastifyRequest, address: string): Promise<number> {
  const { byAddress, byIp } = request.server.selfServiceLimits;
  // Counted before anything is sent, atomically (attempt-limits), so a burst is held to the limit too.
  const attempt = await countAttempt([byAddress.of(`address:${address}`), byIp.of(request.ip)]);
  return attempt.retryAfterMs;
}

/** Whether anyone may create an account (SIGN_UP, default open): the sign-up by e-mail code. */
export function signUpOpen(web: FastifyInstance): boolean {
  return web.config.signUp === 'open';
}

/** Whether an operator's invitation opens the sign-up (SIGN_UP open or invite; closed: no sign-up at all). */
export function invitationsAccepted(web: FastifyInstance): boolean {
  return web.config.signUp !== 'closed';
}

/** The mail module's sender (app.mail: retries, metrics, header-injection guard) for the account messages. */
export function accountMailer(web: FastifyInstance): SendAccountMail {
  const send = <Kind extends MailKind>(to: string, mail: { kind: Kind; data: MailData[Kind] }) =>
    web.mail.send(mail.kind, to, mail.data);
  return async (to: string, mail: AccountMail) => (await send(to, mail)).outcome;
}

/** What the self-service steps need from a page's request; `page` names it in the security events. */
export function selfServiceContext(request: FastifyRequest, page: string): SelfServiceContext {
  const web = request.server;
  return {
    ...accountContext(request, { page }),
    secrets: web.secrets,
    send: accountMailer(web),
    links: { baseUrl: web.config.baseUrl, signUpOpen: web.config.signUp === 'open' },
  };
}

/** The browser's place in a sign-up or reset (a flow token of verification-requests), per purpose. */
export const FLOW_COOKIES = { sign_up: 'signup_flow', reset: 'reset_flow' } as const;
const FLOW_TTL_S = 24 * 60 * 60;

export function setFlowCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  purpose: keyof typeof FLOW_COOKIES,
  token: string,
): void {
  reply.setCookie(FLOW_COOKIES[purpose], token, {
    path: '/account',
    httpOnly: true,
    sameSite: 'lax',
    secure: request.server.config.baseUrl.startsWith('https:'),
    maxAge: FLOW_TTL_S,
  });
}

export function clearFlowCookie(reply: FastifyReply, purpose: keyof typeof FLOW_COOKIES): void {
  reply.clearCookie(FLOW_COOKIES[purpose], { path: '/account' });
}

export const flowToken = (request: FastifyRequest, purpose: keyof typeof FLOW_COOKIES): string | undefined =>
  request.cookies[FLOW_COOKIES[purpose]];

/**
 * Where a person goes after signing up: the OAuth login page they came from, or the account page.
 * Only these same-origin paths are accepted (no open redirect: no scheme, no host, no `//`, no `\`).
 */
export function safeReturnTo(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  if (value === '/account') return value;
  return /^\/login\/[A-Za-z0-9_-]{43}$/.test(value) ? value : null;
}

type FormRequest = FastifyRequest<{ Body: Record<string, unknown> | undefined }>;

/** A form field of the request as one string: a missing or repeated field is '' (pages.ts). */
export const field = (request: FormRequest, name: string): string => formField(request.body, name);
