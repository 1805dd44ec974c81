import type { FastifyInstance, FastifyReply } from 'fastify';
import { START_PAGE, sendMessage } from './pages.ts';

/** The paths under which every address is a page a person may open (the API's /v4 and /v1 are not). */
const PAGE_PREFIXES = ['/account', '/login', '/device', '/spawn'] as const;

/**
 * An unknown address under a page prefix (GET /account/nope) answers a 404 page in the service's
 * look, with the way on, instead of the API's JSON error. Wildcard routes, so a known page's
 * static or parametric route always wins. Other methods keep the API's 404 and 405 answers: the
 * catch-alls are marked as answering unknown paths, so a POST there is still 404, not 405 (http/error-handler.ts).
 */
export async function notFoundPages(web: FastifyInstance): Promise<void> {
  for (const prefix of PAGE_PREFIXES) {
    web.get(`${prefix}/*`, { config: { unknownPaths: true } }, async (_request, reply) => sendNotFoundPage(reply));
  }
}

/** The 404 page in the service's look, with the way on. */
export function sendNotFoundPage(reply: FastifyReply): FastifyReply {
  return sendMessage(
    reply,
    'Page not found',
    'There is no page at this address. It may be mistyped, or out of date.',
    404,
    [{ href: '/account', text: 'Go to your account' }, START_PAGE],
  );
}
