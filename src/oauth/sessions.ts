import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { writesInWith } from '../db/dialect.ts';
import { reusableQuery } from '../db/reusable-query.ts';
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
  /** The stored hash of the refresh token it was found by (hashed once per request). */
  refreshTokenHash: string;
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
export async function createSession(
  db: Kysely<Schema>,
  grant: { userId: string; clientId: string; scope: string; /** chosen beforehand (a code claim names it) */ sessionId?: string },
  now = Date.now(),
): Promise<IssuedTokens> {
  const sessionId = grant.sessionId ?? randomUUID();
  const pair = newTokenPair(now);
  await insertSession(db, { session_id: sessionId, user_id: grant.userId, client_id: grant.clientId, scope: grant.scope, created_at: now, last_used_at: now, ...pair.row });
  return { sessionId, ...pair, accessExpiresAt: pair.row.access_expires_at, refreshExpiresAt: pair.row.refresh_expires_at, scope: grant.scope, issuedAt: now };
}

// The token endpoint's statements are compiled once (reusableQuery): building them per request
// cost more than running them.
const sessionByRefreshTokenHash = reusableQuery((db: Kysely<Schema>, { hash }: { hash: string }) =>
  db.selectFrom('sessions').select(['session_id', 'user_id', 'client_id', 'scope', 'refresh_expires_at']).where('refresh_token_hash', '=', hash),
);

const insertSession = reusableQuery(
  (
    db: Kysely<Schema>,
    row: { session_id: string; user_id: string; client_id: string; scope: string; created_at: number; last_used_at: number; access_token_hash: string; access_expires_at: number; refresh_token_hash: string; refresh_expires_at: number },
  ) => db.insertInto('sessions').values(row),
);

type Rotation = { sessionId: string; oldHash: string; access_token_hash: string; access_expires_at: number; refresh_token_hash: string; refresh_expires_at: number; now: number };

/** The session's new token pair, if its refresh token is still `oldHash` (a concurrent rotation wins once). */
const rotationOf = (db: Kysely<Schema>, values: Rotation) =>
  db
    .updateTable('sessions')
    .set({
      access_token_hash: values.access_token_hash,
      access_expires_at: values.access_expires_at,
      refresh_token_hash: values.refresh_token_hash,
      refresh_expires_at: values.refresh_expires_at,
      last_used_at: values.now,
    })
    .where('session_id', '=', values.sessionId)
    .where('refresh_token_hash', '=', values.oldHash)
    .returning('session_id');

const rotateTokens = reusableQuery(rotationOf);

/** The rotation and its record as one statement, where the dialect allows it (see writesInWith). */
const rotateAndRecord = reusableQuery((db: Kysely<Schema>, values: Rotation & { oldExpiresAt: number }) =>
  db
    .with('rotated', () => rotationOf(db, values))
    .insertInto('rotated_refresh_tokens')
    .columns(['refresh_token_hash', 'session_id', 'expires_at'])
    .expression((eb) => eb.selectFrom('rotated').select([eb.val(values.oldHash).as('refresh_token_hash'), 'rotated.session_id', eb.cast<number>(eb.val(values.oldExpiresAt), 'bigint').as('expires_at')]))
    .returning('session_id'),
);

const recordRotatedToken = reusableQuery((db: Kysely<Schema>, row: { refresh_token_hash: string; session_id: string; expires_at: number }) =>
  db.insertInto('rotated_refresh_tokens').values(row),
);

export async function findSessionByRefreshToken(db: Kysely<Schema>, refreshToken: string): Promise<SessionRow | undefined> {
  const refreshTokenHash = hashSecret(refreshToken);
  const [row] = await sessionByRefreshTokenHash(db, { hash: refreshTokenHash });
  return row && { sessionId: row.session_id, userId: row.user_id, clientId: row.client_id, scope: row.scope, refreshExpiresAt: row.refresh_expires_at, refreshTokenHash };
}

/** The session a refresh token belonged to before it was rotated away, if it did. */
export async function findRotatedSession(db: Kysely<Schema>, refreshToken: string): Promise<string | undefined> {
  const row = await db.selectFrom('rotated_refresh_tokens').select('session_id').where('refresh_token_hash', '=', hashSecret(refreshToken)).executeTakeFirst();
  return row?.session_id;
}

/**
 * Replaces both tokens of the session, found by its refresh token, and keeps the old token's hash
 * (reuse detection), atomically. Resolves to undefined when that token was rotated concurrently
 * (it lost the race).
 */
export async function rotateSession(db: Kysely<Schema>, session: SessionRow, now = Date.now()): Promise<IssuedTokens | undefined> {
  const pair = newTokenPair(now);
  const oldHash = session.refreshTokenHash;
  const rotated = writesInWith(db)
    ? (await rotateAndRecord(db, { sessionId: session.sessionId, oldHash, oldExpiresAt: session.refreshExpiresAt, ...pair.row, now })).length > 0
    : await db.transaction().execute(async (trx) => {
        const updated = await rotateTokens(trx, { sessionId: session.sessionId, oldHash, ...pair.row, now });
        if (updated.length === 0) return false;
        await recordRotatedToken(trx, { refresh_token_hash: oldHash, session_id: session.sessionId, expires_at: session.refreshExpiresAt });
        return true;
      });
  if (!rotated) return undefined;
  return {
    sessionId: session.sessionId,
    ...pair,
    accessExpiresAt: pair.row.access_expires_at,
    refreshExpiresAt: pair.row.refresh_expires_at,
    scope: session.scope,
    issuedAt: now,
  };
}

/** The session an access token belongs to, as the v4 API authenticates its caller. */
export interface AccessTokenSession {
  sessionId: string;
  userId: string;
  clientId: string;
  scope: string;
  accessExpiresAt: number;
  lastUsedAt: number | null;
}

const sessionByAccessTokenHash = reusableQuery((db: Kysely<Schema>, { hash }: { hash: string }) =>
  db.selectFrom('sessions').select(['session_id', 'user_id', 'client_id', 'scope', 'access_expires_at', 'last_used_at']).where('access_token_hash', '=', hash),
);

/** The session whose current access token `accessToken` is, expired or not (the caller tells which). */
export async function findSessionByAccessToken(db: Kysely<Schema>, accessToken: string): Promise<AccessTokenSession | undefined> {
  const [row] = await sessionByAccessTokenHash(db, { hash: hashSecret(accessToken) });
  return (
    row && {
      sessionId: row.session_id,
      userId: row.user_id,
      clientId: row.client_id,
      scope: row.scope,
      accessExpiresAt: row.access_expires_at,
      lastUsedAt: row.last_used_at,
    }
  );
}

/** "Last used" on the account page is to the minute: a write at most once a minute per session, not one per request. */
const LAST_USED_PRECISION_MS = 60_000;

/** Notes that the session was used now; undefined (no write) when its time is already this recent. */
export function noteSessionUse(db: Kysely<Schema>, session: AccessTokenSession, now = Date.now()): Promise<unknown> | undefined {
  if (session.lastUsedAt !== null && now - session.lastUsedAt < LAST_USED_PRECISION_MS) return undefined;
  return db
    .updateTable('sessions')
    .set({ last_used_at: now })
    .where('session_id', '=', session.sessionId)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', now - LAST_USED_PRECISION_MS)]))
    .execute();
}

/** A live token as introspection describes it: which session, which of its two tokens, and when. */
export interface TokenInfo {
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
export async function findLiveToken(db: Kysely<Schema>, token: string, now = Date.now()): Promise<TokenInfo | undefined> {
  const hash = hashSecret(token);
  const row = await db
    .selectFrom('sessions')
    .leftJoin('users', 'users.user_id', 'sessions.user_id')
    .select([
      'sessions.session_id',
      'sessions.user_id',
      'users.username',
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

/**
 * Ends the session of `clientId` that `token` belongs to (RFC 7009: a client revokes only its
 * own tokens): its current access or refresh token, unexpired, or a refresh token rotated away
 * from it that has not expired either. Presenting a rotated refresh token at the token endpoint
 * would end the session anyway (reuse detection); here it also means a sign-out racing a
 * refresh still ends the session. Expired tokens end nothing. False when nothing matched.
 */
export async function revokeSessionByToken(db: Kysely<Schema>, clientId: string, token: string, now = Date.now()): Promise<boolean> {
  const hash = hashSecret(token);
  const current = await db
    .deleteFrom('sessions')
    .where('client_id', '=', clientId)
    .where((eb) =>
      eb.or([
        eb.and([eb('access_token_hash', '=', hash), eb('access_expires_at', '>', now)]),
        eb.and([eb('refresh_token_hash', '=', hash), eb('refresh_expires_at', '>', now)]),
      ]),
    )
    .executeTakeFirst();
  if (current.numDeletedRows > 0n) return true;
  const rotated = await db
    .deleteFrom('sessions')
    .where('client_id', '=', clientId)
    .where('session_id', 'in', (eb) =>
      eb.selectFrom('rotated_refresh_tokens').select('session_id').where('refresh_token_hash', '=', hash).where('expires_at', '>', now),
    )
    .executeTakeFirst();
  return rotated.numDeletedRows > 0n;
}

/** The user and application of a session (for the security event about it). */
export async function findSessionOwner(db: Kysely<Schema>, sessionId: string): Promise<{ userId: string; clientId: string } | undefined> {
  const row = await db.selectFrom('sessions').select(['user_id', 'client_id']).where('session_id', '=', sessionId).executeTakeFirst();
  return row && { userId: row.user_id, clientId: row.client_id };
}

export async function revokeSession(db: Kysely<Schema>, sessionId: string): Promise<boolean> {
  const result = await db.deleteFrom('sessions').where('session_id', '=', sessionId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** A session as its user sees it on the account page. */
export interface UserSession {
  sessionId: string;
  clientId: string;
  applicationName: string;
  scope: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** The user's sessions that can still be refreshed, most recently used first. */
export async function listUserSessions(db: Kysely<Schema>, userId: string, now = Date.now()): Promise<UserSession[]> {
  const rows = await db
    .selectFrom('sessions')
    .innerJoin('applications', 'applications.client_id', 'sessions.client_id')
    .select(['sessions.session_id', 'sessions.client_id', 'applications.name', 'sessions.scope', 'sessions.created_at', 'sessions.last_used_at'])
    .where('sessions.user_id', '=', userId)
    .where('sessions.refresh_expires_at', '>', now)
    .orderBy('sessions.created_at', 'desc')
    .orderBy('sessions.session_id')
    .execute();
  return rows.map((row) => ({
    sessionId: row.session_id,
    clientId: row.client_id,
    applicationName: row.name,
    scope: row.scope,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  }));
}

/** Ends one session of the user (never another user's); answers its application, or undefined when there was none. */
export async function endUserSession(db: Kysely<Schema>, userId: string, sessionId: string): Promise<{ clientId: string } | undefined> {
  const row = await db.deleteFrom('sessions').where('session_id', '=', sessionId).where('user_id', '=', userId).returning('client_id').executeTakeFirst();
  return row && { clientId: row.client_id };
}

/** Ends every session of the user; answers how many. */
export async function endAllUserSessions(db: Kysely<Schema>, userId: string): Promise<number> {
  const result = await db.deleteFrom('sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
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
