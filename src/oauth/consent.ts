import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { issueAuthorizationCode } from './authorization-codes.ts';
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
  userId: string,
  approved: boolean,
  now = Date.now(),
): Promise<ConsentOutcome> {
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
      },
      now,
    );
    return { kind: 'code', code };
  });
}
