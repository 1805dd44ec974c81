import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { reusableQuery } from '../db/reusable-query.ts';
import type { Schema } from '../db/schema.ts';
import { hashSecret } from '../oauth/secrets.ts';
import { ApiError } from './errors.ts';

export interface BearerAuth {
  userId: string;
  clientId: string;
  sessionId: string;
  scopes: ReadonlySet<string>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The v4 caller, when the request carried a valid access token. */
    auth?: BearerAuth;
  }
}

const invalidToken = (message: string) =>
  new ApiError(401, message, { headers: { 'www-authenticate': `Bearer realm="v4", error="invalid_token", error_description="${message}"` } });

function tokenOf(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw invalidToken('The Authorization header is not a Bearer token');
    return match[1];
  }
  const header = request.headers['x-service-token'];
  return typeof header === 'string' && header !== '' ? header : undefined;
}

const sessionByAccessToken = reusableQuery((db: Kysely<Schema>, { hash }: { hash: string }) =>
  db.selectFrom('sessions').select(['session_id', 'user_id', 'client_id', 'scope', 'access_expires_at']).where('access_token_hash', '=', hash),
);

/**
 * onRequest hook of the v4 API: a request with a token is authenticated here (401 when the
 * token is unknown or expired); a request without one goes on unauthenticated.
 */
export async function readBearerToken(request: FastifyRequest): Promise<void> {
  const token = tokenOf(request);
  if (token === undefined) return;
  const [session] = await sessionByAccessToken(request.server.database.db, { hash: hashSecret(token) });
  if (!session) throw invalidToken('The access token is unknown or revoked');
  if (session.access_expires_at <= Date.now()) throw invalidToken('The access token has expired; refresh it');
  request.auth = { userId: session.user_id, clientId: session.client_id, sessionId: session.session_id, scopes: new Set(session.scope.split(' ')) };
}

/** preHandler: the request must carry a valid access token granting every scope named. */
export function requireScopes(...scopes: string[]) {
  return async function requireScopesHook(request: FastifyRequest): Promise<void> {
    if (!request.auth) {
      throw new ApiError(401, 'An access token is required: Authorization: Bearer <token> or X-Service-Token', {
        headers: { 'www-authenticate': 'Bearer realm="v4"' },
      });
    }
    const missing = scopes.filter((scope) => !request.auth!.scopes.has(scope));
    if (missing.length > 0) {
      throw new ApiError(403, `This needs the scope ${missing.join(' ')}`, {
        headers: { 'www-authenticate': `Bearer realm="v4", error="insufficient_scope", scope="${scopes.join(' ')}"` },
        details: { missingScopes: missing },
      });
    }
  };
}
