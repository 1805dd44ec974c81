import type { Kysely } from 'kysely';
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
