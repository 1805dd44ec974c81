import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  claimSubmitToken,
  findSubmitAnswer,
  keepSubmitAnswer,
  releaseSubmitToken,
  type SubmitAnswer,
} from '../accounts/submit-tokens.ts';
import { ApiError } from '../http/errors.ts';
import { field } from './pages.ts';

/**
 * The pages' side of single-use submit tokens (src/accounts/submit-tokens.ts): every page gets a
 * fresh token (`it.submitToken`), which the forms that create, send or change something carry in
 * the hidden input `submit_token`. Their route calls `onlyOnce` before acting: the first submit of
 * a token acts, and its answer (status, the headers that matter, the page) is kept; a repeated or
 * simultaneous submit waits for it and gets the same answer, without acting again. A form posted
 * without a token (an outside client posting the DESIGN form) acts as before.
 */

export const SUBMIT_FIELD = 'submit_token';

/** The answer's headers a repeat needs: where it goes on to, its cookies (a flow's), its type and caching. */
const KEPT_HEADERS = ['location', 'set-cookie', 'content-type', 'cache-control', 'retry-after'];
/** A repeat waits at most this long for the first submit's answer. */
const WAIT_MS = 15_000;
const POLL_MS = 25;

/** The first submits at work: their token, and the page they answer as sent (before compression). */
const claimed = new WeakMap<FastifyRequest, { route: string; token: string; body: string | null }>();

const routeOf = (request: FastifyRequest) => request.url.split('?', 1)[0]!;

/**
 * For a form's route, before it acts: answers false when this submit is to act (the first of its
 * token, or one without a token), or sends the first submit's answer again and answers true.
 */
export async function onlyOnce(request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  const token = field(request.body, SUBMIT_FIELD);
  if (token === '') return false;
  if (!/^[A-Za-z0-9_-]{43}$/.test(token))
    throw new ApiError(400, 'This form is damaged. Go back, reload the page and submit it again.');
  const db = request.server.database.db;
  const route = routeOf(request);
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    if (await claimSubmitToken(db, route, token)) {
      const claim = { route, token, body: '' as string | null };
      claimed.set(request, claim);
      // The answer as the route sends it: onSend would see it compressed already (a stream).
      const send = reply.send.bind(reply);
      reply.send = ((payload?: unknown) => {
        claim.body = typeof payload === 'string' ? payload : payload === undefined || payload === null ? '' : null;
        return send(payload);
      }) as typeof reply.send;
      return false;
    }
    const answer = await findSubmitAnswer(db, route, token);
    if (answer !== undefined && answer !== 'pending') {
      sendAgain(reply, answer);
      return true;
    }
    // Pending: the first submit is at work. Free (it failed): the loop claims it for this one.
    if (answer === 'pending') await sleep(POLL_MS);
  }
  throw new ApiError(503, 'This form is still being sent. Wait a moment, then reload the page.', {
    headers: { 'retry-after': '5' },
  });
}

function sendAgain(reply: FastifyReply, answer: SubmitAnswer): void {
  reply.code(answer.status);
  for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value);
  reply.send(answer.body);
}

/**
 * Keeps the answer of every first submit (an onSend hook of the pages, after the cookie plugin's,
 * so its cookies are in it); a failed one (5xx) gives its token back, so the person can try again.
 */
export function keepFirstAnswers(web: FastifyInstance): void {
  web.addHook('onSend', async (request, reply, payload) => {
    const claim = claimed.get(request);
    if (!claim) return payload;
    claimed.delete(request);
    const db = request.server.database.db;
    if (reply.statusCode >= 500 || claim.body === null) {
      await releaseSubmitToken(db, claim.route, claim.token);
      return payload;
    }
    const headers: SubmitAnswer['headers'] = {};
    for (const name of KEPT_HEADERS) {
      const value = reply.getHeader(name);
      if (typeof value === 'string' || Array.isArray(value)) headers[name] = value;
      else if (typeof value === 'number') headers[name] = String(value);
    }
    await keepSubmitAnswer(db, claim.route, claim.token, {
      status: reply.statusCode,
      headers,
      body: claim.body,
    });
    return payload;
  });
  // An answer that never reached onSend (the connection went away): the token is free again.
  web.addHook('onResponse', async (request) => {
    const claim = claimed.get(request);
    if (!claim) return;
    claimed.delete(request);
    await releaseSubmitToken(request.server.database.db, claim.route, claim.token);
  });
}
