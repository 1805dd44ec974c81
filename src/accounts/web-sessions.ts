import { createCipheriv, createDecipheriv, createHash, randomBytes, randomUUID } from 'node:crypto';
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
  /** The id the account page names this sign-in by (the token's hash never leaves the database). */
  publicId: string;
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
  /** When a page was last loaded with this sign-in, to a minute. */
  lastSeenAt: number;
}

/** What a browser says of itself when it signs in: kept to list its sign-ins on the account page. */
export interface BrowserSeen {
  userAgent?: string | undefined;
  ip?: string | undefined;
}

/** Longer User-Agent strings are cut: the list needs only their start, and the row stays small. */
export const USER_AGENT_LIMIT = 512;
/** A sign-in's last-seen time is written at most this often, so page loads stay reads. */
export const LAST_SEEN_STEP_MS = 60_000;

/** A User-Agent as stored: no control characters (CR, LF, NUL and the others), at most USER_AGENT_LIMIT long. */
export function boundedUserAgent(value: string | undefined): string | null {
  if (!value) return null;
  const clean = value
    .replace(/[\u0000-\u001f\u007f]/g, ' ')
    .trim()
    .slice(0, USER_AGENT_LIMIT);
  return clean === '' ? null : clean;
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
    .select([
      'public_id',
      'user_id',
      'mfa_pending',
      'created_at',
      'expires_at',
      'pending_totp_secret',
      'auth_methods',
      'last_seen_at',
    ])
    .where('session_hash', '=', sessionHash)
    .executeTakeFirst();
  if (!row || row.expires_at <= now) return undefined;
  return {
    token,
    publicId: row.public_id,
    lastSeenAt: Number(row.last_seen_at),
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
  browser: BrowserSeen = {},
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
      public_id: randomUUID(),
      user_agent: boundedUserAgent(browser.userAgent),
      ip: browser.ip ?? null,
      last_seen_at: now,
    })
    .execute();
  return { token, ttlMs };
}

/**
 * Notes that a page was loaded with this sign-in (and from where), at most once a minute: the
 * condition on last_seen_at makes every other load, and a simultaneous one, write nothing.
 */
export async function touchWebSession(
  db: Kysely<Schema>,
  session: Pick<WebSession, 'token' | 'lastSeenAt'>,
  ip: string | undefined,
  now = Date.now(),
): Promise<void> {
  if (now - session.lastSeenAt < LAST_SEEN_STEP_MS) return;
  await db
    .updateTable('web_sessions')
    .set({ last_seen_at: now, ...(ip ? { ip } : {}) })
    .where('session_hash', '=', hashSecret(session.token))
    .where('last_seen_at', '<=', now - LAST_SEEN_STEP_MS)
    .execute();
}

/** A browser sign-in as the account page lists it. */
export interface BrowserSignIn {
  publicId: string;
  userAgent: string | null;
  ip: string | null;
  createdAt: number;
  lastSeenAt: number;
}

/** The user's full browser sign-ins that have not expired, the most recently seen first. */
export async function listWebSessions(db: Kysely<Schema>, userId: string, now = Date.now()): Promise<BrowserSignIn[]> {
  const rows = await db
    .selectFrom('web_sessions')
    .select(['public_id', 'user_agent', 'ip', 'created_at', 'last_seen_at'])
    .where('user_id', '=', userId)
    .where('mfa_pending', '=', 0)
    .where('expires_at', '>', now)
    .orderBy('last_seen_at', 'desc')
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map((row) => ({
    publicId: row.public_id,
    userAgent: row.user_agent,
    ip: row.ip,
    createdAt: row.created_at,
    lastSeenAt: Number(row.last_seen_at),
  }));
}

/** Ends one of the user's browser sign-ins, named by its public id; false when there is none (any more). */
export async function endWebSessionById(db: Kysely<Schema>, userId: string, publicId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('web_sessions')
    .where('user_id', '=', userId)
    .where('public_id', '=', publicId)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function deleteWebSession(db: Kysely<Schema>, token: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('session_hash', '=', hashSecret(token)).execute();
}

/** Ends every sign-in of the user still waiting for its two-step code (too many wrong codes). */
export async function endPendingWebSessions(db: Kysely<Schema>, userId: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('user_id', '=', userId).where('mfa_pending', '=', 1).execute();
}

/** Signs the user out of every browser but the one holding `keepToken` (a new password); answers how many. */
export async function endOtherWebSessions(
  db: Kysely<Schema>,
  userId: string,
  keepToken: string | null,
): Promise<number> {
  let query = db.deleteFrom('web_sessions').where('user_id', '=', userId);
  if (keepToken !== null) query = query.where('session_hash', '!=', hashSecret(keepToken));
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
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
