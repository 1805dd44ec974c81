import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';

/**
 * Browser sign-ins (table web_sessions): which account a browser is signed in to, fully or
 * waiting for its two-step code. The cookie that carries the token is the pages' (src/web/web-sessions.ts);
 * the rows are the accounts feature's, so a new password can end them in its own transaction.
 */

/** A browser's sign-in lasts this long; one waiting for its two-step code, much less. */
export const SIGNED_IN_TTL_MS = 12 * 60 * 60 * 1000;
export const MFA_PENDING_TTL_MS = 10 * 60 * 1000;

export interface WebSession {
  token: string;
  userId: string;
  mfaPending: boolean;
  /**
   * When this sign-in was made (its last step passed): a full sign-in starts anew when its
   * two-step code is right, so for a full one this is when the user last proved who they are.
   */
  signedInAt: number;
  /** How the person proved who they are, as RFC 8176 names it (an ID token's amr). */
  authMethods: string[];
  /** The stored hash of the token: names this sign-in to other features (the sessions started from it). */
  sessionHash: string;
  /** A two-step secret being set up on the account page, not yet confirmed. */
  pendingTotpSecret: string | null;
}

export async function findWebSession(
  db: Kysely<Schema>,
  token: string,
  now = Date.now(),
): Promise<WebSession | undefined> {
  if (token.length > 128) return undefined;
  const sessionHash = hashSecret(token);
  const row = await db
    .selectFrom('web_sessions')
    .select(['user_id', 'mfa_pending', 'created_at', 'expires_at', 'pending_totp_secret', 'auth_methods'])
    .where('session_hash', '=', sessionHash)
    .executeTakeFirst();
  if (!row || row.expires_at <= now) return undefined;
  return {
    token,
    userId: row.user_id,
    mfaPending: row.mfa_pending === 1,
    signedInAt: Number(row.created_at),
    authMethods: row.auth_methods === null ? ['pwd'] : (JSON.parse(row.auth_methods) as string[]),
    sessionHash,
    pendingTotpSecret: row.pending_totp_secret,
  };
}

/**
 * RFC 8176's names for how a sign-in was made: `pwd` for a password, with `otp` and `mfa` for a
 * two-step or backup code; a passkey is proof of possession with user verification (`pop`, `mfa`).
 */
export function authMethodsOf(method: 'password' | 'passkey', twoStep: string | undefined): string[] {
  if (method === 'passkey') return ['pop', 'mfa'];
  return twoStep === 'code' || twoStep === 'backup_code' ? ['pwd', 'otp', 'mfa'] : ['pwd'];
}

/** A new sign-in of the user (full, or waiting for its code): its token and how long it lasts. */
export async function createWebSession(
  db: Kysely<Schema>,
  userId: string,
  mfaPending: boolean,
  now = Date.now(),
  authMethods: readonly string[] = ['pwd'],
): Promise<{ token: string; ttlMs: number }> {
  const token = newSecret();
  const ttlMs = mfaPending ? MFA_PENDING_TTL_MS : SIGNED_IN_TTL_MS;
  await db
    .insertInto('web_sessions')
    .values({
      session_hash: hashSecret(token),
      user_id: userId,
      mfa_pending: mfaPending ? 1 : 0,
      created_at: now,
      expires_at: now + ttlMs,
      auth_methods: JSON.stringify(authMethods),
    })
    .execute();
  return { token, ttlMs };
}

export async function deleteWebSession(db: Kysely<Schema>, token: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('session_hash', '=', hashSecret(token)).execute();
}

/** Ends every sign-in of the user still waiting for its two-step code (too many wrong codes). */
export async function endPendingWebSessions(db: Kysely<Schema>, userId: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('user_id', '=', userId).where('mfa_pending', '=', 1).execute();
}

/** Signs the user out of every browser but the one holding `keepToken` (a new password). */
export async function endOtherWebSessions(db: Kysely<Schema>, userId: string, keepToken: string | null): Promise<void> {
  let query = db.deleteFrom('web_sessions').where('user_id', '=', userId);
  if (keepToken !== null) query = query.where('session_hash', '!=', hashSecret(keepToken));
  await query.execute();
}

/** Keeps (or, with null, forgets) the two-step secret the signed-in browser is setting up. */
export async function setPendingTotpSecret(db: Kysely<Schema>, token: string, secret: string | null): Promise<void> {
  await db
    .updateTable('web_sessions')
    .set({ pending_totp_secret: secret })
    .where('session_hash', '=', hashSecret(token))
    .execute();
}

// The key only the browser's token gives: the database holds just the token's hash.
const showKey = (token: string) => createHash('sha256').update(`backup codes to show\u0000${token}`).digest();

/** Keeps a new set of backup codes to show once on this browser's next account page. */
export async function keepBackupCodesToShow(
  db: Kysely<Schema>,
  token: string,
  codes: readonly string[],
): Promise<void> {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', showKey(token), iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(codes), 'utf8'), cipher.final()]);
  const stored = Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
  await db
    .updateTable('web_sessions')
    .set({ backup_codes_to_show: stored })
    .where('session_hash', '=', hashSecret(token))
    .execute();
}

/** The backup codes this browser is to be shown, once: whoever clears them first shows them. */
export async function takeBackupCodesToShow(db: Kysely<Schema>, token: string): Promise<string[] | undefined> {
  const hash = hashSecret(token);
  const row = await db
    .selectFrom('web_sessions')
    .select('backup_codes_to_show')
    .where('session_hash', '=', hash)
    .executeTakeFirst();
  const stored = row?.backup_codes_to_show;
  if (!stored) return undefined;
  const cleared = await db
    .updateTable('web_sessions')
    .set({ backup_codes_to_show: null })
    .where('session_hash', '=', hash)
    .where('backup_codes_to_show', '=', stored)
    .executeTakeFirst();
  if (cleared.numUpdatedRows === 0n) return undefined;
  try {
    const raw = Buffer.from(stored, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', showKey(token), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return JSON.parse(
      Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'),
    ) as string[];
  } catch {
    return undefined;
  }
}
