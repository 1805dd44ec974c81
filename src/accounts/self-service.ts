import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import type { Schema } from '../db/schema.ts';
import type { Secrets } from '../secrets/sealed.ts';
import type { SendAccountMail } from './account-mail.ts';
import { maskEmailAddress } from './account-names.ts';
import { AccountError, createAccount, findAccount, findAccountByLogin, storePasswordHash } from './accounts.ts';
import type { ApplicationSessions } from './application-sessions.ts';
import { endAllDeviceTrust } from './trusted-devices.ts';
import { claimByFlow, claimByLink, endRequestsOfUser, issueRequest, restoreRequest } from './verification-requests.ts';
import { endOtherWebSessions } from './web-sessions.ts';

/**
 * Sign-up, password reset and e-mail change (DESIGN "Self-service accounts"): what each step does
 * to the accounts and which message it sends. The pages parse the forms and show the outcome.
 */

export interface Links {
  /** BASE_URL, without a trailing slash. */
  baseUrl: string;
}

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
            : { kind: 'password-reset-unknown', data: { signUpLink: `${links.baseUrl}/account/sign-up` } },
        );
  return outcome === 'sent' ? { kind: 'sent', flowToken: issued.flowToken } : { kind: 'mail failed' };
}

export type SignUpOutcome =
  | { kind: 'created'; userId: string; username: string; returnTo: string | null }
  | { kind: 'username taken' }
  | { kind: 'email taken' }
  /** The proof expired or was used (by another tab, another browser). */
  | { kind: 'ended' };

/**
 * Creates the account of a proven sign-up. The request is claimed first (one DELETE … RETURNING:
 * a second submission finds nothing and cannot create a second account); the account is then
 * created with its key pair (createAccount), outside any transaction so no lock is held while the
 * key is made. Should that fail (a username or address taken meanwhile), the claimed request is
 * put back, so the person can choose another name.
 */
export async function completeSignUp(
  db: Kysely<Schema>,
  secrets: Secrets,
  send: SendAccountMail,
  links: Links,
  input: { flowToken: string; username: string; password: string },
): Promise<SignUpOutcome> {
  if (await findAccountByLogin(db, input.username)) return { kind: 'username taken' };
  const request = await claimByFlow(db, 'sign_up', input.flowToken);
  if (!request) return { kind: 'ended' };
  let userId: string;
  try {
    userId = await createAccount(
      db,
      { username: input.username, email: request.address, password: input.password },
      secrets,
    );
  } catch (error) {
    await restoreRequest(db, request);
    if (!(error instanceof AccountError) && !isUniqueViolation(error)) throw error;
    return (await findAccountByLogin(db, input.username)) ? { kind: 'username taken' } : { kind: 'email taken' };
  }
  await send(request.address, {
    kind: 'welcome',
    data: { username: input.username, accountLink: `${links.baseUrl}/account` },
  });
  return { kind: 'created', userId, username: input.username, returnTo: request.return_to };
}

export type ResetOutcome =
  | { kind: 'reset'; userId: string; sessionsEnded: number; deviceTrustsEnded: number }
  | { kind: 'ended' };

/**
 * Sets the new password of a proven reset (hashed beforehand) and ends everything signed in with
 * the old one: every browser sign-in, application session and device trust, and every other
 * request of the account. One transaction, which begins by claiming the request: of two racing
 * resets only one does anything.
 */
export async function completeReset(
  db: Kysely<Schema>,
  applicationSessions: ApplicationSessions,
  send: SendAccountMail,
  input: { flowToken: string; passwordHash: string },
): Promise<ResetOutcome> {
  const outcome = await db.transaction().execute(async (trx) => {
    const request = await claimByFlow(trx, 'reset', input.flowToken);
    if (!request?.user_id) return { kind: 'ended' } as const;
    const userId = request.user_id;
    if (!(await storePasswordHash(trx, userId, input.passwordHash))) return { kind: 'ended' } as const;
    await endOtherWebSessions(trx, userId, null);
    const sessionsEnded = await applicationSessions.endAllOfUser(trx, userId);
    const deviceTrustsEnded = await endAllDeviceTrust(trx, userId);
    await endRequestsOfUser(trx, userId);
    return { kind: 'reset', userId, sessionsEnded, deviceTrustsEnded } as const;
  });
  if (outcome.kind === 'reset') {
    const account = await findAccount(db, outcome.userId);
    if (account?.email) await send(account.email, { kind: 'password-changed', data: { username: account.username } });
  }
  return outcome;
}

export type EmailChangeRequestOutcome =
  | { kind: 'sent' }
  | { kind: 'same' }
  | { kind: 'taken' }
  | { kind: 'mail failed' };

/** Sends the confirming link to the new address (24 hours) and a notice to the old one. */
export async function requestEmailChange(
  db: Kysely<Schema>,
  send: SendAccountMail,
  links: Links,
  input: { userId: string; oldEmail: string | null; newEmail: string },
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
  if (input.oldEmail)
    await send(input.oldEmail, {
      kind: 'email-change-notice',
      data: { newEmailMasked: maskEmailAddress(input.newEmail) },
    });
  return { kind: 'sent' };
}

export type EmailChangeOutcome =
  | { kind: 'changed'; userId: string; oldEmail: string | null; newEmail: string }
  | { kind: 'taken' }
  | { kind: 'ended' };

/**
 * Opens an e-mail change link: the claim, the new address and the end of the account's other
 * requests are one transaction (taken meanwhile: nothing changes and the link still works later).
 */
export async function confirmEmailChange(db: Kysely<Schema>, linkToken: string): Promise<EmailChangeOutcome> {
  try {
    return await db.transaction().execute(async (trx) => {
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
}
