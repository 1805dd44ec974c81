import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';

/** A user's passkey as the account page and the sign-in step see it. */
export interface Passkey {
  credentialId: string;
  userId: string;
  /** base64url of the COSE public key. */
  publicKey: string;
  counter: number;
  transports: string[];
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

type Row = Schema['passkeys'];

function toPasskey(row: Row): Passkey {
  let transports: string[] = [];
  try {
    const parsed: unknown = JSON.parse(row.transports);
    if (Array.isArray(parsed)) transports = parsed.filter((t): t is string => typeof t === 'string');
  } catch {
    // A malformed list only loses the browser's hint.
  }
  return {
    credentialId: row.credential_id,
    userId: row.user_id,
    publicKey: row.public_key,
    counter: Number(row.counter),
    transports,
    name: row.name,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

/** A credential id as browsers send it: base64url, at most 1023 bytes decoded (WebAuthn §5.1). */
export const isCredentialId = (value: unknown): value is string =>
  typeof value === 'string' && /^[A-Za-z0-9_-]{16,1364}$/.test(value);

/** A passkey's name: 1 to 64 characters, no control characters; answers the cleaned name or undefined. */
export function cleanPasskeyName(value: string): string | undefined {
  const name = value.trim().replace(/\s+/g, ' ');
  if (name.length === 0 || name.length > 64 || /\p{Cc}/u.test(name)) return undefined;
  return name;
}

export async function listPasskeys(db: Kysely<Schema>, userId: string): Promise<Passkey[]> {
  const rows = await db
    .selectFrom('passkeys')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at', 'asc')
    .orderBy('credential_id', 'asc')
    .execute();
  return rows.map(toPasskey);
}

export async function findPasskey(db: Kysely<Schema>, credentialId: string): Promise<Passkey | undefined> {
  if (!isCredentialId(credentialId)) return undefined;
  const row = await db.selectFrom('passkeys').selectAll().where('credential_id', '=', credentialId).executeTakeFirst();
  return row && toPasskey(row);
}

export async function insertPasskey(db: Kysely<Schema>, passkey: Omit<Passkey, 'lastUsedAt'>): Promise<void> {
  await db
    .insertInto('passkeys')
    .values({
      credential_id: passkey.credentialId,
      user_id: passkey.userId,
      public_key: passkey.publicKey,
      counter: passkey.counter,
      transports: JSON.stringify(passkey.transports),
      name: passkey.name,
      created_at: passkey.createdAt,
      last_used_at: null,
    })
    .execute();
}

export async function renamePasskey(
  db: Kysely<Schema>,
  userId: string,
  credentialId: string,
  name: string,
): Promise<boolean> {
  if (!isCredentialId(credentialId)) return false;
  const result = await db
    .updateTable('passkeys')
    .set({ name })
    .where('credential_id', '=', credentialId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function deletePasskey(db: Kysely<Schema>, userId: string, credentialId: string): Promise<boolean> {
  if (!isCredentialId(credentialId)) return false;
  const result = await db
    .deleteFrom('passkeys')
    .where('credential_id', '=', credentialId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * Records a verified use. An authenticator that keeps a counter must have moved it forward past the
 * stored one, decided by one conditional UPDATE, so of two assertions racing with the same or a
 * lower counter only one is accepted. One that keeps none (0, stored 0) is always accepted.
 */
export async function recordPasskeyUse(
  db: Kysely<Schema>,
  credentialId: string,
  newCounter: number,
  now = Date.now(),
): Promise<boolean> {
  const result = await db
    .updateTable('passkeys')
    .set({ counter: newCounter, last_used_at: now })
    .where('credential_id', '=', credentialId)
    .where((eb) => (newCounter === 0 ? eb('counter', '=', 0) : eb('counter', '<', newCounter)))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
