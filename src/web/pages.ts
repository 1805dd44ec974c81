import type { FastifyReply } from 'fastify';
import { newSecret } from '../secrets/random-secrets.ts';
import { renderPage } from './render.ts';

/**
 * Sends a server-rendered page; pages are never cached (they carry CSRF tokens). Every page gets a
 * fresh single-use submit token (`it.submitToken`) for its forms that act (single-use-submit.ts).
 */
export function sendPage(
  reply: FastifyReply,
  template: string,
  data: Record<string, unknown>,
  status = 200,
): FastifyReply {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(
      renderPage(template, {
        signUpOpen: reply.server.config.signUp === 'open',
        submitToken: newSecret(),
        ...data,
        csrfToken: reply.generateCsrf(),
      }),
    );
}

/** A link of an end page, to where the person goes on from it. */
export interface NextStep {
  href: string;
  text: string;
}

/** The way on from a page that has no better one: the start page, which links every part of the service. */
export const START_PAGE: NextStep = { href: '/', text: 'Go to the start page' };

/**
 * Sends a message page (an end page): its title, one sentence, and where to go on from it, the
 * first of `next` shown as the main way on. No end page is a dead end (docs/decisions/0093).
 */
export function sendMessage(
  reply: FastifyReply,
  title: string,
  message: string,
  status = 200,
  next: readonly NextStep[] = [START_PAGE],
): FastifyReply {
  return sendPage(reply, 'message', { title, message, error: status >= 400, links: next }, status);
}

/** What a sign-in of a locked account says: never why (the reason is for operators). */
export const ACCOUNT_LOCKED = 'This account is locked. Contact the operator of this service to have it unlocked.';

const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

/**
 * For a page answering 429: sets Retry-After (as the API's 429s do) and answers the sentence that
 * tells the user how long to wait, e.g. `Too many wrong codes. Try again in 2 minute(s).`
 */
export function tooManyAttempts(reply: FastifyReply, what: string, waitMs: number, then = 'Try again'): string {
  reply.header('retry-after', String(Math.ceil(waitMs / 1000)));
  return `Too many ${what}. ${then} in ${minutes(waitMs)} minute(s).`;
}

/** A form field as one string: a missing or repeated field (which arrives as an array) is ''. */
export function field(body: unknown, name: string): string {
  if (typeof body !== 'object' || body === null || !Object.hasOwn(body, name)) return '';
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : '';
}

/** What a page says to a wrong two-step code (a TOTP code whose step was used, or any other). */
export function wrongCodeMessage(outcome: { reason: string }): string {
  return outcome.reason === 'used_code'
    ? 'That code was used already. Wait for the next one.'
    : 'That code is not right. Codes change every 30 seconds.';
}
