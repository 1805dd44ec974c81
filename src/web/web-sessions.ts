import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { hashSecret, newSecret } from '../oauth/secrets.ts';

/** A browser's sign-in lasts this long; one waiting for its two-step code, much less. */
const SIGNED_IN_TTL_MS = 12 * 60 * 60 * 1000;
const MFA_PENDING_TTL_MS = 10 * 60 * 1000;
export const SESSION_COOKIE = 'sid';

export interface WebSession {
  token: string;
  userId: string;
  mfaPending: boolean;
  /** A two-step secret being set up on the account page, not yet confirmed. */
  pendingTotpSecret: string | null;
  /** When the browser signed in (a completed two-step step starts a new sign-in). */
  createdAt: number;
}

function cookieOptions(request: FastifyRequest, maxAgeMs: number) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: request.server.config.baseUrl.startsWith('https:'),
    maxAge: Math.floor(maxAgeMs / 1000),
  };
}

export async function readWebSession(request: FastifyRequest): Promise<WebSession | undefined> {
  const token = request.cookies[SESSION_COOKIE];
  if (!token) return undefined;
  const row = await request.server.database.db
    .selectFrom('web_sessions')
    .select(['user_id', 'mfa_pending', 'expires_at', 'pending_totp_secret', 'created_at'])
    .where('session_hash', '=', hashSecret(token))
    .executeTakeFirst();
  if (!row || row.expires_at <= Date.now()) return undefined;
  return { token, userId: row.user_id, mfaPending: row.mfa_pending === 1, pendingTotpSecret: row.pending_totp_secret, createdAt: Number(row.created_at) };
}

/** Signs the browser in (fully, or pending its two-step code), replacing any earlier sign-in. */
export async function startWebSession(request: FastifyRequest, reply: FastifyReply, userId: string, mfaPending: boolean): Promise<void> {
  await endWebSession(request, reply);
  const token = newSecret();
  const now = Date.now();
  const ttl = mfaPending ? MFA_PENDING_TTL_MS : SIGNED_IN_TTL_MS;
  await request.server.database.db
    .insertInto('web_sessions')
    .values({ session_hash: hashSecret(token), user_id: userId, mfa_pending: mfaPending ? 1 : 0, created_at: now, expires_at: now + ttl })
    .execute();
  reply.setCookie(SESSION_COOKIE, token, cookieOptions(request, ttl));
}

/** The two-step code was right: the pending sign-in becomes a full one, under a new token. */
export async function completeTwoStep(request: FastifyRequest, reply: FastifyReply, session: WebSession): Promise<void> {
  await startWebSession(request, reply, session.userId, false);
}

export async function endWebSession(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const token = request.cookies[SESSION_COOKIE];
  if (!token) return;
  await request.server.database.db.deleteFrom('web_sessions').where('session_hash', '=', hashSecret(token)).execute();
  reply.clearCookie(SESSION_COOKIE, { path: '/' });
}

/**
 * Ends every sign-in of the user still waiting for its two-step code (too many wrong codes): each
 * must start again with the password. The browser's own cookie is cleared too.
 */
export async function endPendingSignIns(request: FastifyRequest, reply: FastifyReply, userId: string): Promise<void> {
  await request.server.database.db.deleteFrom('web_sessions').where('user_id', '=', userId).where('mfa_pending', '=', 1).execute();
  reply.clearCookie(SESSION_COOKIE, { path: '/' });
}

/** Keeps (or, with null, forgets) the two-step secret the signed-in browser is setting up. */
export async function setPendingTotpSecret(db: Kysely<Schema>, session: WebSession, secret: string | null): Promise<void> {
  await db.updateTable('web_sessions').set({ pending_totp_secret: secret }).where('session_hash', '=', hashSecret(session.token)).execute();
}

/** Signs the user out of every browser but the one of `keep` (a new password). */
export async function endOtherWebSessions(db: Kysely<Schema>, keep: WebSession): Promise<void> {
  await db.deleteFrom('web_sessions').where('user_id', '=', keep.userId).where('session_hash', '!=', hashSecret(keep.token)).execute();
}
