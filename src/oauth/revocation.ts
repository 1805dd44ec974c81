import type { FastifyInstance } from 'fastify';
import { authenticateClient, readCredentials } from './client-auth.ts';
import { InvalidRequest } from './errors.ts';
import { readParams } from './params.ts';
import { revocationSchema } from './schemas.ts';
import { endSessionByToken } from './sessions.ts';

/**
 * POST /v4/revoke (RFC 7009): the client authenticates as at the token endpoint and names one of
 * its tokens; either token of a session ends the whole session. The answer is 200 with an empty
 * body whether or not anything was revoked (unknown, expired, already revoked, another client's),
 * so it tells the caller nothing about tokens that are not its own. `token_type_hint` is
 * accepted and not needed: both kinds are looked up at once.
 */
export async function revocationRoute(app: FastifyInstance): Promise<void> {
  app.post('/revoke', { schema: revocationSchema }, async (request, reply) => {
    const params = readParams(request.body);
    const client = await authenticateClient(app.database.db, readCredentials(request.headers.authorization, params));
    if (!params.token) throw new InvalidRequest('token is required');
    await endSessionByToken(app.database.db, client.clientId, params.token);
    return reply.code(200).header('cache-control', 'no-store').send();
  });
}
