import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';

/** A device trusted at a two-step sign-in skips the code for this long (DESIGN "v4 login"). */
export const DEVICE_TRUST_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/** Only a hash of device id and user id is stored, so a leaked table names no device. */
const deviceHash = (deviceId: string, userId: string) =>
  createHash('sha256').update(`${deviceId}\u0000${userId}`).digest('base64url');

export async function isTrustedDevice(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string | null,
  now = Date.now(),
): Promise<boolean> {
  if (!deviceId) return false;
  const row = await db
    .selectFrom('trusted_devices')
    .select('user_id')
    .where('device_hash', '=', deviceHash(deviceId, userId))
    .where('created_at', '>', now - DEVICE_TRUST_TTL_MS)
    .executeTakeFirst();
  return row?.user_id === userId;
}

/** Trusts the device for 30 days from now (trusting it again renews the 30 days). */
export async function trustDevice(
  db: Kysely<Schema>,
  userId: string,
  deviceId: string,
  now = Date.now(),
): Promise<void> {
  await db
    .insertInto('trusted_devices')
    .values({ device_hash: deviceHash(deviceId, userId), user_id: userId, created_at: now })
    .onConflict((conflict) => conflict.column('device_hash').doUpdateSet({ created_at: now }))
    .execute();
}

/** A trusted device as its user sees it; `trustId` (the stored hash) names it to end the trust. */
export interface TrustedDevice {
  trustId: string;
  createdAt: number;
}

export async function listTrustedDevices(db: Kysely<Schema>, userId: string): Promise<TrustedDevice[]> {
  const rows = await db
    .selectFrom('trusted_devices')
    .select(['device_hash', 'created_at'])
    .where('user_id', '=', userId)
    .orderBy('created_at', 'desc')
    .orderBy('device_hash')
    .execute();
  return rows.map((row) => ({ trustId: row.device_hash, createdAt: row.created_at }));
}

/** Ends the trust of one of the user's devices (never another user's). */
export async function endDeviceTrust(db: Kysely<Schema>, userId: string, trustId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('trusted_devices')
    .where('device_hash', '=', trustId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Ends the trust of every device of the user (a new password or two-step secret). */
export async function endAllDeviceTrust(db: Kysely<Schema>, userId: string): Promise<number> {
  const result = await db.deleteFrom('trusted_devices').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
