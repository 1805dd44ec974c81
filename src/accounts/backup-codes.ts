import { createHash, randomInt } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { lockKey } from '../db/locks.ts';
import type { Schema } from '../db/schema.ts';

/**
 * Backup codes for two-step verification (DESIGN "Self-service accounts"): 10 a set, `xxxx-xxxx`,
 * each usable once. Only a hash is stored. A code has 40 random bits and the hash is salted with
 * the user id, not stretched: a stolen database already holds the account's TOTP secret, which
 * passes the same step, and a fast hash lets one conditional DELETE decide a use.
 */

export const BACKUP_CODES_PER_SET = 10;
// Lowercase letters and digits without the look-alikes 0/o and 1/l: 32 symbols, 5 bits each.
const ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

/** A backup code as typed: any case, spaces, the hyphen optional. Undefined when it is not shaped like one. */
function normalize(code: string): string | undefined {
  const compact = code.replace(/[\s-]+/g, '').toLowerCase();
  return /^[a-z0-9]{8}$/.test(compact) && !/^\d+$/.test(compact) ? compact : undefined;
}

/** Whether the input of a code field is meant as a backup code (a TOTP code is 6 digits). */
export function looksLikeBackupCode(code: string): boolean {
  return code.length <= 64 && normalize(code) !== undefined;
}

const hashCode = (userId: string, normalized: string) =>
  createHash('sha256').update(`${userId}\u0000${normalized}`).digest('base64url');

function newCode(): string {
  let code = '';
  for (let i = 0; i < 8; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  // All digits would read as a TOTP code's kind of input; never happens in practice, but cheap to rule out.
  return /^\d+$/.test(code) ? newCode() : `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * Replaces the user's backup codes with a new set and answers it (shown once, never stored in
 * clear). Call it in the transaction that decides the change. Two replacements at once run one
 * after the other, so the second removes the first's set rather than adding to it.
 */
export async function replaceBackupCodes(
  trx: Transaction<Schema>,
  userId: string,
  now = Date.now(),
): Promise<string[]> {
  await lockKey(trx, `backup-codes:${userId}`);
  const codes = new Set<string>();
  while (codes.size < BACKUP_CODES_PER_SET) codes.add(newCode());
  await removeBackupCodes(trx, userId);
  await trx
    .insertInto('backup_codes')
    .values(
      [...codes].map((code) => ({ user_id: userId, code_hash: hashCode(userId, normalize(code)!), created_at: now })),
    )
    .execute();
  return [...codes];
}

export async function removeBackupCodes(db: Kysely<Schema>, userId: string): Promise<number> {
  const result = await db.deleteFrom('backup_codes').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function countBackupCodes(db: Kysely<Schema>, userId: string): Promise<number> {
  const row = await db
    .selectFrom('backup_codes')
    .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Uses one of the user's backup codes: it is deleted by one statement, so of two simultaneous uses
 * exactly one deletes it and is accepted. Answers how many are left, or undefined when the code is
 * not one of the user's (or was used).
 */
export async function useBackupCode(
  db: Kysely<Schema>,
  userId: string,
  code: string,
): Promise<{ left: number } | undefined> {
  const normalized = normalize(code);
  if (!normalized) return undefined;
  const result = await db
    .deleteFrom('backup_codes')
    .where('user_id', '=', userId)
    .where('code_hash', '=', hashCode(userId, normalized))
    .executeTakeFirst();
  if (result.numDeletedRows === 0n) return undefined;
  return { left: await countBackupCodes(db, userId) };
}
