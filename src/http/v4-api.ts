import type { FastifyInstance } from 'fastify';
import { classes } from '../classes/index.ts';
import { registerClasses } from '../rest/routes.ts';
import { readBearerToken } from './bearer-auth.ts';
import { limitRequests } from './rate-limit.ts';

/** The bearer-authenticated v4 API under /v4 (the classes), rate limited per user and application. */
export async function v4Api(api: FastifyInstance): Promise<void> {
  api.addHook('onRequest', readBearerToken);
  await limitRequests(api, {
    perMinute: api.config.rateLimitV4,
    name: 'v4',
    hook: 'preHandler',
    keyGenerator: (request) => (request.auth ? `user:${request.auth.userId}:${request.auth.clientId}` : `ip:${request.ip}`),
  });
  await registerClasses(api, classes);
}
