import { lockedAccount } from '../../accounts/accounts.ts';
import { isUuid, normalizeUuid } from '../../http/uuid.ts';
import { AccessDenied, AuthorizationPending, ExpiredToken, InvalidGrant, SlowDown } from '../errors.ts';
import { verifierMatches } from '../pkce.ts';
import { createSession, type IssuedTokens } from '../sessions.ts';
import { type GrantContext, required } from './context.ts';

/** Seconds added to a device request's polling interval each time it polls too soon. */
const SLOW_DOWN_STEP = 5;

/** grant_type=device_code (RFC 8628 §3.4, with PKCE): polled until approved, denied or expired. */
export async function deviceCodeGrant({ db, params, client, now }: GrantContext): Promise<IssuedTokens> {
  const deviceCode = required(params, 'device_code');
  const verifier = required(params, 'code_verifier');
  const request = isUuid(deviceCode)
    ? await db
        .selectFrom('device_authorizations')
        .selectAll()
        .where('device_code', '=', normalizeUuid(deviceCode))
        .executeTakeFirst()
    : undefined;
  if (!request || request.client_id !== client.clientId) throw new InvalidGrant('Unknown device code');
  if (!verifierMatches(verifier, request.code_challenge))
    throw new InvalidGrant('code_verifier does not match the code_challenge');
  if (request.status === 'consumed') throw new InvalidGrant('This device code was already exchanged for tokens');
  if (request.expires_at <= now) throw new ExpiredToken();
  if (request.status === 'denied') throw new AccessDenied('The user denied the request');
  if (request.status === 'pending') {
    const polledTooSoon =
      request.last_polled_at !== null && now - request.last_polled_at < request.interval_seconds * 1000;
    const interval = polledTooSoon ? request.interval_seconds + SLOW_DOWN_STEP : request.interval_seconds;
    await db
      .updateTable('device_authorizations')
      .set({ last_polled_at: now, interval_seconds: interval })
      .where('device_code', '=', request.device_code)
      .execute();
    throw polledTooSoon ? new SlowDown(interval) : new AuthorizationPending();
  }
  return db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable('device_authorizations')
      .set({ status: 'consumed', last_polled_at: now })
      .where('device_code', '=', request.device_code)
      .where('status', '=', 'approved')
      // Approved before its account was locked: no tokens (a lock also deletes the request).
      .where((eb) => eb.not(eb.exists(lockedAccount(eb.ref('device_authorizations.user_id')))))
      .executeTakeFirst();
    if (claimed.numUpdatedRows === 0n || request.user_id === null)
      throw new InvalidGrant('This device code was already exchanged for tokens');
    return createSession(trx, { userId: request.user_id, clientId: client.clientId, scope: request.scope }, now);
  });
}
