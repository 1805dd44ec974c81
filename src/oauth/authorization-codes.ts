import type { Kysely } from 'kysely';
import { reusableQuery } from '../db/reusable-query.ts';
import type { Schema } from '../db/schema.ts';
import { hashSecret, newSecret } from './secrets.ts';

export const AUTHORIZATION_CODE_TTL_MS = 10 * 60 * 1000;

export interface CodeGrant {
  clientId: string;
  userId: string;
  redirectUri: string;
  scope: string;
  codeChallenge: string;
  deviceId: string | null;
}

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
    })
    .execute();
  return code;
}

/**
 * Marks the code used and names the session it is exchanged for, in one statement; false when
 * it was used already. Run it in the transaction that creates that session: a concurrent claim
 * then waits for that transaction (PostgreSQL's row lock; SQLite runs one write transaction at a
 * time) and, finding the code used, can end the session, which is committed by then.
 */
export async function claimAuthorizationCode(db: Kysely<Schema>, codeHash: string, sessionId: string, now: number): Promise<boolean> {
  const claimed = await claimCode(db, { codeHash, sessionId, now });
  return claimed.length > 0;
}

// The token endpoint's statements are compiled once: building them per request cost more than running them.
const claimCode = reusableQuery((db: Kysely<Schema>, { codeHash, sessionId, now }: { codeHash: string; sessionId: string; now: number }) =>
  db.updateTable('authorization_codes').set({ used_at: now, session_id: sessionId }).where('code_hash', '=', codeHash).where('used_at', 'is', null).returning('code_hash'),
);

const codeByHash = reusableQuery((db: Kysely<Schema>, { codeHash }: { codeHash: string }) => db.selectFrom('authorization_codes').selectAll().where('code_hash', '=', codeHash));

/** The stored code with this hash, used or not. */
export async function findAuthorizationCode(db: Kysely<Schema>, codeHash: string) {
  const [row] = await codeByHash(db, { codeHash });
  return row;
}

/** The session a used code was exchanged for. */
export async function sessionOfUsedCode(db: Kysely<Schema>, codeHash: string): Promise<string | undefined> {
  const row = await db.selectFrom('authorization_codes').select('session_id').where('code_hash', '=', codeHash).where('used_at', 'is not', null).executeTakeFirst();
  return row?.session_id ?? undefined;
}
