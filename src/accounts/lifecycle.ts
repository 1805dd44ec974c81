/**
 * The account lifecycle as operators govern it (DESIGN "Operating a public service"), from the
 * console or the admin CLI, and a person's own data and deletion:
 *
 *   makeOperator / revokeOperator   operator_granted / operator_revoked
 *   lockAccount / unlockAccount     account_locked / account_unlocked
 *   endAllSessions                  sessions_ended_by_operator
 *   removeTwoStep                   two_step_removed_by_operator
 *   sendReset                       reset_sent_by_operator
 *   eraseAccount                    account_deleted (by an operator or the person)
 *   exportData                      data_exported
 *
 * Each runs in one transaction that also records its event, and is idempotent: repeating an
 * action that is done already (a double submit) changes nothing and records nothing ('unchanged').
 * The actions run one at a time (one lock), so the last operator stays one even when two are
 * demoted at once, and a lock racing a deletion of the same account sees it deleted.
 */
import type { Kysely, Transaction } from 'kysely';
import { lockKey } from '../db/locks.ts';
import type { Schema } from '../db/schema.ts';
import type { SendAccountMail } from './account-mail.ts';
import type { Account } from './accounts.ts';
import type { ApplicationSessions } from './application-sessions.ts';
import { countBackupCodes, removeBackupCodes } from './backup-codes.ts';
import type { AccountEraser } from './erasure.ts';
import { listPasskeys } from './passkeys.ts';
import {
  type EventDetails,
  type EventOrigin,
  listSecurityEvents,
  type NewSecurityEvent,
  recordSecurityEvent,
} from './security-events.ts';
import { type Links, requestCode } from './self-service.ts';
import { checkCurrentPassword, checkTwoStepCode, type Limited, type SignInContext, type Wrong } from './sign-in.ts';
import { endAllDeviceTrust, listTrustedDevices } from './trusted-devices.ts';
import { endRequestsOfUser } from './verification-requests.ts';
import { endOtherWebSessions } from './web-sessions.ts';

/** Who acts and through what, for every lifecycle action. */
export interface LifecycleContext {
  db: Kysely<Schema>;
  applicationSessions: ApplicationSessions;
  /** Every feature's part of an erasure, accounts/' last (src/app.ts). */
  erasers: readonly AccountEraser[];
  origin?: EventOrigin | undefined;
  via: 'cli' | 'web';
  /** The operator acting (the console), or the person (own deletion, own export); null: the CLI. */
  actorId: string | null;
}

export type LifecycleOutcome =
  | { kind: 'done' }
  /** Done already (a double submit): nothing changed, nothing recorded. */
  | { kind: 'unchanged' }
  | { kind: 'unknown' }
  /** The last active operator can be neither demoted, locked nor deleted. */
  | { kind: 'last operator' };

const LIFECYCLE_LOCK = 'account-lifecycle';
const DONE = { kind: 'done' } as const;
const UNCHANGED = { kind: 'unchanged' } as const;
const UNKNOWN = { kind: 'unknown' } as const;

const actorDetails = (ctx: LifecycleContext): EventDetails => ({ via: ctx.via, operator_id: ctx.actorId });

function record(ctx: LifecycleContext, trx: Kysely<Schema>, event: NewSecurityEvent): Promise<void> {
  return recordSecurityEvent(trx, ctx.origin, { ...event, details: { ...actorDetails(ctx), ...event.details } });
}

/** Runs `work` in a transaction holding the lifecycle lock. */
function serialized<T>(ctx: LifecycleContext, work: (trx: Transaction<Schema>) => Promise<T>): Promise<T> {
  return ctx.db.transaction().execute(async (trx) => {
    await lockKey(trx, LIFECYCLE_LOCK);
    return work(trx);
  });
}

type Target = { operator: boolean; locked: boolean };

async function targetOf(trx: Kysely<Schema>, userId: string): Promise<Target | undefined> {
  const row = await trx
    .selectFrom('users')
    .select(['operator', 'locked_at'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row && { operator: row.operator === 1, locked: row.locked_at !== null };
}

/** Whether `target` is the only operator who is not locked (who alone can still reach the console). */
async function isLastOperator(trx: Kysely<Schema>, target: Target): Promise<boolean> {
  if (!target.operator || target.locked) return false;
  const { count } = await trx
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('operator', '=', 1)
    .where('locked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(count) <= 1;
}

export function makeOperator(ctx: LifecycleContext, userId: string): Promise<LifecycleOutcome> {
  return serialized(ctx, async (trx) => {
    const changed = await trx
      .updateTable('users')
      .set({ operator: 1 })
      .where('user_id', '=', userId)
      .where('operator', '=', 0)
      .executeTakeFirst();
    if (changed.numUpdatedRows === 0n) return (await targetOf(trx, userId)) ? UNCHANGED : UNKNOWN;
    await record(ctx, trx, { kind: 'operator_granted', userId });
    return DONE;
  });
}

export function revokeOperator(ctx: LifecycleContext, userId: string): Promise<LifecycleOutcome> {
  return serialized(ctx, async (trx) => {
    const target = await targetOf(trx, userId);
    if (!target) return UNKNOWN;
    if (!target.operator) return UNCHANGED;
    if (await isLastOperator(trx, target)) return { kind: 'last operator' } as const;
    await trx.updateTable('users').set({ operator: 0 }).where('user_id', '=', userId).execute();
    await record(ctx, trx, { kind: 'operator_revoked', userId });
    return DONE;
  });
}

/**
 * Locks the account: at once, every browser sign-in, application session (and every code or
 * device authorization that could become one) and device trust ends, and every pending reset or
 * e-mail change link; until unlocked, every way in refuses it (each checks locked_at in the
 * statement it runs anyway). The reason is for operators: it is never shown to the person.
 */
export function lockAccount(ctx: LifecycleContext, userId: string, reason: string): Promise<LifecycleOutcome> {
  return serialized(ctx, async (trx) => {
    const target = await targetOf(trx, userId);
    if (!target) return UNKNOWN;
    if (target.locked) return UNCHANGED;
    if (await isLastOperator(trx, target)) return { kind: 'last operator' } as const;
    await trx
      .updateTable('users')
      .set({ locked_at: Date.now(), lock_reason: reason })
      .where('user_id', '=', userId)
      .execute();
    await endOtherWebSessions(trx, userId, null);
    const sessionsEnded = await ctx.applicationSessions.endEverythingOfUser(trx, userId);
    const deviceTrustsEnded = await endAllDeviceTrust(trx, userId);
    await endRequestsOfUser(trx, userId);
    await record(ctx, trx, {
      kind: 'account_locked',
      userId,
      details: { reason, sessions_ended: sessionsEnded, device_trusts_ended: deviceTrustsEnded },
    });
    return DONE;
  });
}

/** Unlocks the account: it can sign in again; the sessions the lock ended stay ended. */
export function unlockAccount(ctx: LifecycleContext, userId: string): Promise<LifecycleOutcome> {
  return serialized(ctx, async (trx) => {
    const changed = await trx
      .updateTable('users')
      .set({ locked_at: null, lock_reason: null })
      .where('user_id', '=', userId)
      .where('locked_at', 'is not', null)
      .executeTakeFirst();
    if (changed.numUpdatedRows === 0n) return (await targetOf(trx, userId)) ? UNCHANGED : UNKNOWN;
    await record(ctx, trx, { kind: 'account_unlocked', userId });
    return DONE;
  });
}

/** Signs the account out of every browser and application; 'unchanged' when none was signed in. */
export function endAllSessions(ctx: LifecycleContext, userId: string): Promise<LifecycleOutcome> {
  return serialized(ctx, async (trx) => {
    if (!(await targetOf(trx, userId))) return UNKNOWN;
    const browsers = await trx.deleteFrom('web_sessions').where('user_id', '=', userId).executeTakeFirst();
    const sessions = await ctx.applicationSessions.endAllOfUser(trx, userId);
    if (browsers.numDeletedRows === 0n && sessions === 0) return UNCHANGED;
    await record(ctx, trx, {
      kind: 'sessions_ended_by_operator',
      userId,
      details: { browser_sign_ins_ended: Number(browsers.numDeletedRows), sessions_ended: sessions },
    });
    return DONE;
  });
}

/** Turns two-step off (a person who lost the authenticator and the backup codes): codes and device trusts go too. */
export function removeTwoStep(ctx: LifecycleContext, userId: string): Promise<LifecycleOutcome> {
  return serialized(ctx, async (trx) => {
    const changed = await trx
      .updateTable('users')
      .set({ totp_secret: null, totp_last_step: null })
      .where('user_id', '=', userId)
      .where('totp_secret', 'is not', null)
      .executeTakeFirst();
    if (changed.numUpdatedRows === 0n) return (await targetOf(trx, userId)) ? UNCHANGED : UNKNOWN;
    await removeBackupCodes(trx, userId);
    await endAllDeviceTrust(trx, userId);
    await record(ctx, trx, { kind: 'two_step_removed_by_operator', userId });
    return DONE;
  });
}

/** A reset mail sent in the last minute is not sent again (a double submit). */
const RESET_REPEAT_MS = 60_000;

/**
 * Sends the account's address a password reset code and link, as if the person had asked.
 * 'unchanged': one went out within the last minute, or the account has no address or is locked
 * (a reset could not complete).
 */
export async function sendReset(
  ctx: LifecycleContext & { send: SendAccountMail; links: Links },
  userId: string,
): Promise<LifecycleOutcome | { kind: 'mail failed' }> {
  const { db } = ctx;
  const user = await db
    .selectFrom('users')
    .select(['email', 'locked_at'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (!user) return UNKNOWN;
  if (!user.email || user.locked_at !== null) return UNCHANGED;
  const recent = await db
    .selectFrom('verification_requests')
    .select('request_id')
    .where('user_id', '=', userId)
    .where('purpose', '=', 'reset')
    .where('created_at', '>', Date.now() - RESET_REPEAT_MS)
    .executeTakeFirst();
  if (recent) return UNCHANGED;
  const sent = await requestCode(db, ctx.send, ctx.links, { purpose: 'reset', address: user.email });
  if (sent.kind === 'mail failed') return sent;
  await record(ctx, db, { kind: 'reset_sent_by_operator', userId });
  return DONE;
}

/**
 * Erases the account and every row about it, each feature its own (ctx.erasers), in one
 * transaction: its address, password, two-step, codes, passkeys, sign-ins, sessions, device
 * trusts, its applications and their sessions, and what it published. Its security events stay
 * with only the user id. The last active operator cannot be erased.
 */
export function eraseAccount(ctx: LifecycleContext, userId: string): Promise<LifecycleOutcome> {
  return serialized(ctx, async (trx) => {
    const target = await targetOf(trx, userId);
    if (!target) return UNKNOWN;
    if (await isLastOperator(trx, target)) return { kind: 'last operator' } as const;
    for (const eraser of ctx.erasers) await eraser.erase(trx, userId);
    const self = ctx.actorId === userId;
    await recordSecurityEvent(trx, ctx.origin, {
      kind: 'account_deleted',
      userId,
      details: { via: ctx.via, operator_id: self ? null : ctx.actorId, by: self ? 'self' : 'operator' },
    });
    return DONE;
  });
}

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/**
 * The person's data (GDPR art. 15 and 20) as one JSON document: profile, address, sign-ins,
 * sessions, trusted devices, passkeys, applications and security events. It holds no secret: no
 * password hash, two-step secret, code, token, key or stored hash of one. Records data_exported.
 */
export async function exportData(ctx: LifecycleContext, userId: string): Promise<Record<string, unknown> | undefined> {
  const { db } = ctx;
  const user = await db
    .selectFrom('users')
    .select(['user_id', 'username', 'email', 'created_at', 'totp_secret', 'password_hash', 'operator', 'locked_at'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (!user) return undefined;
  const [browsers, sessions, devices, passkeys, applications, backupCodes, events] = await Promise.all([
    db
      .selectFrom('web_sessions')
      .select(['created_at', 'expires_at', 'mfa_pending'])
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .execute(),
    ctx.applicationSessions.listOfUser(db, userId),
    listTrustedDevices(db, userId),
    listPasskeys(db, userId),
    ctx.applicationSessions.applicationsOfUser(db, userId),
    countBackupCodes(db, userId),
    listSecurityEvents(db, { userId, limit: 10_000 }),
  ]);
  await record(ctx, db, { kind: 'data_exported', userId });
  return {
    exported_at: new Date().toISOString(),
    profile: {
      user_id: user.user_id,
      username: user.username,
      created: iso(user.created_at),
      password_sign_in: user.password_hash !== null,
      two_step: user.totp_secret !== null,
      backup_codes_left: backupCodes,
      operator: user.operator === 1,
      locked: user.locked_at !== null,
    },
    email: user.email,
    browser_sign_ins: browsers.map((row) => ({
      created: iso(row.created_at),
      expires: iso(row.expires_at),
      waiting_for_two_step: row.mfa_pending === 1,
    })),
    sessions: sessions.map((session) => ({
      application: session.applicationName,
      client_id: session.clientId,
      scope: session.scope,
      created: iso(session.createdAt),
      last_used: iso(session.lastUsedAt),
    })),
    trusted_devices: devices.map((device) => ({ trusted_since: iso(device.createdAt) })),
    passkeys: passkeys.map((passkey) => ({
      name: passkey.name,
      created: iso(passkey.createdAt),
      last_used: iso(passkey.lastUsedAt),
    })),
    applications: applications.map((app) => ({
      client_id: app.clientId,
      name: app.name,
      redirect_uris: app.redirectUris,
      scopes: app.scopes,
      confidential: app.confidential,
      website: app.website,
      created: iso(app.createdAt),
      suspended: app.suspended,
    })),
    security_events: events.map((event) => ({
      kind: event.kind,
      at: iso(event.createdAt),
      client_id: event.clientId,
      ip: event.ip,
      details: event.details,
    })),
  };
}

export type OwnDeletionOutcome =
  | { kind: 'deleted' }
  /** The username typed into `confirm` is not the account's. */
  | { kind: 'not confirmed' }
  | { kind: 'wrong password'; refusal: Wrong | Limited }
  | { kind: 'wrong code'; refusal: Wrong | Limited }
  | { kind: 'last operator' };

/**
 * A person deletes their own account: the username typed again, the password and, with two-step
 * on, a code (or a backup code), each under the sign-in's attempt limits; then the erasure
 * (eraseAccount), recorded as account_deleted by 'self'.
 */
export async function deleteOwnAccount(
  ctx: Omit<LifecycleContext, 'actorId' | 'via' | 'origin'> & SignInContext,
  account: Account,
  input: { confirm: string; password: string; code: string },
): Promise<OwnDeletionOutcome> {
  if (input.confirm.trim().toLowerCase() !== account.username.toLowerCase()) return { kind: 'not confirmed' };
  const password = await checkCurrentPassword(ctx, account, input.password);
  if (password.kind !== 'right') return { kind: 'wrong password', refusal: password };
  if (account.totpSecret !== null) {
    const code = await checkTwoStepCode(ctx, account, input.code);
    if (code.kind !== 'right') return { kind: 'wrong code', refusal: code };
  }
  const erased = await eraseAccount(
    { ...ctx, via: 'web', actorId: account.userId, origin: { ip: ctx.ip, ...(ctx.log ? { log: ctx.log } : {}) } },
    account.userId,
  );
  if (erased.kind === 'last operator') return erased;
  return { kind: 'deleted' };
}
