import type { Transaction } from 'kysely';
import type { Schema } from '../db/schema.ts';
import type { EventDetails } from './security-events.ts';

/**
 * A feature's part of erasing an account (GDPR art. 17): it deletes its own rows about the user
 * and what the user published, on the transaction the erasure runs in. Each feature lists its own
 * (as it lists its expiring rows); src/app.ts combines them into one list, run in order in ONE
 * transaction, accounts/' own last (it removes the users row the others' rows point at).
 */
export interface AccountEraser {
  feature: string;
  erase(trx: Transaction<Schema>, userId: string): Promise<void>;
}

/** Detail keys that may carry a name or address the person chose. */
const PERSONAL_KEYS = new Set(['username', 'email', 'address', 'login', 'name', 'passkey']);

/** The details without any value naming the person: only the user id keeps saying whose they were. */
export function scrubbedDetails(details: EventDetails, personal: readonly string[]): EventDetails {
  const lowered = personal.filter((value) => value !== '').map((value) => value.toLowerCase());
  return Object.fromEntries(
    Object.entries(details).filter(
      ([key, value]) =>
        !PERSONAL_KEYS.has(key) &&
        !(typeof value === 'string' && lowered.some((known) => value.toLowerCase().includes(known))),
    ),
  );
}

/**
 * accounts/' part: the user's two-step backup codes, trusted devices, passkeys and their pending
 * challenges, browser sign-ins, verification requests and invitations (also those sent to its
 * address), and the
 * users row itself; its security events stay, with only the user id (details scrubbed).
 */
export const ACCOUNTS_ERASER: AccountEraser = {
  feature: 'accounts',
  async erase(trx, userId) {
    const user = await trx
      .selectFrom('users')
      .select(['username', 'email'])
      .where('user_id', '=', userId)
      .executeTakeFirst();
    const personal = [user?.username ?? '', user?.email ?? ''];
    const events = await trx
      .selectFrom('security_events')
      .select(['event_id', 'details'])
      .where('user_id', '=', userId)
      .execute();
    for (const event of events) {
      const details = JSON.parse(event.details) as EventDetails;
      const scrubbed = JSON.stringify(scrubbedDetails(details, personal));
      if (scrubbed !== event.details)
        await trx
          .updateTable('security_events')
          .set({ details: scrubbed })
          .where('event_id', '=', event.event_id)
          .execute();
    }
    await trx.deleteFrom('backup_codes').where('user_id', '=', userId).execute();
    await trx.deleteFrom('trusted_devices').where('user_id', '=', userId).execute();
    await trx.deleteFrom('passkey_challenges').where('user_id', '=', userId).execute();
    await trx.deleteFrom('passkeys').where('user_id', '=', userId).execute();
    await trx.deleteFrom('web_sessions').where('user_id', '=', userId).execute();
    await trx.deleteFrom('verification_requests').where('user_id', '=', userId).execute();
    if (user?.email) await trx.deleteFrom('verification_requests').where('address', '=', user.email).execute();
    // The invitation the account signed up with (it holds the address); invitations it sent as an
    // operator keep working, without saying who sent them.
    if (user?.email) await trx.deleteFrom('invitations').where('email', '=', user.email).execute();
    await trx.updateTable('invitations').set({ invited_by: null }).where('invited_by', '=', userId).execute();
    await trx.deleteFrom('users').where('user_id', '=', userId).execute();
  },
};
