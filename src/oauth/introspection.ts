import type { FastifyInstance } from 'fastify';
import { authenticateClient, readCredentials } from './client-auth.ts';
import { InvalidClient, InvalidRequest } from './errors.ts';
import { readParams } from './params.ts';
import { introspectionSchema } from './schemas.ts';
import { findLiveToken } from './sessions.ts';

const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * POST /v4/introspect (RFC 7662), for confidential clients: a public client's credentials prove
 * nothing (its client id is public), so it is invalid_client. A client learns about its own live
 * tokens only; every other token, including another client's, is {"active":false}.
 */
export async function introspectionRoute(app: FastifyInstance): Promise<void> {
  app.post('/introspect', { schema: introspectionSchema }, async (request, reply) => {
    const params = readParams(request.body);
    const credentials = readCredentials(request.headers.authorization, params);
    const client = await authenticateClient(app.database.db, credentials);
    if (!client.confidential) throw new InvalidClient('Token introspection is for confidential clients; this client has no secret', credentials.usedBasic);
    if (!params.token) throw new InvalidRequest('token is required');
    const token = await findLiveToken(app.database.db, params.token);
    reply.header('cache-control', 'no-store');
    if (!token || token.clientId !== client.clientId) return { active: false };
    return {
      active: true,
      scope: token.scope,
      client_id: token.clientId,
      ...(token.username !== null ? { username: token.username } : {}),
      sub: token.userId,
      token_type: 'Bearer',
      exp: seconds(token.expiresAt),
      iat: seconds(token.issuedAt),
    };
  });
}
