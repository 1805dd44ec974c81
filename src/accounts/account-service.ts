/**
 * What a signed-in person changes about their account (the account page; later e-mail change):
 * password, two-step verification, backup codes, the applications and devices holding a sign-in.
 * Each function checks what it needs (current password or code, under the sign-in limits, through
 * the sign-in service), writes in one transaction through each table's owning module, and records
 * its security event. Outcomes are unions the page turns into a section error or a redirect.
 */

import {
  type Account,
  AccountError,
  checkNewPassword,
  enableTotpSecret,
  setTotpSecret,
  storePasswordHash,
} from './accounts.ts';
import type { ApplicationSessions } from './application-sessions.ts';
import { countBackupCodes, replaceBackupCodes } from './backup-codes.ts';
import { hashPassword } from './passwords.ts';
import { type NewSecurityEvent, recordSecurityEvent } from './security-events.ts';
import {
  checkCurrentPassword,
  checkNewTotpCode,
  checkTwoStepCode,
  type Limited,
  type SignInContext,
  type Wrong,
} from './sign-in.ts';
import { newTotpSecret, totpStep } from './totp.ts';
import { endAllDeviceTrust, endDeviceTrust } from './trusted-devices.ts';
import {
  endOtherWebSessions,
  endWebSessionById,
  keepBackupCodesToShow,
  setPendingTotpSecret,
  takeBackupCodesToShow,
  type WebSession,
} from './web-sessions.ts';

/** The sign-in context, and the applications' sessions a change of the account may end. */
export type AccountContext = SignInContext & { applicationSessions: ApplicationSessions };

/** What recording an event of the account takes: the database, where the request comes from, which page (or 'api'). */
type RecordContext = Pick<AccountContext, 'db' | 'ip' | 'log' | 'page'>;

/** A new password (or other input) the rules refuse; `message` is shown next to the input. */
export type Invalid = { kind: 'invalid'; message: string };

const record = (ctx: RecordContext, event: NewSecurityEvent) =>
  recordSecurityEvent(
    ctx.db,
    { ip: ctx.ip, ...(ctx.log ? { log: ctx.log } : {}) },
    { ...event, details: { page: ctx.page, ...event.details } },
  );

/**
 * Changes the password, given the current one. Every other browser sign-in, every OAuth session
 * and every device trust of the account ends with it, in the same transaction; `session`, the
 * browser that asked, stays signed in.
 */
export async function changePassword(
  ctx: AccountContext,
  account: Account,
  input: { currentPassword: string; newPassword: string; session: WebSession | null },
): Promise<{ kind: 'changed' } | Invalid | Wrong | Limited> {
  try {
    await checkNewPassword(input.newPassword, [account.username, account.email]);
  } catch (error) {
    if (error instanceof AccountError) return { kind: 'invalid', message: `${error.message}.` };
    throw error;
  }
  const checked = await checkCurrentPassword(ctx, account, input.currentPassword);
  if (checked.kind !== 'right') return checked;
  const passwordHash = await hashPassword(input.newPassword);
  const ended = await ctx.db.transaction().execute(async (trx) => {
    await storePasswordHash(trx, account.userId, passwordHash);
    await endOtherWebSessions(trx, account.userId, input.session?.token ?? null);
    return {
      sessions: await ctx.applicationSessions.endAllOfUser(trx, account.userId),
      devices: await endAllDeviceTrust(trx, account.userId),
    };
  });
  await record(ctx, {
    kind: 'password_changed',
    userId: account.userId,
    details: { sessions_ended: ended.sessions, device_trusts_ended: ended.devices },
  });
  return { kind: 'changed' };
}

/** The secret a browser is offered to turn two-step on: the same one across reloads until a code confirms it. */
export async function twoStepSetupSecret(ctx: AccountContext, session: WebSession): Promise<string> {
  if (session.pendingTotpSecret) return session.pendingTotpSecret;
  const secret = newTotpSecret();
  await setPendingTotpSecret(ctx.db, session.token, secret);
  return secret;
}

/**
 * Turns two-step on with the secret this browser was offered, confirmed by its first code. A first
 * set of backup codes is made; the page shows it once (takeBackupCodesToShow).
 */
export async function turnTwoStepOn(
  ctx: AccountContext,
  account: Account,
  input: { session: WebSession; code: string },
): Promise<{ kind: 'on'; backupCodes: string[] } | { kind: 'stale' } | Wrong | Limited> {
  const secret = input.session.pendingTotpSecret;
  if (account.totpSecret !== null || !secret) return { kind: 'stale' };
  const checked = await checkNewTotpCode(ctx, account, secret, input.code);
  if (checked.kind !== 'right') return checked;
  const step = totpStep(secret, input.code);
  if (step === undefined) return { kind: 'wrong', reason: 'wrong_code' }; // the step turned meanwhile
  const done = await ctx.db.transaction().execute(async (trx) => {
    if (!(await enableTotpSecret(trx, account.userId, secret, step))) return undefined;
    // A new second factor: trust given under none ends.
    const devices = await endAllDeviceTrust(trx, account.userId);
    await setPendingTotpSecret(trx, input.session.token, null);
    const backupCodes = await replaceBackupCodes(trx, account.userId);
    await keepBackupCodesToShow(trx, input.session.token, backupCodes);
    return { backupCodes, devices };
  });
  // Turned on meanwhile by another request of this browser.
  if (!done) return { kind: 'stale' };
  await record(ctx, {
    kind: 'two_step_enabled',
    userId: account.userId,
    details: { device_trusts_ended: done.devices },
  });
  return { kind: 'on', backupCodes: done.backupCodes };
}

/** Turns two-step off, given a current code (or a backup code); its backup codes and device trusts end. */
export async function turnTwoStepOff(
  ctx: AccountContext,
  account: Account,
  code: string,
): Promise<{ kind: 'off' } | { kind: 'stale' } | Wrong | Limited> {
  if (account.totpSecret === null) return { kind: 'stale' };
  const checked = await checkTwoStepCode(ctx, account, code);
  if (checked.kind !== 'right') return checked;
  const devices = await ctx.db.transaction().execute(async (trx) => {
    const devices = await endAllDeviceTrust(trx, account.userId);
    // Its backup codes go with it.
    await setTotpSecret(trx, account.userId, null);
    return devices;
  });
  await record(ctx, { kind: 'two_step_disabled', userId: account.userId, details: { device_trusts_ended: devices } });
  return { kind: 'off' };
}

/** A new set of backup codes, given a current code; the old set ends. Shown once to `session`. */
export async function renewBackupCodes(
  ctx: AccountContext,
  account: Account,
  input: { session: WebSession; code: string },
): Promise<{ kind: 'renewed'; backupCodes: string[] } | { kind: 'stale' } | Wrong | Limited> {
  if (account.totpSecret === null) return { kind: 'stale' };
  const checked = await checkTwoStepCode(ctx, account, input.code);
  if (checked.kind !== 'right') return checked;
  const backupCodes = await ctx.db.transaction().execute(async (trx) => {
    const codes = await replaceBackupCodes(trx, account.userId);
    await keepBackupCodesToShow(trx, input.session.token, codes);
    return codes;
  });
  await record(ctx, {
    kind: 'backup_codes_renewed',
    userId: account.userId,
    details: { backup_codes: backupCodes.length },
  });
  return { kind: 'renewed', backupCodes };
}

/**
 * The account's backup codes as its page shows them: how many are left, and a new set made for
 * this browser, shown once (the first page that asks takes it).
 */
/** How many backup codes the account has left (the account page). */
export function backupCodesLeft(ctx: Pick<AccountContext, 'db'>, account: Pick<Account, 'userId'>): Promise<number> {
  return countBackupCodes(ctx.db, account.userId);
}

export async function backupCodesOnPage(
  ctx: Pick<AccountContext, 'db'>,
  account: Account,
  session: WebSession,
): Promise<{ left: number; shown: string[] | undefined }> {
  const shown = await takeBackupCodesToShow(ctx.db, session.token);
  return { left: await countBackupCodes(ctx.db, account.userId), shown };
}

/**
 * Signs one application out of the account (its OAuth session); false when it holds none (any
 * more). The account page and the v4 API (DELETE /v4/sessions/<id>) both end sessions here; the
 * API names the application asking (`askedBy`), which is not told of its own session's end.
 */
export async function endApplicationSession(
  ctx: RecordContext & Pick<AccountContext, 'applicationSessions'>,
  account: Pick<Account, 'userId'>,
  sessionId: string,
  askedBy?: string,
): Promise<boolean> {
  const ended = await ctx.applicationSessions.endOneOfUser(ctx.db, account.userId, sessionId, askedBy);
  if (!ended) return false;
  await record(ctx, {
    kind: 'session_ended',
    userId: account.userId,
    clientId: ended.clientId,
    details: { session_id: sessionId },
  });
  return true;
}

/** Ends the trust of one of the account's devices; false when it is not trusted (any more). */
export async function endTrustedDevice(ctx: AccountContext, account: Account, trustId: string): Promise<boolean> {
  if (!(await endDeviceTrust(ctx.db, account.userId, trustId))) return false;
  await record(ctx, { kind: 'device_trust_ended', userId: account.userId });
  return true;
}

/**
 * Signs one of the account's browsers out, named by the id the account page shows; false when it
 * is not signed in (any more), or is another account's.
 */
export async function endBrowserSignIn(
  ctx: RecordContext,
  account: Pick<Account, 'userId'>,
  publicId: string,
): Promise<boolean> {
  if (!(await endWebSessionById(ctx.db, account.userId, publicId))) return false;
  await record(ctx, { kind: 'web_session_ended', userId: account.userId, details: { browser_sign_in: publicId } });
  return true;
}

/** Signs every browser of the account out but `session`, the one asking; answers how many were. */
export async function endOtherBrowserSignIns(
  ctx: RecordContext,
  account: Pick<Account, 'userId'>,
  session: Pick<WebSession, 'token'>,
): Promise<number> {
  const ended = await endOtherWebSessions(ctx.db, account.userId, session.token);
  if (ended > 0) await record(ctx, { kind: 'web_session_ended', userId: account.userId, details: { others: ended } });
  return ended;
}
