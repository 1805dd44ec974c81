import type { FastifyInstance } from 'fastify';
import { requireScopes } from '../http/bearer-auth.ts';
import { revokeSession } from './sessions.ts';

/** DELETE /v4/session: ends the session of the presented access token (both its tokens). */
export async function signOutRoute(api: FastifyInstance): Promise<void> {
  api.delete('/session', { preHandler: requireScopes() }, async (request, reply) => {
    await revokeSession(api.database.db, request.auth!.sessionId);
    return reply.code(204).send();
  });
}
