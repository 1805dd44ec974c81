import type { FastifyInstance } from 'fastify';
import { type BearerAuthOptions, bearerAuth, callerOf } from './bearer-auth.ts';
import { limitRequests } from './rate-limit.ts';

/**
 * Makes `api` (the v4 API's scope under /v4) bearer-authenticated, with `lookup` finding the
 * caller of a token, and rate limited per user and application; app.ts then registers the classes in it.
 */
export async function protectV4Api(api: FastifyInstance, options: BearerAuthOptions): Promise<void> {
  // The classes take JSON only: without this, a JSON text sent as text/plain was parsed as a
  // string and refused as "must be object"; now it is 415 Unsupported Content-Type.
  api.removeContentTypeParser('text/plain');
  // The token is read first (the limit's key depends on it), but a refused token is answered only
  // after the limit has counted the request (see bearerAuth): a guessed token counts against its IP like any request.
  await api.register(bearerAuth, options);
  await limitRequests(api, {
    perMinute: api.config.rateLimitV4,
    name: 'v4',
    // onRequest (the plugin adds it to each route, so it runs after bearerAuth's): a route's
    // preHandler (the scope check) would otherwise answer 401/403 before the request is counted.
    hook: 'onRequest',
    keyGenerator: (request) => {
      const caller = callerOf(request);
      return caller ? `user:${caller.userId}:${caller.clientId}` : `ip:${request.ip}`;
    },
  });
}
