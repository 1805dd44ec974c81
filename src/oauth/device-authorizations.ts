import { randomInt, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import type { Schema } from '../db/schema.ts';
import { createInteraction } from './interactions.ts';

// The device requests of RFC 8628 (table device_authorizations) and their user codes.

const USER_CODE_ALPHABET = '23456789ABCDEFGHJKLMNPRSTUVWXYZ';
export const DEVICE_CODE_TTL_SECONDS = 600;
export const DEVICE_POLL_INTERVAL_SECONDS = 5;

/** Eight characters of an alphabet without look-alikes (31^8 ≈ 8.5e11 codes). */
function newUserCode(): string {
  return Array.from({ length: 8 }, () => USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]).join('');
}

export const formatUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

/** What a person typed: any case, hyphen and spaces optional. Undefined when it cannot be a code. */
export function normalizeUserCode(typed: string): string | undefined {
  const code = typed.toUpperCase().replace(/[\s-]/g, '');
  return code.length === 8 && [...code].every((c) => USER_CODE_ALPHABET.includes(c)) ? code : undefined;
}

/** Stores a new pending device request with a fresh device code and user code. */
export async function insertDeviceAuthorization(
  db: Kysely<Schema>,
  values: { clientId: string; scope: string; codeChallenge: string },
  now: number,
) {
  for (let attempt = 0; ; attempt++) {
    const row = {
      device_code: randomUUID(),
      user_code: newUserCode(),
      client_id: values.clientId,
      scope: values.scope,
      code_challenge: values.codeChallenge,
      status: 'pending' as const,
      user_id: null,
      interval_seconds: DEVICE_POLL_INTERVAL_SECONDS,
      last_polled_at: null,
      expires_at: now + DEVICE_CODE_TTL_SECONDS * 1000,
    };
    try {
      await db.insertInto('device_authorizations').values(row).execute();
      return row;
    } catch (error) {
      // A user code still in use (expired rows are swept out first): draw another.
      if (!isUniqueViolation(error) || attempt >= 4) throw error;
      await db.deleteFrom('device_authorizations').where('expires_at', '<', now).execute();
    }
  }
}

/**
 * The device page's step: the pending, unexpired request whose user code a person typed starts
 * an interaction (sign in, then consent). Its id, or undefined when the code is not valid.
 */
export async function startDeviceInteraction(
  db: Kysely<Schema>,
  typedUserCode: string,
  now = Date.now(),
): Promise<string | undefined> {
  const code = normalizeUserCode(typedUserCode);
  if (!code) return undefined;
  const pending = await db
    .selectFrom('device_authorizations')
    .select(['device_code', 'client_id', 'scope'])
    .where('user_code', '=', code)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (!pending) return undefined;
  return createInteraction(
    db,
    {
      client_id: pending.client_id,
      scope: pending.scope,
      redirect_uri: null,
      state: null,
      code_challenge: null,
      nonce: null,
      login_hint: null,
      min_auth_time: null,
      device_id: null,
      device_code: pending.device_code,
    },
    now,
  );
}

/** The user code of a device request, as the consent page shows it (to compare with the device's). */
export async function displayedUserCode(db: Kysely<Schema>, deviceCode: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('device_authorizations')
    .select('user_code')
    .where('device_code', '=', deviceCode)
    .executeTakeFirst();
  return row && formatUserCode(row.user_code);
}

/** Records the user's decision on a pending, unexpired device request; false when it no longer is one. */
export async function settleDeviceAuthorization(
  db: Kysely<Schema>,
  deviceCode: string,
  userId: string,
  approved: boolean,
  now: number,
): Promise<boolean> {
  const updated = await db
    .updateTable('device_authorizations')
    .set(approved ? { status: 'approved', user_id: userId } : { status: 'denied' })
    .where('device_code', '=', deviceCode)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return updated.numUpdatedRows > 0n;
}
