import { randomInt, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema, VerificationRequestsTable } from '../db/schema.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';

/**
 * One-time codes and links (DESIGN "Self-service accounts"): a request for a purpose and an address
 * holds a hashed 6-digit code and a hashed link token, either of which proves it. Proving it gives
 * the browser that did so a new secret (the flow token, kept in a cookie) with which it finishes
 * (chooses a username, a new password); finishing claims the request with one conditional DELETE,
 * so of two racing finishers only one wins.
 */

export type Purpose = 'sign_up' | 'reset' | 'email_change';

const MINUTE_MS = 60_000;
export const REQUEST_TTL_MS: Record<Purpose, number> = {
  sign_up: 15 * MINUTE_MS,
  reset: 15 * MINUTE_MS,
  email_change: 24 * 60 * MINUTE_MS,
};
/** Wrong codes a request takes; the next attempt finds it ended. */
export const MAX_CODE_ATTEMPTS = 5;

export type VerificationRequest = VerificationRequestsTable & { purpose: Purpose };

export interface IssuedRequest {
  requestId: string;
  code: string;
  linkToken: string;
  /** The browser that asked keeps this (a cookie), to enter the code. */
  flowToken: string;
}

const codeHash = (requestId: string, code: string) => hashSecret(`code:${requestId}:${code}`);

/** Constant-time comparison of two hashes (base64url SHA-256 strings). */
function sameHash(a: string | null, b: string): boolean {
  if (a === null) return false;
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Issues a request for `address` (lowercased by the caller), replacing any earlier one of the same
 * purpose and address (its code and link stop working): one statement, so simultaneous requests
 * leave exactly one.
 */
export async function issueRequest(
  db: Kysely<Schema>,
  input: { purpose: Purpose; address: string; userId: string | null; returnTo?: string | null },
  now = Date.now(),
): Promise<IssuedRequest> {
  const requestId = randomUUID();
  const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
  const linkToken = newSecret();
  const flowToken = newSecret();
  const row = {
    request_id: requestId,
    user_id: input.userId,
    stage: 'sent',
    code_hash: codeHash(requestId, code),
    link_hash: hashSecret(linkToken),
    flow_hash: hashSecret(flowToken),
    code_attempts: 0,
    return_to: input.returnTo ?? null,
    created_at: now,
    expires_at: now + REQUEST_TTL_MS[input.purpose],
  };
  await db
    .insertInto('verification_requests')
    .values({ ...row, purpose: input.purpose, address: input.address })
    .onConflict((conflict) => conflict.columns(['purpose', 'address']).doUpdateSet(row))
    .execute();
  return { requestId, code, linkToken, flowToken };
}

/** The live request a browser's flow token belongs to, at `stage`. */
export async function findByFlow(
  db: Kysely<Schema>,
  purpose: Purpose,
  flowToken: string | undefined,
  stage: 'sent' | 'verified',
  now = Date.now(),
): Promise<VerificationRequest | undefined> {
  if (!flowToken || !/^[A-Za-z0-9_-]{43}$/.test(flowToken)) return undefined;
  const hash = hashSecret(flowToken);
  const row = await db.selectFrom('verification_requests').selectAll().where('flow_hash', '=', hash).executeTakeFirst();
  if (!row || row.purpose !== purpose || row.stage !== stage || row.expires_at <= now || !sameHash(row.flow_hash, hash))
    return undefined;
  return row as VerificationRequest;
}

/** The user's newest live request of `purpose` not yet proven (an e-mail change waiting for its link to be opened). */
export async function findPendingOfUser(
  db: Kysely<Schema>,
  purpose: Purpose,
  userId: string,
  now = Date.now(),
): Promise<VerificationRequest | undefined> {
  const row = await db
    .selectFrom('verification_requests')
    .selectAll()
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('stage', '=', 'sent')
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  return row as VerificationRequest | undefined;
}

/** The live request a link token belongs to, not yet proven. */
export async function findByLink(
  db: Kysely<Schema>,
  linkToken: string,
  now = Date.now(),
): Promise<VerificationRequest | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(linkToken)) return undefined;
  const hash = hashSecret(linkToken);
  const row = await db.selectFrom('verification_requests').selectAll().where('link_hash', '=', hash).executeTakeFirst();
  if (row?.stage !== 'sent' || row.expires_at <= now || !sameHash(row.link_hash, hash)) return undefined;
  return row as VerificationRequest;
}

export type ProveOutcome =
  | { kind: 'proven'; request: VerificationRequest; flowToken: string }
  | { kind: 'wrong'; attemptsLeft: number }
  /** Expired, replaced, used, or out of attempts: a new request is needed. */
  | { kind: 'ended' };

/** The request is proven: it moves to 'verified' under a new flow token, once (a racing second proof finds it moved). */
async function markProven(db: Kysely<Schema>, request: VerificationRequest, now: number): Promise<ProveOutcome> {
  const flowToken = newSecret();
  const result = await db
    .updateTable('verification_requests')
    .set({
      stage: 'verified',
      flow_hash: hashSecret(flowToken),
      code_hash: null,
      link_hash: null,
      expires_at: now + REQUEST_TTL_MS[request.purpose],
    })
    .where('request_id', '=', request.request_id)
    .where('stage', '=', 'sent')
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return { kind: 'ended' };
  return { kind: 'proven', request: { ...request, stage: 'verified' }, flowToken };
}

/**
 * Checks a code typed by the browser holding `flowToken`. The attempt is counted before the code
 * is compared, by one conditional UPDATE, so a burst of simultaneous guesses gets no more than
 * MAX_CODE_ATTEMPTS between them; the last wrong one ends the request.
 */
export async function proveByCode(
  db: Kysely<Schema>,
  purpose: Purpose,
  flowToken: string | undefined,
  code: string,
  now = Date.now(),
): Promise<ProveOutcome> {
  const request = await findByFlow(db, purpose, flowToken, 'sent', now);
  if (!request) return { kind: 'ended' };
  const counted = await db
    .updateTable('verification_requests')
    .set((eb) => ({ code_attempts: eb('code_attempts', '+', 1) }))
    .where('request_id', '=', request.request_id)
    .where('stage', '=', 'sent')
    .where('code_attempts', '<', MAX_CODE_ATTEMPTS)
    .returning('code_attempts')
    .executeTakeFirst();
  if (!counted) return { kind: 'ended' };
  const typed = code.replace(/[\s-]/g, '');
  if (/^[0-9]{6}$/.test(typed) && sameHash(request.code_hash, codeHash(request.request_id, typed)))
    return markProven(db, request, now);
  const attemptsLeft = MAX_CODE_ATTEMPTS - Number(counted.code_attempts);
  if (attemptsLeft > 0) return { kind: 'wrong', attemptsLeft };
  await db
    .deleteFrom('verification_requests')
    .where('request_id', '=', request.request_id)
    .where('stage', '=', 'sent')
    .execute();
  return { kind: 'ended' };
}

/** Proves a request by its link (sign-up and reset; an e-mail change is claimed by its link at once). */
export async function proveByLink(
  db: Kysely<Schema>,
  request: VerificationRequest,
  now = Date.now(),
): Promise<ProveOutcome> {
  return markProven(db, request, now);
}

/**
 * Claims (deletes) a proven request of the browser's flow token: one DELETE … RETURNING, so two
 * racing finishers cannot both win. Run inside the transaction that does what it was for, so a
 * failure there leaves the request in place.
 */
export async function claimByFlow(
  db: Kysely<Schema>,
  purpose: Purpose,
  flowToken: string,
  now = Date.now(),
): Promise<VerificationRequest | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(flowToken)) return undefined;
  const row = await db
    .deleteFrom('verification_requests')
    .where('flow_hash', '=', hashSecret(flowToken))
    .where('purpose', '=', purpose)
    .where('stage', '=', 'verified')
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
  return row as VerificationRequest | undefined;
}

/** Puts back a request claimed by claimByFlow whose purpose could not be carried out (a replacing request wins). */
export async function restoreRequest(db: Kysely<Schema>, request: VerificationRequest): Promise<void> {
  await db
    .insertInto('verification_requests')
    .values(request)
    .onConflict((conflict) => conflict.doNothing())
    .execute();
}

/** Claims (deletes) a request by its link token, in the caller's transaction. */
export async function claimByLink(
  db: Kysely<Schema>,
  purpose: Purpose,
  linkToken: string,
  now = Date.now(),
): Promise<VerificationRequest | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(linkToken)) return undefined;
  const row = await db
    .deleteFrom('verification_requests')
    .where('link_hash', '=', hashSecret(linkToken))
    .where('purpose', '=', purpose)
    .where('stage', '=', 'sent')
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
  return row as VerificationRequest | undefined;
}

/** Ends every request of the user (the account's password or address changed). */
export async function endRequestsOfUser(db: Kysely<Schema>, userId: string): Promise<void> {
  await db.deleteFrom('verification_requests').where('user_id', '=', userId).execute();
}
