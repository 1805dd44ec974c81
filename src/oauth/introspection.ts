import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { usernameOf } from '../accounts/accounts.ts';
import type { Schema } from '../db/schema.ts';
import { hashSecret } from '../secrets/random-secrets.ts';
import { authenticateClient, readCredentials } from './client-auth.ts';
import { InvalidClient, InvalidRequest } from './errors.ts';
import { readParams } from './params.ts';
import { introspectionSchema } from './schemas.ts';
import { ACCESS_TOKEN_TTL_MS, REFRESH_TOKEN_TTL_MS } from './sessions.ts';

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
    if (!client.confidential)
      throw new InvalidClient(
        'Token introspection is for confidential clients; this client has no secret',
        credentials.usedBasic,
      );
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

/** A live token as introspection describes it: which session, which of its two tokens, and when. */
interface TokenInfo {
  sessionId: string;
  userId: string;
  username: string | null;
  clientId: string;
  scope: string;
  kind: 'access_token' | 'refresh_token';
  issuedAt: number;
  expiresAt: number;
}

/**
 * The session whose current access or refresh token `token` is, if that token has not expired.
 * Rotated-away, revoked and unknown tokens are all simply not found.
 */
async function findLiveToken(db: Kysely<Schema>, token: string, now = Date.now()): Promise<TokenInfo | undefined> {
  const hash = hashSecret(token);
  const row = await db
    .selectFrom('sessions')
    .select((eb) => [
      'sessions.session_id',
      'sessions.user_id',
      usernameOf(eb.ref('sessions.user_id')).as('username'),
      'sessions.client_id',
      'sessions.scope',
      'sessions.access_token_hash',
      'sessions.access_expires_at',
      'sessions.refresh_expires_at',
    ])
    .where((eb) => eb.or([eb('sessions.access_token_hash', '=', hash), eb('sessions.refresh_token_hash', '=', hash)]))
    .executeTakeFirst();
  if (!row) return undefined;
  const kind = row.access_token_hash === hash ? 'access_token' : 'refresh_token';
  const expiresAt = kind === 'access_token' ? row.access_expires_at : row.refresh_expires_at;
  if (expiresAt <= now) return undefined;
  return {
    sessionId: row.session_id,
    userId: row.user_id,
    username: row.username,
    clientId: row.client_id,
    scope: row.scope,
    kind,
    // Both tokens are issued together and live a fixed time, so their issue time is derived.
    issuedAt: expiresAt - (kind === 'access_token' ? ACCESS_TOKEN_TTL_MS : REFRESH_TOKEN_TTL_MS),
    expiresAt,
  };
}
