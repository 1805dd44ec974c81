import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { issueAuthorizationCode, type SignInFacts } from './authorization-codes.ts';
import type { BrowserSignIn } from './browser-sign-in.ts';
import { settleDeviceAuthorization } from './device-authorizations.ts';
import { endInteraction, type Interaction } from './interactions.ts';

export type ConsentOutcome =
  /** The interaction had already ended (a second submit, or it expired). */
  | { kind: 'ended' }
  | { kind: 'code'; code: string }
  | { kind: 'denied' }
  | { kind: 'device'; approved: boolean }
  /** The device request expired (or was settled) before the user decided. */
  | { kind: 'device expired' };

/**
 * The user's decision on an interaction: ends it and issues the authorization code (or settles
 * the device request) in one transaction, so of two simultaneous submits exactly one issues
 * anything, and a failure leaves the interaction to be decided again.
 */
export function decideInteraction(
  db: Kysely<Schema>,
  id: string,
  interaction: Interaction,
  signIn: BrowserSignIn,
  approved: boolean,
  now = Date.now(),
): Promise<ConsentOutcome> {
  const { userId } = signIn;
  return db.transaction().execute(async (trx): Promise<ConsentOutcome> => {
    if (!(await endInteraction(trx, id))) return { kind: 'ended' };
    if (interaction.device_code !== null) {
      const settled = await settleDeviceAuthorization(trx, interaction.device_code, userId, approved, now);
      return settled ? { kind: 'device', approved } : { kind: 'device expired' };
    }
    if (!approved) return { kind: 'denied' };
    const code = await issueAuthorizationCode(
      trx,
      {
        clientId: interaction.client_id,
        userId,
        redirectUri: interaction.redirect_uri!,
        scope: interaction.scope,
        codeChallenge: interaction.code_challenge!,
        deviceId: interaction.device_id,
        signIn: signInFacts(signIn, interaction.nonce),
      },
      now,
    );
    return { kind: 'code', code };
  });
}

/** What the code remembers of the browser sign-in that approved it, for the ID token. */
export const signInFacts = (signIn: BrowserSignIn, nonce: string | null): SignInFacts => ({
  nonce,
  authTime: signIn.signedInAt,
  authMethods: signIn.authMethods,
  webSessionHash: signIn.sessionHash,
});

/**
 * Whether the user has granted this application `scope` already: a session of theirs with it that
 * can still be refreshed holds every scope asked for (prompt=none then needs no consent page).
 */
export async function hasGrantCovering(
  db: Kysely<Schema>,
  userId: string,
  clientId: string,
  scope: string,
  now = Date.now(),
): Promise<boolean> {
  const rows = await db
    .selectFrom('sessions')
    .select('scope')
    .where('user_id', '=', userId)
    .where('client_id', '=', clientId)
    .where('refresh_expires_at', '>', now)
    .execute();
  const asked = scope.split(' ');
  return rows.some((row) => {
    const granted = new Set(row.scope.split(' '));
    return asked.every((s) => granted.has(s));
  });
}
