import { type ExpressionBuilder, type Kysely, type QueryCreator, sql, type UpdateQueryBuilder } from 'kysely';
import { writesInWith } from '../db/dialect.ts';
import { reusableQuery } from '../db/reusable-query.ts';
import type { Schema, SessionsTable } from '../db/schema.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';
import { authenticatedClient, type ClientProof } from './clients.ts';
import {
  type IssuedTokens,
  insertSession,
  issuedTokens,
  type NewSessionRow,
  newSession,
  newTokenPair,
  type SessionGrant,
} from './sessions.ts';

export const AUTHORIZATION_CODE_TTL_MS = 10 * 60 * 1000;

export interface CodeGrant {
  clientId: string;
  userId: string;
  redirectUri: string;
  scope: string;
  codeChallenge: string;
  deviceId: string | null;
  /** OpenID Connect: the request's nonce and the browser sign-in behind the grant. */
  signIn?: SignInFacts;
}

/** What an ID token states about the sign-in a grant came from, carried from the code to the session. */
export interface SignInFacts {
  nonce: string | null;
  authTime: number;
  authMethods: readonly string[];
  webSessionHash: string;
}

/** The columns that carry SignInFacts, on a code or a session. */
export const signInColumns = (facts: SignInFacts | undefined) => ({
  nonce: facts?.nonce ?? null,
  auth_time: facts?.authTime ?? null,
  auth_methods: facts ? JSON.stringify(facts.authMethods) : null,
  web_session_hash: facts?.webSessionHash ?? null,
});

/** Issues a single-use authorization code for an approved request; only its hash is stored. */
export async function issueAuthorizationCode(db: Kysely<Schema>, grant: CodeGrant, now = Date.now()): Promise<string> {
  const code = newSecret();
  await db
    .insertInto('authorization_codes')
    .values({
      code_hash: hashSecret(code),
      client_id: grant.clientId,
      user_id: grant.userId,
      redirect_uri: grant.redirectUri,
      scope: grant.scope,
      code_challenge: grant.codeChallenge,
      device_id: grant.deviceId,
      expires_at: now + AUTHORIZATION_CODE_TTL_MS,
      used_at: null,
      session_id: null,
      ...signInColumns(grant.signIn),
    })
    .execute();
  return code;
}

/**
 * Exchanges the code for a new session: marks the code used, naming the session, and stores the
 * session, atomically; undefined when the code was used already. A concurrent exchange of the same
 * code waits for this write (PostgreSQL's row lock; SQLite runs one write transaction at a time)
 * and, finding the code used, can end the session, which is committed by then.
 */
export async function exchangeAuthorizationCode(
  db: Kysely<Schema>,
  codeHash: string,
  grant: SessionGrant & { sessionId: string },
  now: number,
): Promise<IssuedTokens | undefined> {
  const { row, tokens } = newSession(grant, now);
  if (writesInWith(db)) return (await claimAndStart(db, { codeHash, now, ...row })).length > 0 ? tokens : undefined;
  return db.transaction().execute(async (trx) => {
    if ((await claimCode(trx, { codeHash, sessionId: row.session_id, now })).length === 0) return undefined;
    await insertSession(trx, row);
    return tokens;
  });
}

// The token endpoint's statements are compiled once: building them per request cost more than running them.
/** Marks the code used by the session, if it is unused; callers add their checks and RETURNING. */
const claimOf = (
  db: QueryCreator<Schema>,
  { codeHash, sessionId, now }: { codeHash: string; sessionId: string; now: number },
) =>
  db
    .updateTable('authorization_codes')
    .set({ used_at: now, session_id: sessionId })
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null);

const claimCode = reusableQuery((db: Kysely<Schema>, values: { codeHash: string; sessionId: string; now: number }) =>
  claimOf(db, values).returning('session_id'),
);

/** The columns of a new session, in the order of the selects below. */
const SESSION_COLUMNS = [
  'session_id',
  'user_id',
  'client_id',
  'scope',
  'nonce',
  'auth_time',
  'auth_methods',
  'web_session_hash',
  'created_at',
  'last_used_at',
  'access_token_hash',
  'access_expires_at',
  'refresh_token_hash',
  'refresh_expires_at',
] as const;

/** The columns a session takes from its code, whoever reads them. */
type FromCode = 'user_id' | 'client_id' | 'scope' | 'nonce' | 'auth_time' | 'auth_methods' | 'web_session_hash';

type TimesAndTokens = Omit<NewSessionRow, 'session_id' | FromCode>;

/** A new session's times and token hashes as selected values of an INSERT … SELECT (cast, as PostgreSQL does not infer a bigint there). */
const timesAndTokens = <DB, TB extends keyof DB>(eb: ExpressionBuilder<DB, TB>, values: TimesAndTokens) =>
  [
    eb.cast<number>(eb.val(values.created_at), 'bigint').as('created_at'),
    eb.cast<number>(eb.val(values.last_used_at), 'bigint').as('last_used_at'),
    eb.val(values.access_token_hash).as('access_token_hash'),
    eb.cast<number>(eb.val(values.access_expires_at), 'bigint').as('access_expires_at'),
    eb.val(values.refresh_token_hash).as('refresh_token_hash'),
    eb.cast<number>(eb.val(values.refresh_expires_at), 'bigint').as('refresh_expires_at'),
  ] as const;

/**
 * Whose session it is and the sign-in behind it: the claimed code's user, client, scope and
 * sign-in facts, or ones the caller read and checked beforehand.
 */
type SessionOwner = 'claimed' | { [K in FromCode]: NewSessionRow[K] | null };

const ownerColumns = <DB, TB extends keyof DB>(eb: ExpressionBuilder<DB, TB>, owner: SessionOwner) =>
  owner === 'claimed'
    ? [
        sql.ref<string>('claimed.user_id').as('user_id'),
        sql.ref<string>('claimed.client_id').as('client_id'),
        sql.ref<string>('claimed.scope').as('scope'),
        sql.ref<string | null>('claimed.nonce').as('nonce'),
        sql.ref<number | null>('claimed.auth_time').as('auth_time'),
        sql.ref<string | null>('claimed.auth_methods').as('auth_methods'),
        sql.ref<string | null>('claimed.web_session_hash').as('web_session_hash'),
      ]
    : [
        eb.val(owner.user_id).as('user_id'),
        eb.val(owner.client_id).as('client_id'),
        eb.val(owner.scope).as('scope'),
        eb.cast<string | null>(eb.val(owner.nonce ?? null), 'text').as('nonce'),
        eb.cast<number | null>(eb.val(owner.auth_time ?? null), 'bigint').as('auth_time'),
        eb.cast<string | null>(eb.val(owner.auth_methods ?? null), 'text').as('auth_methods'),
        eb.cast<string | null>(eb.val(owner.web_session_hash ?? null), 'text').as('web_session_hash'),
      ];

/**
 * A claim and the new session as one statement, where the dialect allows it (see writesInWith): one
 * round trip instead of a transaction's four. `claim` is the claim (an UPDATE of the code returning
 * at least its session id, and its user_id, client_id and scope when `owner` is 'claimed'); the
 * statement answers `returning` of the new session, and no row when nothing was claimed (then
 * nothing changed).
 */
function startFromClaim<C extends { session_id: string | null }, R extends keyof SessionsTable>(
  db: Kysely<Schema>,
  claim: (db: QueryCreator<Schema>) => UpdateQueryBuilder<Schema, 'authorization_codes', 'authorization_codes', C>,
  owner: SessionOwner,
  values: TimesAndTokens,
  returning: readonly R[],
) {
  return db
    .with('claimed', claim)
    .insertInto('sessions')
    .columns(SESSION_COLUMNS)
    .expression((eb) =>
      eb
        .selectFrom('claimed')
        .select(['claimed.session_id', ...ownerColumns(eb, owner), ...timesAndTokens(eb, values)]),
    )
    .returning(returning);
}

/** The claim and the new session, for a code already read and checked (the caller names its user, client and scope). */
const claimAndStart = reusableQuery((db: Kysely<Schema>, values: NewSessionRow & { codeHash: string; now: number }) =>
  startFromClaim(
    db,
    (db) =>
      claimOf(db, { codeHash: values.codeHash, sessionId: values.session_id, now: values.now }).returning('session_id'),
    values,
    values,
    ['session_id'],
  ),
);

/** What the code exchange is checked against, with the client's credentials and the new session's token pair. */
type CheckedExchange = ClientProof &
  Omit<NewSessionRow, FromCode> & {
    codeHash: string;
    redirectUri: string;
    codeChallenge: string;
    /** null: the request named no device */
    deviceId: string | null;
    now: number;
  };

/**
 * The whole code exchange as one statement, where the dialect allows it: the client's
 * authentication, every check of the grant (the code's client, unused, unexpired, its redirect
 * URI, PKCE challenge and device) and the claim with the new session, which takes the claimed
 * code's user, client and scope. No row when anything did not hold, and then nothing changed.
 */
const checkedClaimAndStart = reusableQuery((db: Kysely<Schema>, values: CheckedExchange) =>
  startFromClaim(
    db,
    (db) =>
      claimOf(db, { codeHash: values.codeHash, sessionId: values.session_id, now: values.now })
        .where('client_id', '=', values.clientId)
        .where('expires_at', '>', values.now)
        .where('redirect_uri', '=', values.redirectUri)
        .where('code_challenge', '=', values.codeChallenge)
        // A device named on both sides must be the same one.
        .where((eb) => eb.fn.coalesce(eb('device_id', '=', values.deviceId), sql<boolean>`true`))
        .where((eb) => eb.exists(authenticatedClient(db, values)))
        .returning([
          'session_id',
          'user_id',
          'client_id',
          'scope',
          'nonce',
          'auth_time',
          'auth_methods',
          'web_session_hash',
        ]),
    'claimed',
    values,
    ['session_id', 'scope'],
  ),
);

/**
 * Where the dialect allows it (PostgreSQL), the exchange of the code with this hash by `client`,
 * authenticated in the same statement, when every check of the grant holds; undefined when that
 * did not happen (or the dialect cannot), and then nothing changed: the caller takes the path
 * that tells why (authenticateClient, authorizationCodeGrant).
 */
export async function exchangeCheckedAuthorizationCode(
  db: Kysely<Schema>,
  exchange: {
    client: ClientProof;
    codeHash: string;
    redirectUri: string;
    codeChallenge: string;
    deviceId: string | null;
    sessionId: string;
  },
  now: number,
): Promise<IssuedTokens | undefined> {
  if (!writesInWith(db)) return undefined;
  const pair = newTokenPair(now);
  const { client, codeHash, redirectUri, codeChallenge, deviceId, sessionId } = exchange;
  const [row] = await checkedClaimAndStart(db, {
    ...client,
    codeHash,
    redirectUri,
    codeChallenge,
    deviceId,
    now,
    session_id: sessionId,
    created_at: now,
    last_used_at: now,
    ...pair.row,
  });
  return row && issuedTokens(row.session_id, pair, row.scope, now);
}

const codeByHash = reusableQuery((db: Kysely<Schema>, { codeHash }: { codeHash: string }) =>
  db.selectFrom('authorization_codes').selectAll().where('code_hash', '=', codeHash),
);

/** The stored code with this hash, used or not. */
export async function findAuthorizationCode(db: Kysely<Schema>, codeHash: string) {
  const [row] = await codeByHash(db, { codeHash });
  return row;
}

/** The session a used code was exchanged for. */
export async function sessionOfUsedCode(db: Kysely<Schema>, codeHash: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('authorization_codes')
    .select('session_id')
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is not', null)
    .executeTakeFirst();
  return row?.session_id ?? undefined;
}
