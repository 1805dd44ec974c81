import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { uuidv7 } from '../http/uuid.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';
import type { SendAccountMail } from './account-mail.ts';
import { findAccountByLogin } from './accounts.ts';
import { type EventOrigin, recordSecurityEvent } from './security-events.ts';

/**
 * Invitations (DESIGN "Operating a public service", SIGN_UP=invite): an operator invites an
 * address, which gets a single-use link `{base}/account/sign-up?invitation=…` valid 7 days; only
 * the hash of its token is stored. Pending invitations are listed and can be revoked; a revoked or
 * used one stays until it expires, so its link can say which it is (then the purge removes it).
 * Using one is a conditional UPDATE: of two simultaneous uses, one wins.
 */

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export interface Invitation {
  invitationId: string;
  email: string;
  invitedBy: string | null;
  /** The inviting operator's username (null when erased). */
  invitedByUsername: string | null;
  createdAt: number;
  expiresAt: number;
}

/** What a link's token finds: a pending invitation, or why it no longer works. */
export type InvitationState =
  | { kind: 'pending'; invitation: Invitation }
  | { kind: 'used' }
  | { kind: 'revoked' }
  | { kind: 'expired' }
  | { kind: 'unknown' };

/** Why a link's invitation no longer works. */
export type InvitationEnd = Exclude<InvitationState['kind'], 'pending'>;

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const invitationLink = (baseUrl: string, token: string) => `${baseUrl}/account/sign-up?invitation=${token}`;

export interface InviteContext {
  db: Kysely<Schema>;
  send: SendAccountMail;
  baseUrl: string;
  origin?: EventOrigin;
  operatorId: string;
}

export type InviteOutcome =
  | { kind: 'sent'; invitationId: string }
  /** The address has an account already. */
  | { kind: 'has account' }
  | { kind: 'mail failed' };

/**
 * Invites `email` (checked and lowercased by the caller): stores the invitation, mails its link,
 * and only once the mail went out ends the address's earlier pending invitations (a new link
 * replaces the old) and records invitation_sent with the operator's id. A failed mail leaves
 * nothing behind. The event names the invitation, not the address: the log keeps no address of
 * someone who may never have an account.
 */
export async function inviteAddress(ctx: InviteContext, email: string, now = Date.now()): Promise<InviteOutcome> {
  if (await findAccountByLogin(ctx.db, email)) return { kind: 'has account' };
  const token = newSecret();
  const invitationId = uuidv7();
  await ctx.db
    .insertInto('invitations')
    .values({
      invitation_id: invitationId,
      email,
      token_hash: hashSecret(token),
      invited_by: ctx.operatorId,
      created_at: now,
      expires_at: now + INVITATION_TTL_MS,
      revoked_at: null,
      used_at: null,
    })
    .execute();
  const outcome = await ctx.send(email, {
    kind: 'invitation',
    data: { link: invitationLink(ctx.baseUrl, token) },
  });
  if (outcome === 'failed') {
    await ctx.db.deleteFrom('invitations').where('invitation_id', '=', invitationId).execute();
    return { kind: 'mail failed' };
  }
  await ctx.db
    .updateTable('invitations')
    .set({ revoked_at: now })
    .where('email', '=', email)
    .where('invitation_id', '<>', invitationId)
    .where('revoked_at', 'is', null)
    .where('used_at', 'is', null)
    .execute();
  await recordSecurityEvent(ctx.db, ctx.origin, {
    kind: 'invitation_sent',
    userId: null,
    details: { via: 'web', operator_id: ctx.operatorId, invitation_id: invitationId },
  });
  return { kind: 'sent', invitationId };
}

/** Pending invitations (neither used, revoked nor expired), newest first. */
export async function listPendingInvitations(db: Kysely<Schema>, now = Date.now(), limit = 200): Promise<Invitation[]> {
  const rows = await db
    .selectFrom('invitations as i')
    .leftJoin('users as u', 'u.user_id', 'i.invited_by')
    .select(['i.invitation_id', 'i.email', 'i.invited_by', 'u.username', 'i.created_at', 'i.expires_at'])
    .where('i.revoked_at', 'is', null)
    .where('i.used_at', 'is', null)
    .where('i.expires_at', '>', now)
    .orderBy('i.created_at', 'desc')
    .orderBy('i.invitation_id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    invitationId: row.invitation_id,
    email: row.email,
    invitedBy: row.invited_by,
    invitedByUsername: row.username ?? null,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  }));
}

/**
 * Revokes a pending invitation (its link stops working at once). Answers false when there is no
 * such pending invitation (revoked already: a double submit, used, expired, or no such id).
 */
export async function revokeInvitation(db: Kysely<Schema>, invitationId: string, now = Date.now()): Promise<boolean> {
  const result = await db
    .updateTable('invitations')
    .set({ revoked_at: now })
    .where('invitation_id', '=', invitationId)
    .where('revoked_at', 'is', null)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** What the link's token finds (see InvitationState). */
export async function findInvitation(db: Kysely<Schema>, token: string, now = Date.now()): Promise<InvitationState> {
  if (!TOKEN.test(token)) return { kind: 'unknown' };
  const row = await db
    .selectFrom('invitations')
    .selectAll()
    .where('token_hash', '=', hashSecret(token))
    .executeTakeFirst();
  if (!row) return { kind: 'unknown' };
  if (row.used_at !== null) return { kind: 'used' };
  if (row.revoked_at !== null) return { kind: 'revoked' };
  if (Number(row.expires_at) <= now) return { kind: 'expired' };
  return {
    kind: 'pending',
    invitation: {
      invitationId: row.invitation_id,
      email: row.email,
      invitedBy: row.invited_by,
      invitedByUsername: null,
      createdAt: Number(row.created_at),
      expiresAt: Number(row.expires_at),
    },
  };
}

/**
 * Claims a pending invitation for the sign-up it is used for: one conditional UPDATE, so of two
 * simultaneous uses only one gets it. Answers the invitation's id and address.
 */
export async function claimInvitation(
  db: Kysely<Schema>,
  token: string,
  now = Date.now(),
): Promise<{ invitationId: string; email: string } | undefined> {
  if (!TOKEN.test(token)) return undefined;
  const row = await db
    .updateTable('invitations')
    .set({ used_at: now })
    .where('token_hash', '=', hashSecret(token))
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['invitation_id', 'email'])
    .executeTakeFirst();
  return row && { invitationId: row.invitation_id, email: row.email };
}

/** Gives back a claimed invitation whose sign-up failed (a username taken meanwhile). */
export async function releaseInvitation(db: Kysely<Schema>, invitationId: string): Promise<void> {
  await db.updateTable('invitations').set({ used_at: null }).where('invitation_id', '=', invitationId).execute();
}
