import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { userClaimsOf } from '../accounts/accounts.ts';
import { scopedClaims } from './id-tokens.ts';
import { userInfoSchema } from './schemas.ts';
import { findAccessToken } from './sessions.ts';

/** An error of a protected resource (RFC 6750 §3): its status, and the same code in WWW-Authenticate and the body. */
function bearerError(reply: FastifyReply, status: 401 | 403, error: string, description: string) {
  return reply
    .code(status)
    .header('www-authenticate', `Bearer error="${error}", error_description="${description}"`)
    .header('cache-control', 'no-store')
    .send({ error, error_description: description });
}

async function userInfo(request: FastifyRequest, reply: FastifyReply) {
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(request.headers.authorization ?? '');
  if (!match) {
    // No credentials at all: RFC 6750 §3.1 sends the challenge without an error code.
    if (request.headers.authorization === undefined)
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .header('cache-control', 'no-store')
        .send({ error: 'invalid_token', error_description: 'An access token is required (Authorization: Bearer …)' });
    return bearerError(reply, 401, 'invalid_request', 'The Authorization header must be Bearer and an access token');
  }
  const { db } = request.server.database;
  const now = Date.now();
  const caller = await findAccessToken(db, match[1]!, now, request.log);
  if (!caller || caller.expiresAt <= now)
    return bearerError(reply, 401, 'invalid_token', 'The access token is unknown, expired or revoked');
  if (!caller.scopes.has('openid'))
    return bearerError(reply, 403, 'insufficient_scope', 'The access token was not granted the openid scope');
  const user = await db.selectNoFrom((eb) => userClaimsOf(eb.val(caller.userId))).executeTakeFirstOrThrow();
  return reply.header('cache-control', 'no-store').send({ sub: caller.userId, ...scopedClaims(caller.scopes, user) });
}

/** GET and POST /v4/userinfo (OpenID Connect Core §5.3): the claims of the access token's scopes. */
export async function userInfoRoute(app: FastifyInstance): Promise<void> {
  app.get('/userinfo', { schema: userInfoSchema }, userInfo);
  app.post('/userinfo', { schema: { ...userInfoSchema, operationId: 'userInfoPost' } }, userInfo);
}
