import type { FastifyRequest } from 'fastify';
import { findSessionByAccessToken, noteSessionUse } from '../oauth/sessions.ts';
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
    /** Why the request's token was refused, until the v4 rate limit has counted the request. */
    bearerError?: ApiError;
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

/**
 * onRequest hook of the v4 API: a request with a token is authenticated here (401 when the
 * token is unknown or expired); a request without one goes on unauthenticated.
 */
export async function readBearerToken(request: FastifyRequest): Promise<void> {
  const token = tokenOf(request);
  if (token === undefined) return;
  const db = request.server.database.db;
  const session = await findSessionByAccessToken(db, token);
  if (!session) throw invalidToken('The access token is unknown or revoked');
  const now = Date.now();
  if (session.accessExpiresAt <= now) throw invalidToken('The access token has expired; refresh it');
  // Not awaited: the answer does not depend on it, and a failure only leaves the time older.
  noteSessionUse(db, session, now)?.catch((err: unknown) => request.log.warn({ err }, 'could not note when a session was last used'));
  request.auth = { userId: session.userId, clientId: session.clientId, sessionId: session.sessionId, scopes: new Set(session.scope.split(' ')) };
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

/**
 * The same as readBearerToken in two steps, so that the v4 rate limit counts a request between
 * them: this onRequest hook reads the token and keeps a refusal for later, and
 * rejectRefusedBearerToken (preParsing, after every onRequest hook including the limiter's)
 * answers it. Guessed tokens are then counted, and refused with 429 past the limit.
 */
export async function readBearerTokenForLimit(request: FastifyRequest): Promise<void> {
  try {
    await readBearerToken(request);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    request.bearerError = error;
  }
}

export async function rejectRefusedBearerToken(request: FastifyRequest): Promise<void> {
  if (request.bearerError) throw request.bearerError;
}
