import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { userClaimsOf } from '../accounts/accounts.ts';
import type { Schema } from '../db/schema.ts';
import type { KeyRing } from './key-ring.ts';
import type { IssuedTokens } from './sessions.ts';
import { isSigningAlg, type SigningAlg } from './signing-algs.ts';

/** Every claim an ID token or UserInfo may carry (discovery's claims_supported). */
export const ID_TOKEN_CLAIMS = [
  'iss',
  'sub',
  'aud',
  'azp',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'sid',
  'at_hash',
  'amr',
  'preferred_username',
  'updated_at',
  'email',
  'email_verified',
] as const;

/** The longest nonce an authorization request may carry. */
export const MAX_NONCE_LENGTH = 255;

/**
 * at_hash (OpenID Connect Core §3.1.3.6): the left half of the access token's hash, with the hash
 * of the signing algorithm (SHA-256 for RS256 and ES256; SHA-512 for EdDSA over Ed25519).
 */
export function accessTokenHash(accessToken: string, alg: SigningAlg): string {
  const digest = createHash(alg === 'EdDSA' ? 'sha512' : 'sha256')
    .update(accessToken, 'ascii')
    .digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

/** The claims of `profile` and `email` that a scope grants, for the ID token and UserInfo. */
export function scopedClaims(
  scopes: ReadonlySet<string>,
  user: { username: string | null; email: string | null; updated_at: number | null },
): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  if (scopes.has('profile')) {
    if (user.username !== null) claims.preferred_username = user.username;
    if (user.updated_at !== null) claims.updated_at = Math.floor(Number(user.updated_at) / 1000);
  }
  if (scopes.has('email') && user.email !== null) {
    claims.email = user.email;
    // An address is on an account only once its owner has followed a link sent to it.
    claims.email_verified = true;
  }
  return claims;
}

/** What an ID token states about a session, in one read: the sign-in, the user's claims and the application's algorithm. */
function idTokenFacts(db: Kysely<Schema>, sessionId: string) {
  return db
    .selectFrom('sessions')
    .innerJoin('applications', 'applications.client_id', 'sessions.client_id')
    .select((eb) => [
      'sessions.user_id',
      'sessions.client_id',
      'sessions.created_at',
      'sessions.auth_time',
      'sessions.auth_methods',
      'sessions.nonce',
      'applications.id_token_signed_response_alg',
      ...userClaimsOf(eb.ref('sessions.user_id')),
    ])
    .where('sessions.session_id', '=', sessionId)
    .executeTakeFirst();
}

/**
 * The ID token for tokens just issued to a session whose scope holds openid: from the code
 * exchange (with the request's nonce) and from each refresh (same auth_time, no nonce). It
 * expires with the access token. Undefined when the session is gone already (ended meanwhile).
 */
export async function idTokenFor(
  db: Kysely<Schema>,
  keys: KeyRing,
  issuer: string,
  tokens: IssuedTokens,
  withNonce: boolean,
): Promise<string | undefined> {
  const facts = await idTokenFacts(db, tokens.sessionId);
  if (!facts) return undefined;
  const alg: SigningAlg = isSigningAlg(facts.id_token_signed_response_alg)
    ? facts.id_token_signed_response_alg
    : 'RS256';
  const scopes = new Set(tokens.scope.split(' '));
  const payload: Record<string, unknown> = {
    iss: issuer,
    sub: facts.user_id,
    aud: facts.client_id,
    azp: facts.client_id,
    exp: Math.floor(tokens.accessExpiresAt / 1000),
    iat: Math.floor(tokens.issuedAt / 1000),
    auth_time: Math.floor(Number(facts.auth_time ?? facts.created_at) / 1000),
    ...(withNonce && facts.nonce !== null ? { nonce: facts.nonce } : {}),
    sid: tokens.sessionId,
    at_hash: accessTokenHash(tokens.accessToken, alg),
    amr: facts.auth_methods === null ? ['pwd'] : (JSON.parse(facts.auth_methods) as string[]),
    ...scopedClaims(scopes, facts),
  };
  return keys.sign(payload, alg, 'JWT', tokens.issuedAt);
}
