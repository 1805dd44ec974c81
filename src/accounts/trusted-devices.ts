import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';

/** Only a hash of device id and user id is stored, so a leaked table names no device. */
const deviceHash = (deviceId: string, userId: string) => createHash('sha256').update(`${deviceId}\u0000${userId}`).digest('base64url');

export async function isTrustedDevice(db: Kysely<Schema>, userId: string, deviceId: string | null): Promise<boolean> {
  if (!deviceId) return false;
  const row = await db.selectFrom('trusted_devices').select('user_id').where('device_hash', '=', deviceHash(deviceId, userId)).executeTakeFirst();
  return row?.user_id === userId;
}

export async function trustDevice(db: Kysely<Schema>, userId: string, deviceId: string): Promise<void> {
  await db
    .insertInto('trusted_devices')
    .values({ device_hash: deviceHash(deviceId, userId), user_id: userId, created_at: Date.now() })
    .onConflict((conflict) => conflict.column('device_hash').doNothing())
    .execute();
}
