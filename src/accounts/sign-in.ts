/**
 * The sign-in service: every check of who a person is, for every page that asks (the login pages,
 * the account page, password reset, and later passkeys). Pages parse a form, call one step, and
 * turn its outcome into a page, a redirect or a cookie; they never check a secret or record a
 * sign-in event themselves.
 *
 * Steps of a sign-in (each answers a SignInOutcome):
 * - passwordStep(ctx, { login, password, deviceId })  → signed_in (no two-step, or a trusted device)
 *                                                      | needs_code | wrong | limited
 * - codeStep(ctx, userId, { code, trustDeviceId })    → signed_in | wrong | limited | start_again
 *   `code` is a current TOTP code or a backup code, in the same input.
 * - passkeyStep(ctx, rp, { response, bindingHash })  → signed_in (method passkey, two_step
 *   user_verified: complete, no code) | refused | limited; in src/accounts/passkey-sign-in.ts
 *   (it ends with signInSucceeded).
 * After signed_in or needs_code the page starts the browser's sign-in with one call
 * (startBrowserSignIn in src/web/web-sessions.ts).
 *
 * Checks that are not a sign-in (the person is signed in already, or resets a password):
 * - checkCurrentPassword(ctx, account, password)       → right | wrong | limited
 * - checkTwoStepCode(ctx, account, code)                → right (method totp | backup_code) | wrong | limited
 * - checkNewTotpCode(ctx, account, secret, code)        → right | wrong | limited (a secret being set up)
 *
 * Limits (DESIGN "v4 login"): passwords per IP and per account, codes per IP and per account. An
 * attempt is counted before it is checked (so a burst is held to the limit) and given back when it
 * proves right. Events recorded here: sign_in_succeeded (details: method, two_step, page),
 * sign_in_failed, sign_in_locked_out, two_step_failed, backup_code_used.
 */
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { type AttemptLimit, countAttempt } from '../http/attempt-limits.ts';
import { type Account, acceptTotpCode, findAccount, findAccountByLogin } from './accounts.ts';
import { looksLikeBackupCode, useBackupCode } from './backup-codes.ts';
import { verifyPassword } from './passwords.ts';
import { type EventDetails, type EventOrigin, type NewSecurityEvent, recordSecurityEvent } from './security-events.ts';
import { verifyTotp } from './totp.ts';
import { isTrustedDevice, trustDevice } from './trusted-devices.ts';
import { endPendingWebSessions } from './web-sessions.ts';

/** The attempt limits every page that checks a password or code shares (one set per server). */
export interface SignInLimits {
  passwordByIp: AttemptLimit;
  passwordByAccount: AttemptLimit;
  codeByIp: AttemptLimit;
  codeByAccount: AttemptLimit;
}

/** What a step needs from the request that asks: no HTTP types, so any page or CLI can call it. */
export interface SignInContext {
  db: Kysely<Schema>;
  ip: string;
  log?: EventOrigin['log'];
  limits: SignInLimits;
  /** Which page asks ('sign_in', 'account', 'reset', …): recorded with the events. */
  page: string;
  /** The application being signed in to (the OAuth login pages). */
  clientId?: string | undefined;
}

/** How the person proved who they are, for sign_in_succeeded. */
export type SignInMethod = 'password' | 'passkey';
/**
 * The second step of a sign-in: none asked, skipped for a trusted device, a TOTP code, a backup
 * code; or, for a passkey, the authenticator's user verification (its PIN or biometric).
 */
export type TwoStep = 'off' | 'trusted_device' | 'code' | 'backup_code' | 'user_verified';

export type Wrong = { kind: 'wrong'; reason: 'unknown_account' | 'wrong_password' | 'wrong_code' | 'used_code' };
/**
 * The person proved who they are, but an operator locked the account: the page says so (never
 * why) and to contact the operator. Told only after the password or passkey proved right, so it
 * tells a stranger nothing.
 */
export type Locked = { kind: 'locked' };
/** Refused by a limit without checking; `accountLimited`: the account's own limit refused it. */
export type Limited = { kind: 'limited'; retryAfterMs: number; accountLimited: boolean };

export type SignInOutcome =
  | { kind: 'signed_in'; account: Account; method: SignInMethod; twoStep: TwoStep }
  | { kind: 'needs_code'; account: Account }
  | Wrong
  | Limited
  | Locked
  /** The sign-in waiting for a code cannot go on (the account is gone or has no two-step any more). */
  | { kind: 'start_again' };

export type CodeCheck = { kind: 'right'; method: 'totp' | 'backup_code' } | Wrong | Limited;
export type PasswordCheck = { kind: 'right' } | Wrong | Limited;

const origin = (ctx: SignInContext): EventOrigin => ({ ip: ctx.ip, ...(ctx.log ? { log: ctx.log } : {}) });
const record = (ctx: SignInContext, event: NewSecurityEvent) =>
  recordSecurityEvent(ctx.db, origin(ctx), { clientId: ctx.clientId, ...event });
const withPage = (ctx: SignInContext, details: EventDetails): EventDetails => ({ ...details, page: ctx.page });

/** Checks a password of `account` (undefined: no such account; the hash check runs all the same). */
async function checkPasswordOf(
  ctx: SignInContext,
  account: Account | undefined,
  login: string,
  password: string,
): Promise<PasswordCheck> {
  const { passwordByIp, passwordByAccount } = ctx.limits;
  const attempt = await countAttempt([
    passwordByIp.of(ctx.ip),
    // Keyed by the account, so its username and its email address share one count.
    passwordByAccount.of(account ? `user:${account.userId}` : `login:${login.toLowerCase()}`),
  ]);
  if (attempt.refusedBy.length > 0) {
    await record(ctx, {
      kind: 'sign_in_locked_out',
      userId: account?.userId,
      details: withPage(ctx, { step: 'password', retry_after_s: Math.ceil(attempt.retryAfterMs / 1000) }),
    });
    return {
      kind: 'limited',
      retryAfterMs: attempt.retryAfterMs,
      accountLimited: attempt.refusedBy.includes(passwordByAccount),
    };
  }
  if (!(await verifyPassword(account?.passwordHash, password)) || !account) {
    const reason = account ? 'wrong_password' : 'unknown_account';
    await record(ctx, { kind: 'sign_in_failed', userId: account?.userId, details: withPage(ctx, { reason }) });
    return { kind: 'wrong', reason };
  }
  await attempt.succeeded();
  return { kind: 'right' };
}

/** Counts a code attempt against the code limits and runs `check` unless a limit refuses it. */
async function underCodeLimits(
  ctx: SignInContext,
  account: Account,
  check: () => Promise<CodeCheck>,
): Promise<CodeCheck> {
  const { codeByIp, codeByAccount } = ctx.limits;
  const attempt = await countAttempt([codeByIp.of(ctx.ip), codeByAccount.of(account.userId)]);
  if (attempt.refusedBy.length > 0) {
    await record(ctx, {
      kind: 'sign_in_locked_out',
      userId: account.userId,
      details: withPage(ctx, { step: 'two_step', retry_after_s: Math.ceil(attempt.retryAfterMs / 1000) }),
    });
    return {
      kind: 'limited',
      retryAfterMs: attempt.retryAfterMs,
      accountLimited: attempt.refusedBy.includes(codeByAccount),
    };
  }
  const checked = await check();
  if (checked.kind === 'right') await attempt.succeeded();
  else if (checked.kind === 'wrong')
    await record(ctx, {
      kind: 'two_step_failed',
      userId: account.userId,
      details: withPage(ctx, { reason: checked.reason === 'used_code' ? 'used' : 'wrong' }),
    });
  return checked;
}

/**
 * Checks a two-step code of the account: a current TOTP code (each time step accepted once) or one
 * of its backup codes (each used once: of two simultaneous uses exactly one is accepted). Under the
 * code limits; a used backup code is recorded (backup_code_used).
 */
export async function checkTwoStepCode(ctx: SignInContext, account: Account, code: string): Promise<CodeCheck> {
  return underCodeLimits(ctx, account, async () => {
    if (looksLikeBackupCode(code)) {
      const used = await useBackupCode(ctx.db, account.userId, code);
      if (!used) return { kind: 'wrong', reason: 'wrong_code' };
      await record(ctx, {
        kind: 'backup_code_used',
        userId: account.userId,
        details: withPage(ctx, { backup_codes_left: used.left }),
      });
      return { kind: 'right', method: 'backup_code' };
    }
    const outcome = await acceptTotpCode(ctx.db, account.userId, code);
    if (outcome === 'accepted') return { kind: 'right', method: 'totp' };
    return { kind: 'wrong', reason: outcome === 'used' ? 'used_code' : 'wrong_code' };
  });
}

/** Checks the first code of a secret being set up (turning two-step on), under the code limits. */
export async function checkNewTotpCode(
  ctx: SignInContext,
  account: Account,
  secret: string,
  code: string,
): Promise<CodeCheck> {
  return underCodeLimits(ctx, account, async () =>
    verifyTotp(secret, code) ? { kind: 'right', method: 'totp' } : { kind: 'wrong', reason: 'wrong_code' },
  );
}

/** The signed-in person's password again (before a change of password or address). */
export function checkCurrentPassword(ctx: SignInContext, account: Account, password: string): Promise<PasswordCheck> {
  return checkPasswordOf(ctx, account, account.username, password);
}

/** Ends a sign-in as succeeded: records sign_in_succeeded. For a step that needs no further one (e.g. a passkey that is itself two factors). */
export async function signInSucceeded(
  ctx: SignInContext,
  account: Account,
  method: SignInMethod,
  twoStep: TwoStep,
): Promise<SignInOutcome> {
  await record(ctx, {
    kind: 'sign_in_succeeded',
    userId: account.userId,
    details: withPage(ctx, { method, two_step: twoStep }),
  });
  return { kind: 'signed_in', account, method, twoStep };
}

/**
 * First step: `login` (username in any case, or email address) and password. An account with
 * two-step on needs a code next, unless `deviceId` (an OAuth device authorization's) is trusted.
 */
export async function passwordStep(
  ctx: SignInContext,
  input: { login: string; password: string; deviceId?: string | null },
): Promise<SignInOutcome> {
  const login = input.login.trim();
  const account = await findAccountByLogin(ctx.db, login);
  const checked = await checkPasswordOf(ctx, account, login, input.password);
  if (checked.kind !== 'right') return checked;
  if (account!.locked) return refuseLocked(ctx, account!, 'password');
  return afterFirstStep(ctx, account!, 'password', input.deviceId ?? null);
}

/** A locked account's sign-in, refused after its first step proved right: recorded as sign_in_failed (reason locked). */
export async function refuseLocked(ctx: SignInContext, account: Account, method: SignInMethod): Promise<Locked> {
  await record(ctx, {
    kind: 'sign_in_failed',
    userId: account.userId,
    details: withPage(ctx, { reason: 'locked', method }),
  });
  return { kind: 'locked' };
}

/**
 * Ends a first step that proved the person (a password, later a passkey): signed in, or a code
 * is needed. Exported for the other first steps.
 */
export async function afterFirstStep(
  ctx: SignInContext,
  account: Account,
  method: SignInMethod,
  deviceId: string | null,
): Promise<SignInOutcome> {
  if (account.totpSecret === null) return signInSucceeded(ctx, account, method, 'off');
  if (await isTrustedDevice(ctx.db, account.userId, deviceId))
    return signInSucceeded(ctx, account, method, 'trusted_device');
  return { kind: 'needs_code', account };
}

/**
 * Second step, for the sign-in of `userId` waiting for its code: a TOTP code or a backup code.
 * Past the account's code limit every sign-in of the account waiting for a code ends (DESIGN):
 * each starts again with the password. `trustDeviceId`: trust this device for 30 days.
 */
export async function codeStep(
  ctx: SignInContext,
  userId: string,
  input: { code: string; trustDeviceId?: string | null; method?: SignInMethod },
): Promise<SignInOutcome> {
  const account = await findAccount(ctx.db, userId);
  if (!account?.totpSecret || account.locked) return { kind: 'start_again' };
  const checked = await checkTwoStepCode(ctx, account, input.code);
  if (checked.kind === 'limited' && checked.accountLimited) await endPendingWebSessions(ctx.db, account.userId);
  if (checked.kind !== 'right') return checked;
  if (input.trustDeviceId) await trustDevice(ctx.db, account.userId, input.trustDeviceId);
  return signInSucceeded(
    ctx,
    account,
    input.method ?? 'password',
    checked.method === 'backup_code' ? 'backup_code' : 'code',
  );
}
