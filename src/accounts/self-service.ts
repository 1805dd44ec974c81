import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import type { Schema } from '../db/schema.ts';
import type { Secrets } from '../secrets/sealed.ts';
import type { SendAccountMail } from './account-mail.ts';
import { checkUsername, maskEmailAddress } from './account-names.ts';
import type { AccountContext } from './account-service.ts';
import {
  type Account,
  AccountError,
  findAccount,
  findAccountByLogin,
  insertAccount,
  storePasswordHash,
} from './accounts.ts';
import { claimInvitation, findInvitation, type InvitationEnd, releaseInvitation } from './invitations.ts';
import { passwordRefusal } from './password-rules.ts';
import { hashPassword } from './passwords.ts';
import { type NewSecurityEvent, recordSecurityEvent } from './security-events.ts';
import { checkTwoStepCode, type Limited, type Wrong } from './sign-in.ts';
import { endAllDeviceTrust } from './trusted-devices.ts';
import {
  claimByFlow,
  claimByLink,
  endRequestsOfUser,
  findByFlow,
  findPendingOfUser,
  issueRequest,
  restoreRequest,
} from './verification-requests.ts';
import { endOtherWebSessions } from './web-sessions.ts';

/**
 * Sign-up, password reset and e-mail change (DESIGN "Self-service accounts"): what each step does
 * to the accounts, which message it sends and which security event it records (details: the
 * page that asks). The pages parse the forms, call one step each and show its outcome; they never
 * check or hash a password or record an event themselves.
 */

export interface Links {
  /** BASE_URL, without a trailing slash. */
  baseUrl: string;
  /** Whether anyone may sign up (SIGN_UP=open): only then does a message point to the sign-up page. */
  signUpOpen?: boolean;
}

/**
 * What a completing step needs: the account context (the database, the request's IP and log, the
 * sign-in limits, the page that asks, the applications' sessions a reset ends), the account
 * messages' sender and links, and the secrets key (a new account's key pair).
 */
export type SelfServiceContext = AccountContext & { secrets: Secrets; send: SendAccountMail; links: Links };

const record = (ctx: Pick<SelfServiceContext, 'db' | 'ip' | 'log' | 'page'>, event: NewSecurityEvent) =>
  recordSecurityEvent(
    ctx.db,
    { ip: ctx.ip, ...(ctx.log ? { log: ctx.log } : {}) },
    { ...event, details: { page: ctx.page, ...event.details } },
  );

const verifyLink = (links: Links, token: string) => `${links.baseUrl}/account/verify?token=${token}`;

export type RequestOutcome = { kind: 'sent'; flowToken: string } | { kind: 'mail failed' };

/**
 * Starts a sign-up or a reset for `address`. Every address gets a request and a message, whether
 * or not it has an account (only the message differs: a code, or a note that the account exists /
 * does not), so neither the answer nor its time tells which addresses have accounts.
 */
export async function requestCode(
  db: Kysely<Schema>,
  send: SendAccountMail,
  links: Links,
  input: { purpose: 'sign_up' | 'reset'; address: string; returnTo?: string | null },
): Promise<RequestOutcome> {
  const account = await findAccountByLogin(db, input.address);
  const issued = await issueRequest(db, {
    purpose: input.purpose,
    address: input.address,
    userId: account?.userId ?? null,
    returnTo: input.returnTo ?? null,
  });
  const link = verifyLink(links, issued.linkToken);
  const outcome =
    input.purpose === 'sign_up'
      ? await send(
          input.address,
          account
            ? { kind: 'account-exists', data: { resetLink: `${links.baseUrl}/account/forgot` } }
            : { kind: 'sign-up-code', data: { code: issued.code, link } },
        )
      : await send(
          input.address,
          account
            ? { kind: 'password-reset-code', data: { code: issued.code, link } }
            : {
                kind: 'password-reset-unknown',
                data: { signUpLink: links.signUpOpen ? `${links.baseUrl}/account/sign-up` : null },
              },
        );
  return outcome === 'sent' ? { kind: 'sent', flowToken: issued.flowToken } : { kind: 'mail failed' };
}

/** An input the rules refuse; `message` is shown next to `field`. */
export type Invalid<Field extends string> = { kind: 'invalid'; field: Field; message: string };

export type SignUpOutcome =
  /** `account` is undefined only when the new account was deleted at once (by an operator). */
  | { kind: 'created'; userId: string; account: Account | undefined; returnTo: string | null }
  | Invalid<'username' | 'password'>
  | { kind: 'username taken' }
  | { kind: 'email taken' }
  /** The proof expired or was used (by another tab, another browser). */
  | { kind: 'ended' };

/**
 * Creates the account of a proven sign-up from the username and password typed (the username
 * rule, then the password rules with the name and the proven address as known words). The request
 * is claimed first (one DELETE … RETURNING: a second submission finds nothing and cannot create a
 * second account); the account is then created with its key pair (insertAccount, which hashes the
 * password), outside any transaction so no lock is held while the key is made. Should that fail (a
 * username or address taken meanwhile), the claimed request is put back, so the person can choose
 * another name. Records signed_up.
 */
export async function completeSignUp(
  ctx: SelfServiceContext,
  input: { flowToken: string; username: string; password: string },
): Promise<SignUpOutcome> {
  const { db } = ctx;
  const proven = await findByFlow(db, 'sign_up', input.flowToken, 'verified');
  if (!proven) return { kind: 'ended' };
  const username = checkUsername(input.username);
  if (!username.ok) return { kind: 'invalid', field: 'username', message: username.reason };
  const refusal = await passwordRefusal(input.password, [username.value, proven.address]);
  if (refusal !== undefined) return { kind: 'invalid', field: 'password', message: `${refusal}.` };
  if (await findAccountByLogin(db, username.value)) return { kind: 'username taken' };
  const request = await claimByFlow(db, 'sign_up', input.flowToken);
  if (!request) return { kind: 'ended' };
  let userId: string;
  try {
    userId = await insertAccount(
      db,
      { username: username.value, email: request.address, password: input.password },
      ctx.secrets,
    );
  } catch (error) {
    await restoreRequest(db, request);
    if (!(error instanceof AccountError) && !isUniqueViolation(error)) throw error;
    return (await findAccountByLogin(db, username.value)) ? { kind: 'username taken' } : { kind: 'email taken' };
  }
  await record(ctx, { kind: 'signed_up', userId });
  await ctx.send(request.address, {
    kind: 'welcome',
    data: { username: username.value, accountLink: `${ctx.links.baseUrl}/account` },
  });
  return { kind: 'created', userId, account: await findAccount(db, userId), returnTo: request.return_to };
}

export type InvitedSignUpOutcome =
  | { kind: 'created'; userId: string; account: Account | undefined }
  | Invalid<'username' | 'password'>
  | { kind: 'username taken' }
  | { kind: 'email taken' }
  /** The link no longer works: used (perhaps by a simultaneous submit), revoked, expired or unknown. */
  | { kind: 'ended'; why: InvitationEnd };

/**
 * Creates the account of an invitation's link (SIGN_UP=invite): the link proves the address, so
 * only the username and password are asked, under the same rules as completeSignUp. The
 * invitation is claimed first (one conditional UPDATE: of two simultaneous submits, one creates
 * the account, the other finds it used); should creating the account fail (a name taken
 * meanwhile), it is given back. Records signed_up with the invitation's id.
 */
export async function completeInvitedSignUp(
  ctx: SelfServiceContext,
  input: { invitationToken: string; username: string; password: string },
): Promise<InvitedSignUpOutcome> {
  const { db } = ctx;
  const found = await findInvitation(db, input.invitationToken);
  if (found.kind !== 'pending') return { kind: 'ended', why: found.kind };
  const username = checkUsername(input.username);
  if (!username.ok) return { kind: 'invalid', field: 'username', message: username.reason };
  const refusal = await passwordRefusal(input.password, [username.value, found.invitation.email]);
  if (refusal !== undefined) return { kind: 'invalid', field: 'password', message: `${refusal}.` };
  if (await findAccountByLogin(db, username.value)) return { kind: 'username taken' };
  if (await findAccountByLogin(db, found.invitation.email)) return { kind: 'email taken' };
  const claimed = await claimInvitation(db, input.invitationToken);
  if (!claimed) {
    const now = await findInvitation(db, input.invitationToken);
    return { kind: 'ended', why: now.kind === 'pending' ? 'used' : now.kind };
  }
  let userId: string;
  try {
    userId = await insertAccount(
      db,
      { username: username.value, email: claimed.email, password: input.password },
      ctx.secrets,
    );
  } catch (error) {
    await releaseInvitation(db, claimed.invitationId);
    if (!(error instanceof AccountError) && !isUniqueViolation(error)) throw error;
    return (await findAccountByLogin(db, username.value)) ? { kind: 'username taken' } : { kind: 'email taken' };
  }
  await record(ctx, { kind: 'signed_up', userId, details: { invitation_id: claimed.invitationId } });
  await ctx.send(claimed.email, {
    kind: 'welcome',
    data: { username: username.value, accountLink: `${ctx.links.baseUrl}/account` },
  });
  return { kind: 'created', userId, account: await findAccount(db, userId) };
}

export type ResetRefusal = Invalid<'password'> | Wrong | Limited;

export type ResetOutcome =
  | { kind: 'reset'; userId: string; sessionsEnded: number; deviceTrustsEnded: number }
  /** `twoStep`: the account asks for a two-step code with its new password (the form shows the input). */
  | (ResetRefusal & { twoStep: boolean })
  | { kind: 'ended' }
  /** An operator locked the account: no reset until it is unlocked. */
  | { kind: 'locked' };

/**
 * Sets the new password of a proven reset: the password rules (with the account's name and
 * address as known words), then, when the account has two-step on, a current code or a backup code
 * under the sign-in's code limits; then the password is hashed and everything signed in with the
 * old one ends: every browser sign-in, application session and device trust, and every other
 * request of the account. One transaction, which begins by claiming the request: of two racing
 * resets only one does anything. Records password_reset.
 */
export async function completeReset(
  ctx: SelfServiceContext,
  input: { flowToken: string; password: string; twoStepCode: string },
): Promise<ResetOutcome> {
  const { db } = ctx;
  const proven = await findByFlow(db, 'reset', input.flowToken, 'verified');
  const account = proven?.user_id ? await findAccount(db, proven.user_id) : undefined;
  if (!account) return { kind: 'ended' };
  if (account.locked) return { kind: 'locked' };
  const twoStep = account.totpSecret !== null;
  const refusal = await passwordRefusal(input.password, [account.username, account.email]);
  if (refusal !== undefined) return { kind: 'invalid', field: 'password', message: `${refusal}.`, twoStep };
  if (twoStep) {
    // The code check's own events name this step 'reset', as they did when the page asked for it.
    const checked = await checkTwoStepCode({ ...ctx, page: 'reset' }, account, input.twoStepCode);
    if (checked.kind !== 'right') return { ...checked, twoStep };
  }
  const passwordHash = await hashPassword(input.password);
  const outcome = await db.transaction().execute(async (trx) => {
    const request = await claimByFlow(trx, 'reset', input.flowToken);
    if (!request?.user_id) return { kind: 'ended' } as const;
    const userId = request.user_id;
    if ((await findAccount(trx, userId))?.locked) return { kind: 'locked' } as const;
    if (!(await storePasswordHash(trx, userId, passwordHash))) return { kind: 'ended' } as const;
    await endOtherWebSessions(trx, userId, null);
    const sessionsEnded = await ctx.applicationSessions.endAllOfUser(trx, userId);
    const deviceTrustsEnded = await endAllDeviceTrust(trx, userId);
    await endRequestsOfUser(trx, userId);
    return { kind: 'reset', userId, sessionsEnded, deviceTrustsEnded } as const;
  });
  if (outcome.kind !== 'reset') return outcome;
  await record(ctx, {
    kind: 'password_reset',
    userId: outcome.userId,
    details: {
      two_step: twoStep,
      sessions_ended: outcome.sessionsEnded,
      device_trusts_ended: outcome.deviceTrustsEnded,
    },
  });
  const changed = await findAccount(db, outcome.userId);
  if (changed?.email) await ctx.send(changed.email, { kind: 'password-changed', data: { username: changed.username } });
  return outcome;
}

export type EmailChangeRequestOutcome =
  | { kind: 'sent' }
  | { kind: 'same' }
  | { kind: 'taken' }
  | { kind: 'mail failed' };

/**
 * Sends the confirming link to the new address (24 hours) and a notice to the old one. `again`: the
 * link is sent once more (a new link replaces the earlier one); the old address had its notice.
 */
export async function requestEmailChange(
  db: Kysely<Schema>,
  send: SendAccountMail,
  links: Links,
  input: { userId: string; oldEmail: string | null; newEmail: string; again?: boolean },
): Promise<EmailChangeRequestOutcome> {
  if (input.oldEmail === input.newEmail) return { kind: 'same' };
  if (await findAccountByLogin(db, input.newEmail)) return { kind: 'taken' };
  const issued = await issueRequest(db, { purpose: 'email_change', address: input.newEmail, userId: input.userId });
  if (
    (await send(input.newEmail, { kind: 'email-change-link', data: { link: verifyLink(links, issued.linkToken) } })) ===
    'failed'
  ) {
    await db.deleteFrom('verification_requests').where('request_id', '=', issued.requestId).execute();
    return { kind: 'mail failed' };
  }
  if (input.oldEmail && !input.again)
    await send(input.oldEmail, {
      kind: 'email-change-notice',
      data: { newEmailMasked: maskEmailAddress(input.newEmail) },
    });
  return { kind: 'sent' };
}

/** The new address a link of the user's e-mail change was sent to and is not opened yet (the newest such). */
export async function pendingEmailChange(db: Kysely<Schema>, userId: string): Promise<string | undefined> {
  return (await findPendingOfUser(db, 'email_change', userId))?.address;
}

export type EmailChangeOutcome =
  | { kind: 'changed'; userId: string; oldEmail: string | null; newEmail: string }
  | { kind: 'taken' }
  | { kind: 'ended' };

/**
 * Opens an e-mail change link: the claim, the new address and the end of the account's other
 * requests are one transaction (taken meanwhile: nothing changes and the link still works later).
 * Records email_changed.
 */
export async function confirmEmailChange(
  ctx: Pick<SelfServiceContext, 'db' | 'ip' | 'log' | 'page'>,
  linkToken: string,
): Promise<EmailChangeOutcome> {
  let outcome: EmailChangeOutcome;
  try {
    outcome = await ctx.db.transaction().execute(async (trx) => {
      const request = await claimByLink(trx, 'email_change', linkToken);
      if (!request?.user_id) return { kind: 'ended' } as const;
      const account = await findAccount(trx, request.user_id);
      if (!account) return { kind: 'ended' } as const;
      await trx.updateTable('users').set({ email: request.address }).where('user_id', '=', request.user_id).execute();
      // A reset code or link still on its way to the old address no longer works.
      await endRequestsOfUser(trx, request.user_id);
      return { kind: 'changed', userId: request.user_id, oldEmail: account.email, newEmail: request.address } as const;
    });
  } catch (error) {
    if (isUniqueViolation(error)) return { kind: 'taken' };
    throw error;
  }
  if (outcome.kind === 'changed') await record(ctx, { kind: 'email_changed', userId: outcome.userId });
  return outcome;
}
