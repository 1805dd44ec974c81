import type { FastifyInstance } from 'fastify';
import { jwksSchema } from './schemas.ts';

/**
 * GET /v4/jwks: the public keys ID tokens are signed with. Cacheable for five minutes: a new key
 * is published an hour before it signs (an immediate rotation is the exception, and relying
 * parties fetch the set again on an unknown kid).
 */
export async function jwksRoute(app: FastifyInstance): Promise<void> {
  app.get('/jwks', { schema: jwksSchema }, async (_request, reply) =>
    reply
      .header('cache-control', 'public, max-age=300')
      .type('application/jwk-set+json')
      .send(await app.signingKeys.jwks()),
  );
}
