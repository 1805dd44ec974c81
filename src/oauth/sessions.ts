import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { hashSecret, newSecret } from './secrets.ts';

export const ACCESS_TOKEN_TTL_MS = 60 * 60 * 1000;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export interface IssuedTokens {
  sessionId: string;
  accessToken: string;
  refreshToken: string;
  accessExpiresAt: number;
  refreshExpiresAt: number;
  scope: string;
  issuedAt: number;
}

export interface SessionRow {
  sessionId: string;
  userId: string;
  clientId: string;
  scope: string;
  refreshExpiresAt: number;
}

function newTokenPair(now: number) {
  const accessToken = newSecret();
  const refreshToken = newSecret();
  return {
    accessToken,
    refreshToken,
    row: {
      access_token_hash: hashSecret(accessToken),
      access_expires_at: now + ACCESS_TOKEN_TTL_MS,
      refresh_token_hash: hashSecret(refreshToken),
      refresh_expires_at: now + REFRESH_TOKEN_TTL_MS,
    },
  };
}

/** Starts a token family for a user and application. */
export async function createSession(db: Kysely<Schema>, grant: { userId: string; clientId: string; scope: string }, now = Date.now()): Promise<IssuedTokens> {
  const sessionId = randomUUID();
  const pair = newTokenPair(now);
  await db
    .insertInto('sessions')
    .values({ session_id: sessionId, user_id: grant.userId, client_id: grant.clientId, scope: grant.scope, created_at: now, ...pair.row })
    .execute();
  return { sessionId, ...pair, accessExpiresAt: pair.row.access_expires_at, refreshExpiresAt: pair.row.refresh_expires_at, scope: grant.scope, issuedAt: now };
}

export async function findSessionByRefreshToken(db: Kysely<Schema>, refreshToken: string): Promise<SessionRow | undefined> {
  const row = await db
    .selectFrom('sessions')
    .select(['session_id', 'user_id', 'client_id', 'scope', 'refresh_expires_at'])
    .where('refresh_token_hash', '=', hashSecret(refreshToken))
    .executeTakeFirst();
  return row && { sessionId: row.session_id, userId: row.user_id, clientId: row.client_id, scope: row.scope, refreshExpiresAt: row.refresh_expires_at };
}

/** The session a refresh token belonged to before it was rotated away, if it did. */
export async function findRotatedSession(db: Kysely<Schema>, refreshToken: string): Promise<string | undefined> {
  const row = await db.selectFrom('rotated_refresh_tokens').select('session_id').where('refresh_token_hash', '=', hashSecret(refreshToken)).executeTakeFirst();
  return row?.session_id;
}

/**
 * Replaces both tokens of the session whose refresh token is `refreshToken`. Resolves to
 * undefined when that token was rotated concurrently (it lost the race).
 */
export async function rotateSession(db: Kysely<Schema>, session: SessionRow, refreshToken: string, now = Date.now()): Promise<IssuedTokens | undefined> {
  const pair = newTokenPair(now);
  const oldHash = hashSecret(refreshToken);
  const updated = await db
    .updateTable('sessions')
    .set(pair.row)
    .where('session_id', '=', session.sessionId)
    .where('refresh_token_hash', '=', oldHash)
    .executeTakeFirst();
  if (updated.numUpdatedRows === 0n) return undefined;
  await db
    .insertInto('rotated_refresh_tokens')
    .values({ refresh_token_hash: oldHash, session_id: session.sessionId, expires_at: session.refreshExpiresAt })
    .execute();
  return {
    sessionId: session.sessionId,
    ...pair,
    accessExpiresAt: pair.row.access_expires_at,
    refreshExpiresAt: pair.row.refresh_expires_at,
    scope: session.scope,
    issuedAt: now,
  };
}

export async function revokeSession(db: Kysely<Schema>, sessionId: string): Promise<boolean> {
  const result = await db.deleteFrom('sessions').where('session_id', '=', sessionId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** The token response: every field of the spec plus RFC 6749's expires_in. */
export function tokenResponse(tokens: IssuedTokens) {
  const now = tokens.issuedAt / 1000;
  return {
    token_type: 'Bearer',
    access_token: tokens.accessToken,
    refresh_token: tokens.refreshToken,
    access_token_expiration: Math.floor(tokens.accessExpiresAt / 1000),
    refresh_token_expiration: Math.floor(tokens.refreshExpiresAt / 1000),
    access_token_expires_in: tokens.accessExpiresAt / 1000 - now,
    refresh_token_expires_in: tokens.refreshExpiresAt / 1000 - now,
    expires_in: Math.round((tokens.accessExpiresAt - tokens.issuedAt) / 1000),
    scope: tokens.scope,
    now,
  };
}
