import type { Kysely } from 'kysely';
import { lockedAccount } from '../accounts/accounts.ts';
import { writesInWith } from '../db/dialect.ts';
import { reusableQuery } from '../db/reusable-query.ts';
import type { Schema } from '../db/schema.ts';
import { uuidv7 } from '../http/uuid.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';
import { authenticatedClient, type ClientProof } from './clients.ts';
import { enqueueBackchannelLogouts, type SessionFilter } from './logout-outbox.ts';

// The token family model: a session is one user's grant to one application, holding one access
// token and one refresh token (stored hashed), issued together and replaced together. Here it is
// started, rotated, looked up by either token and ended. The endpoints that describe or list
// sessions (introspection.ts, user-sessions.ts) and the token response (token-endpoint.ts) are not.

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

/** A new access and refresh token, and the columns that store them. */
export function newTokenPair(now: number) {
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

/** The token response's content for a session given `pair`. */
export function issuedTokens(
  sessionId: string,
  pair: ReturnType<typeof newTokenPair>,
  scope: string,
  now: number,
): IssuedTokens {
  return {
    sessionId,
    accessToken: pair.accessToken,
    refreshToken: pair.refreshToken,
    accessExpiresAt: pair.row.access_expires_at,
    refreshExpiresAt: pair.row.refresh_expires_at,
    scope,
    issuedAt: now,
  };
}

export interface SessionGrant {
  userId: string;
  clientId: string;
  scope: string;
  /** chosen beforehand (a code claim names it) */
  sessionId?: string;
  /** The sign-in behind a code's grant (OpenID Connect), as the code stored it. */
  signIn?: {
    nonce: string | null;
    auth_time: number | null;
    auth_methods: string | null;
    web_session_hash: string | null;
  };
}

export type NewSessionRow = Parameters<typeof insertSession>[1];

/**
 * A new session's row and the tokens to answer once it is stored: for a caller that writes the row
 * in a statement of its own (the code exchange, see authorization-codes.ts); others use createSession.
 */
export function newSession(grant: SessionGrant, now: number): { row: NewSessionRow; tokens: IssuedTokens } {
  const sessionId = grant.sessionId ?? uuidv7();
  const pair = newTokenPair(now);
  return {
    row: {
      session_id: sessionId,
      user_id: grant.userId,
      client_id: grant.clientId,
      scope: grant.scope,
      created_at: now,
      last_used_at: now,
      ...pair.row,
      nonce: grant.signIn?.nonce ?? null,
      auth_time: grant.signIn?.auth_time ?? null,
      auth_methods: grant.signIn?.auth_methods ?? null,
      web_session_hash: grant.signIn?.web_session_hash ?? null,
    },
    tokens: issuedTokens(sessionId, pair, grant.scope, now),
  };
}

/** Starts a token family for a user and application. */
export async function createSession(db: Kysely<Schema>, grant: SessionGrant, now = Date.now()): Promise<IssuedTokens> {
  const { row, tokens } = newSession(grant, now);
  await insertSession(db, row);
  return tokens;
}

// The token endpoint's statements are compiled once (reusableQuery): building them per request
// cost more than running them.
const sessionByRefreshTokenHash = reusableQuery((db: Kysely<Schema>, { hash }: { hash: string }) =>
  db
    .selectFrom('sessions')
    .select(['session_id', 'user_id', 'client_id', 'scope', 'refresh_expires_at'])
    .where('refresh_token_hash', '=', hash)
    .where((eb) => eb.not(eb.exists(lockedAccount(eb.ref('sessions.user_id'))))),
);

export const insertSession = reusableQuery(
  (
    db: Kysely<Schema>,
    row: {
      session_id: string;
      user_id: string;
      client_id: string;
      scope: string;
      created_at: number;
      last_used_at: number;
      access_token_hash: string;
      access_expires_at: number;
      refresh_token_hash: string;
      refresh_expires_at: number;
      nonce: string | null;
      auth_time: number | null;
      auth_methods: string | null;
      web_session_hash: string | null;
    },
  ) => db.insertInto('sessions').values(row),
);

type Rotation = {
  sessionId: string;
  oldHash: string;
  access_token_hash: string;
  access_expires_at: number;
  refresh_token_hash: string;
  refresh_expires_at: number;
  now: number;
};

/** The columns a rotation sets: the new token pair and the time of use. */
const rotatedColumns = (values: Omit<Rotation, 'sessionId' | 'oldHash'>) => ({
  access_token_hash: values.access_token_hash,
  access_expires_at: values.access_expires_at,
  refresh_token_hash: values.refresh_token_hash,
  refresh_expires_at: values.refresh_expires_at,
  last_used_at: values.now,
});

/** The session's new token pair, if its refresh token is still `oldHash` (a concurrent rotation wins once). */
const rotationOf = (db: Kysely<Schema>, values: Rotation) =>
  db
    .updateTable('sessions')
    .set(rotatedColumns(values))
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
    .expression((eb) =>
      eb
        .selectFrom('rotated')
        .select([
          eb.val(values.oldHash).as('refresh_token_hash'),
          'rotated.session_id',
          eb.cast<number>(eb.val(values.oldExpiresAt), 'bigint').as('expires_at'),
        ]),
    )
    .returning('session_id'),
);

const recordRotatedToken = reusableQuery(
  (db: Kysely<Schema>, row: { refresh_token_hash: string; session_id: string; expires_at: number }) =>
    db.insertInto('rotated_refresh_tokens').values(row),
);

export async function findSessionByRefreshToken(
  db: Kysely<Schema>,
  refreshToken: string,
): Promise<SessionRow | undefined> {
  const refreshTokenHash = hashSecret(refreshToken);
  const [row] = await sessionByRefreshTokenHash(db, { hash: refreshTokenHash });
  return (
    row && {
      sessionId: row.session_id,
      userId: row.user_id,
      clientId: row.client_id,
      scope: row.scope,
      refreshExpiresAt: row.refresh_expires_at,
      refreshTokenHash,
    }
  );
}

/**
 * The session a refresh token belonged to before it was rotated away, if it did and the session
 * still exists (the record of a rotation outlives its session until it expires).
 */
export async function findRotatedSession(db: Kysely<Schema>, refreshToken: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('rotated_refresh_tokens')
    .innerJoin('sessions', 'sessions.session_id', 'rotated_refresh_tokens.session_id')
    .select('sessions.session_id')
    .where('rotated_refresh_tokens.refresh_token_hash', '=', hashSecret(refreshToken))
    .executeTakeFirst();
  return row?.session_id;
}

/**
 * The client's authentication, the lookup by refresh token, the client and expiry checks and the
 * rotation with its record, as one statement, where the dialect allows it (see writesInWith): one
 * round trip instead of three. The row is locked as it is read, so a concurrent rotation of the
 * same token finds it changed.
 */
const findAndRotate = reusableQuery((db: Kysely<Schema>, values: Omit<Rotation, 'sessionId'> & ClientProof) =>
  db
    .with('old', (db) =>
      db
        .selectFrom('sessions')
        .select(['session_id', 'scope', 'refresh_expires_at'])
        .where('refresh_token_hash', '=', values.oldHash)
        .where('client_id', '=', values.clientId)
        .where('refresh_expires_at', '>', values.now)
        .where((eb) => eb.exists(authenticatedClient(db, values)))
        .where((eb) => eb.not(eb.exists(lockedAccount(eb.ref('sessions.user_id')))))
        .forUpdate(),
    )
    .with('rotated', (db) =>
      db
        .updateTable('sessions')
        .from('old')
        .set(rotatedColumns(values))
        .whereRef('sessions.session_id', '=', 'old.session_id')
        .where('sessions.refresh_token_hash', '=', values.oldHash)
        .returning('sessions.session_id'),
    )
    .with('recorded', (db) =>
      db
        .insertInto('rotated_refresh_tokens')
        .columns(['refresh_token_hash', 'session_id', 'expires_at'])
        .expression((eb) =>
          eb
            .selectFrom('old')
            .innerJoin('rotated', 'rotated.session_id', 'old.session_id')
            .select([eb.val(values.oldHash).as('refresh_token_hash'), 'old.session_id', 'old.refresh_expires_at']),
        ),
    )
    .selectFrom('old')
    .innerJoin('rotated', 'rotated.session_id', 'old.session_id')
    .select(['old.session_id', 'old.scope']),
);

/**
 * Where the dialect allows it (PostgreSQL), rotates the session of `refreshToken` in one statement
 * when `client` authenticates, the session belongs to it and has not expired. Undefined when that
 * did not happen (or the dialect cannot): the caller then takes the path that tells why
 * (authenticateClient, findSessionByRefreshToken, rotateSession), which sees the same state, as
 * this changed nothing.
 */
export async function rotateByRefreshToken(
  db: Kysely<Schema>,
  refreshToken: string,
  client: ClientProof,
  now: number,
): Promise<IssuedTokens | undefined> {
  if (!writesInWith(db)) return undefined;
  const pair = newTokenPair(now);
  const [row] = await findAndRotate(db, {
    oldHash: hashSecret(refreshToken),
    clientId: client.clientId,
    secretHash: client.secretHash,
    ...pair.row,
    now,
  });
  return row && issuedTokens(row.session_id, pair, row.scope, now);
}

/**
 * Replaces both tokens of the session, found by its refresh token, and keeps the old token's hash
 * (reuse detection), atomically. Resolves to undefined when that token was rotated concurrently
 * (it lost the race).
 */
export async function rotateSession(
  db: Kysely<Schema>,
  session: SessionRow,
  now = Date.now(),
): Promise<IssuedTokens | undefined> {
  const pair = newTokenPair(now);
  const oldHash = session.refreshTokenHash;
  const rotated = writesInWith(db)
    ? (
        await rotateAndRecord(db, {
          sessionId: session.sessionId,
          oldHash,
          oldExpiresAt: session.refreshExpiresAt,
          ...pair.row,
          now,
        })
      ).length > 0
    : await db.transaction().execute(async (trx) => {
        const updated = await rotateTokens(trx, { sessionId: session.sessionId, oldHash, ...pair.row, now });
        if (updated.length === 0) return false;
        await recordRotatedToken(trx, {
          refresh_token_hash: oldHash,
          session_id: session.sessionId,
          expires_at: session.refreshExpiresAt,
        });
        return true;
      });
  return rotated ? issuedTokens(session.sessionId, pair, session.scope, now) : undefined;
}

/**
 * The bearer lookup of the v4 API, one statement: everything the authentication, the rate limit
 * (user and application) and the scope checks need, plus the last-use time that decides whether
 * the use is noted. A locked account's token is refused here, in the same statement (a lock ends
 * the sessions too; this holds against one started as the lock was made).
 */
const sessionByAccessTokenHash = reusableQuery((db: Kysely<Schema>, { hash }: { hash: string }) =>
  db
    .selectFrom('sessions')
    .select(['session_id', 'user_id', 'client_id', 'scope', 'access_expires_at', 'last_used_at'])
    .where('access_token_hash', '=', hash)
    .where((eb) => eb.not(eb.exists(lockedAccount(eb.ref('sessions.user_id'))))),
);

/** A session's scopes as a set, shared by every request of sessions with the same scope string (there are few). */
const scopeSets = new Map<string, ReadonlySet<string>>();
const MAX_SCOPE_SETS = 1000;

function scopeSet(scope: string): ReadonlySet<string> {
  const known = scopeSets.get(scope);
  if (known !== undefined) return known;
  if (scopeSets.size >= MAX_SCOPE_SETS) scopeSets.clear();
  const set = new Set(scope.split(' '));
  scopeSets.set(scope, set);
  return set;
}

/** The caller an access token stands for, as the v4 API authenticates it. */
export interface AccessTokenCaller {
  sessionId: string;
  userId: string;
  clientId: string;
  scopes: ReadonlySet<string>;
  expiresAt: number;
}

/**
 * The session whose current access token `accessToken` is, expired or not (the caller tells which),
 * as the bearerAuth plugin's lookup. Notes the use of an unexpired token (see noteSessionUse),
 * without waiting for it: the answer does not depend on it, and a failure only leaves the time older.
 */
export async function findAccessToken(
  db: Kysely<Schema>,
  accessToken: string,
  now: number,
  log?: { warn(object: object, message: string): void },
): Promise<AccessTokenCaller | undefined> {
  const [row] = await sessionByAccessTokenHash(db, { hash: hashSecret(accessToken) });
  if (!row) return undefined;
  if (row.access_expires_at > now && (row.last_used_at === null || now - row.last_used_at >= LAST_USED_PRECISION_MS)) {
    noteSessionUse(db, row.session_id, now).catch((err: unknown) =>
      log?.warn({ err }, 'could not note when a session was last used'),
    );
  }
  return {
    sessionId: row.session_id,
    userId: row.user_id,
    clientId: row.client_id,
    scopes: scopeSet(row.scope),
    expiresAt: row.access_expires_at,
  };
}

/** "Last used" on the account page is to the minute: a write at most once a minute per session, not one per request. */
const LAST_USED_PRECISION_MS = 60_000;

/** Notes that the session was used now, unless a concurrent request has just done so. */
function noteSessionUse(db: Kysely<Schema>, sessionId: string, now: number): Promise<unknown> {
  return db
    .updateTable('sessions')
    .set({ last_used_at: now })
    .where('session_id', '=', sessionId)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', now - LAST_USED_PRECISION_MS)]))
    .execute();
}

// Ending a session (every way of ending one is named end…: the session row goes, with both its
// tokens). Every ending but the application's own call (revocation, a replayed code or refresh
// token at the token endpoint, its own logout request) queues a back-channel logout for it.

/**
 * Ends the session of `clientId` that `token` belongs to (RFC 7009: a client revokes only its
 * own tokens): its current access or refresh token, unexpired, or a refresh token rotated away
 * from it that has not expired either. Presenting a rotated refresh token at the token endpoint
 * would end the session anyway (reuse detection); here it also means a sign-out racing a
 * refresh still ends the session. Expired tokens end nothing. False when nothing matched.
 */
export async function endSessionByToken(
  db: Kysely<Schema>,
  clientId: string,
  token: string,
  now = Date.now(),
): Promise<boolean> {
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
      eb
        .selectFrom('rotated_refresh_tokens')
        .select('session_id')
        .where('refresh_token_hash', '=', hash)
        .where('expires_at', '>', now),
    )
    .executeTakeFirst();
  return rotated.numDeletedRows > 0n;
}

/** The user and application of a session (for the security event about it). */
export async function findSessionOwner(
  db: Kysely<Schema>,
  sessionId: string,
): Promise<{ userId: string; clientId: string } | undefined> {
  const row = await db
    .selectFrom('sessions')
    .select(['user_id', 'client_id'])
    .where('session_id', '=', sessionId)
    .executeTakeFirst();
  return row && { userId: row.user_id, clientId: row.client_id };
}

/** Ends a session: both its tokens stop working at once (the token endpoint: no notice). False when there was none. */
export async function endSession(db: Kysely<Schema>, sessionId: string): Promise<boolean> {
  const result = await db.deleteFrom('sessions').where('session_id', '=', sessionId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * Runs a session-ending statement with its back-channel notices (logout-outbox.ts): each ended
 * session that `notify` also selects, whose application registered a back-channel URI, gets one,
 * queued in the same transaction (the caller's when `db` is one).
 */
function endingWithNotices<T>(
  db: Kysely<Schema>,
  notify: SessionFilter | undefined,
  end: (trx: Kysely<Schema>) => Promise<T>,
): Promise<T> {
  if (!notify) return end(db);
  const work = async (trx: Kysely<Schema>) => {
    await enqueueBackchannelLogouts(trx, notify, Date.now());
    return end(trx);
  };
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}

/**
 * Ends one session of the user (never another user's); answers its application, or undefined when
 * there was none. Its application gets a back-channel logout unless it is `askedBy` (its own call).
 */
export async function endSessionOfUser(
  db: Kysely<Schema>,
  userId: string,
  sessionId: string,
  askedBy?: string,
): Promise<{ clientId: string } | undefined> {
  const filter: SessionFilter = (eb) => eb.and([eb('session_id', '=', sessionId), eb('user_id', '=', userId)]);
  const notify: SessionFilter =
    askedBy === undefined ? filter : (eb) => eb.and([filter(eb), eb('client_id', '!=', askedBy)]);
  const row = await endingWithNotices(db, notify, (trx) =>
    trx.deleteFrom('sessions').where(filter).returning('client_id').executeTakeFirst(),
  );
  return row && { clientId: row.client_id };
}

/** Ends every session of the user (each application is told through its back channel); answers how many. */
export async function endAllSessionsOfUser(db: Kysely<Schema>, userId: string): Promise<number> {
  const filter: SessionFilter = (eb) => eb('user_id', '=', userId);
  const result = await endingWithNotices(db, filter, (trx) =>
    trx.deleteFrom('sessions').where(filter).executeTakeFirst(),
  );
  return Number(result.numDeletedRows);
}

/**
 * Ends every session of an application (its tokens stop working at once; it is told through its
 * back channel); answers how many.
 */
export async function endApplicationSessions(db: Kysely<Schema>, clientId: string): Promise<number> {
  const filter: SessionFilter = (eb) => eb('client_id', '=', clientId);
  const result = await endingWithNotices(db, filter, (trx) =>
    trx.deleteFrom('sessions').where(filter).executeTakeFirst(),
  );
  return Number(result.numDeletedRows);
}

/**
 * Ends the sessions of `clientId` started from one browser sign-in (RP-initiated logout); the
 * application is told through its back channel only when `notify` (the logout was not proven to
 * be its own request). Answers how many.
 */
export async function endSessionsOfBrowserSignIn(
  db: Kysely<Schema>,
  webSessionHash: string,
  clientId: string,
  notify: boolean,
): Promise<number> {
  const filter: SessionFilter = (eb) =>
    eb.and([eb('web_session_hash', '=', webSessionHash), eb('client_id', '=', clientId)]);
  const result = await endingWithNotices(db, notify ? filter : undefined, (trx) =>
    trx.deleteFrom('sessions').where(filter).executeTakeFirst(),
  );
  return Number(result.numDeletedRows);
}

/** Whether the session exists and was started from the browser sign-in `webSessionHash`. */
export async function isSessionOfBrowserSignIn(
  db: Kysely<Schema>,
  sessionId: string,
  webSessionHash: string,
): Promise<boolean> {
  const row = await db
    .selectFrom('sessions')
    .select('session_id')
    .where('session_id', '=', sessionId)
    .where('web_session_hash', '=', webSessionHash)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Ends the sessions of an application that hold a scope outside `scopes` (and `common`, always
 * granted): after its registration was narrowed, no session keeps more than it may ask for.
 */
export async function endApplicationSessionsBeyond(
  db: Kysely<Schema>,
  clientId: string,
  scopes: readonly string[],
): Promise<number> {
  const allowed = new Set(['common', ...scopes]);
  const rows = await db
    .selectFrom('sessions')
    .select(['session_id', 'scope'])
    .where('client_id', '=', clientId)
    .execute();
  const beyond = rows
    .filter((row) => row.scope.split(' ').some((scope) => scope !== '' && !allowed.has(scope)))
    .map((row) => row.session_id);
  let ended = 0;
  for (let i = 0; i < beyond.length; i += 500) {
    const chunk = beyond.slice(i, i + 500);
    const filter: SessionFilter = (eb) => eb('session_id', 'in', chunk);
    const result = await endingWithNotices(db, filter, (trx) =>
      trx.deleteFrom('sessions').where(filter).executeTakeFirst(),
    );
    ended += Number(result.numDeletedRows);
  }
  return ended;
}
