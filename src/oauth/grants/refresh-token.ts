import { recordSecurityEvent } from '../../accounts/security-events.ts';
import { InvalidGrant, InvalidScope } from '../errors.ts';
import { parseScopes } from '../scopes.ts';
import {
  endSession,
  findRotatedSession,
  findSessionByRefreshToken,
  findSessionOwner,
  type IssuedTokens,
  rotateByRefreshToken,
  rotateSession,
} from '../sessions.ts';
import { type FoldedGrantContext, type GrantContext, required } from './context.ts';

/**
 * The usual refresh (no scope parameter) with the client's authentication, in one statement where
 * the dialect allows it; undefined when that did not happen, and then nothing changed.
 */
export async function rotateForAuthenticatedClient({
  db,
  params,
  client,
  now,
}: FoldedGrantContext): Promise<IssuedTokens | undefined> {
  if (params.scope !== undefined || !params.refresh_token) return undefined;
  return rotateByRefreshToken(db, params.refresh_token, client, now);
}

/**
 * grant_type=refresh_token: rotates both tokens. A refresh token that was already rotated away
 * is a sign of theft: the whole session is revoked (RFC 9700 §4.14.2).
 */
export async function refreshTokenGrant({ db, params, client, now, origin }: GrantContext): Promise<IssuedTokens> {
  const refreshToken = required(params, 'refresh_token');
  const session = await findSessionByRefreshToken(db, refreshToken);
  if (!session) {
    const reusedFrom = await findRotatedSession(db, refreshToken);
    if (reusedFrom) {
      const owner = await findSessionOwner(db, reusedFrom);
      await recordSecurityEvent(db, origin, {
        kind: 'refresh_token_reused',
        userId: owner?.userId,
        clientId: owner?.clientId,
        details: { session_id: reusedFrom, session_revoked: true },
      });
      await endSession(db, reusedFrom);
      throw new InvalidGrant('This refresh token was already used; the session is revoked');
    }
    throw new InvalidGrant('Unknown or revoked refresh token');
  }
  if (session.clientId !== client.clientId) throw new InvalidGrant('Unknown or revoked refresh token');
  if (session.refreshExpiresAt <= now) throw new InvalidGrant('The refresh token has expired');
  if (params.scope !== undefined) {
    const asked = [...new Set(['common', ...parseScopes(params.scope)])].sort().join(' ');
    if (asked !== session.scope)
      throw new InvalidScope(`scope must be the original scope (${session.scope}) or omitted`);
  }
  const tokens = await rotateSession(db, session, now);
  if (!tokens) {
    await recordSecurityEvent(db, origin, {
      kind: 'refresh_token_reused',
      userId: session.userId,
      clientId: session.clientId,
      details: { session_id: session.sessionId, session_revoked: true },
    });
    await endSession(db, session.sessionId);
    throw new InvalidGrant('This refresh token was already used; the session is revoked');
  }
  return tokens;
}
