import type { FastifyInstance } from 'fastify';
import { classes } from '../classes/index.ts';
import { registerClasses } from '../rest/routes.ts';
import { readBearerToken } from './bearer-auth.ts';
import { limitRequests } from './rate-limit.ts';

/** The bearer-authenticated v4 API under /v4 (the classes), rate limited per user and application. */
export async function v4Api(api: FastifyInstance): Promise<void> {
  // The classes take JSON only: without this, a JSON text sent as text/plain was parsed as a
  // string and refused as "must be object"; now it is 415 Unsupported Content-Type.
  api.removeContentTypeParser('text/plain');
  api.addHook('onRequest', readBearerToken);
  await limitRequests(api, {
    perMinute: api.config.rateLimitV4,
    name: 'v4',
    // onRequest, after readBearerToken (the plugin's own hook runs first): a route's preHandler
    // (the scope check) would otherwise answer 401/403 before the request is counted.
    hook: 'onRequest',
    keyGenerator: (request) => (request.auth ? `user:${request.auth.userId}:${request.auth.clientId}` : `ip:${request.ip}`),
  });
  await registerClasses(api, classes);
}
