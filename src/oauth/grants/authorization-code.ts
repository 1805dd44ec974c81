import type { Kysely } from 'kysely';
import { type EventOrigin, recordSecurityEvent } from '../../accounts/security-events.ts';
import type { AuthorizationCodesTable, Schema } from '../../db/schema.ts';
import { uuidv7 } from '../../http/uuid.ts';
import { hashSecret } from '../../secrets/random-secrets.ts';
import {
  exchangeAuthorizationCode,
  exchangeCheckedAuthorizationCode,
  findAuthorizationCode,
  sessionOfUsedCode,
} from '../authorization-codes.ts';
import { InvalidGrant } from '../errors.ts';
import { challengeOf, isCodeVerifier, verifierMatches } from '../pkce.ts';
import { endSession, type IssuedTokens } from '../sessions.ts';
import { type FoldedGrantContext, type GrantContext, required } from './context.ts';

/**
 * The code exchange with the client's authentication, in one statement where the dialect allows
 * it; undefined when that did not happen (a check failed, or a parameter is missing or malformed),
 * and then nothing changed.
 */
export async function exchangeForAuthenticatedClient({
  db,
  params,
  client,
  now,
}: FoldedGrantContext): Promise<IssuedTokens | undefined> {
  const { code, redirect_uri: redirectUri, code_verifier: verifier } = params;
  if (!code || !redirectUri || !isCodeVerifier(verifier)) return undefined;
  const exchange = {
    client,
    codeHash: hashSecret(code),
    redirectUri,
    codeChallenge: challengeOf(verifier),
    deviceId: params.device_id ?? null,
    sessionId: uuidv7(),
  };
  return exchangeCheckedAuthorizationCode(db, exchange, now);
}

/** grant_type=authorization_code: a single-use code, bound to client, redirect URI and PKCE challenge. */
export async function authorizationCodeGrant({ db, params, client, now, origin }: GrantContext): Promise<IssuedTokens> {
  const codeHash = hashSecret(required(params, 'code'));
  const redirectUri = required(params, 'redirect_uri');
  const verifier = required(params, 'code_verifier');
  const code = await findAuthorizationCode(db, codeHash);
  if (!code || code.client_id !== client.clientId) throw new InvalidGrant('Unknown authorization code');
  if (code.used_at !== null) return replayed(db, origin, code, code.session_id);
  if (code.expires_at <= now) throw new InvalidGrant('The authorization code has expired');
  if (code.redirect_uri !== redirectUri)
    throw new InvalidGrant('redirect_uri differs from the one of the authorization request');
  if (!verifierMatches(verifier, code.code_challenge))
    throw new InvalidGrant('code_verifier does not match the code_challenge');
  if (params.device_id !== undefined && code.device_id !== null && params.device_id !== code.device_id) {
    throw new InvalidGrant('device_id differs from the one of the authorization request');
  }
  // The session id is written with the claim, so whoever finds the code used can end it.
  const sessionId = uuidv7();
  const tokens = await exchangeAuthorizationCode(
    db,
    codeHash,
    { sessionId, userId: code.user_id, clientId: client.clientId, scope: code.scope, signIn: code },
    now,
  );
  // Lost a race with another exchange of the same code: a replay like any other. The winner's
  // transaction has committed by now (our claim waited for it), so its session can be ended.
  return tokens ?? replayed(db, origin, code, await sessionOfUsedCode(db, codeHash));
}

/** A used code presented again: the session it was exchanged for is revoked (RFC 9700 §4.2.4). */
async function replayed(
  db: Kysely<Schema>,
  origin: EventOrigin | undefined,
  code: AuthorizationCodesTable,
  sessionId: string | null | undefined,
): Promise<never> {
  await recordSecurityEvent(db, origin, {
    kind: 'authorization_code_replayed',
    userId: code.user_id,
    clientId: code.client_id,
    details: { session_id: sessionId ?? null, session_revoked: Boolean(sessionId) },
  });
  if (sessionId) await endSession(db, sessionId);
  throw new InvalidGrant('This authorization code was already used; the tokens issued for it are revoked');
}
