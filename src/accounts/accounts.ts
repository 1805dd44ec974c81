import { randomUUID } from 'node:crypto';
import { type Expression, expressionBuilder, type Kysely, type Selectable, sql } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import type { Schema } from '../db/schema.ts';
import type { Secrets } from '../secrets/sealed.ts';
import { USERNAME, USERNAME_MAX_LENGTH, USERNAME_MIN_LENGTH } from './account-names.ts';
import { removeBackupCodes } from './backup-codes.ts';
import { newAccountKeyPair } from './key-pair.ts';
import { passwordRefusal } from './password-rules.ts';
import { hashPassword } from './passwords.ts';
import { isBase32Secret, totpStep } from './totp.ts';
import { endAllDeviceTrust } from './trusted-devices.ts';

/** A user who can sign in with a password. */
export interface Account {
  userId: string;
  username: string;
  email: string | null;
  passwordHash: string | null;
  totpSecret: string | null;
  /** Locked by an operator: it signs in nowhere until unlocked. */
  locked: boolean;
  operator: boolean;
}

export class AccountError extends Error {}

const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/;

/**
 * Throws an AccountError saying why `password` may not be set (password-rules.ts); `userInputs`
 * (the username, the e-mail address) count as easy to guess. Asynchronous: await it.
 */
export async function checkNewPassword(
  password: string,
  userInputs: readonly (string | null | undefined)[],
): Promise<void> {
  const refusal = await passwordRefusal(password, userInputs);
  if (refusal !== undefined) throw new AccountError(refusal);
}

/** Creates the account with its key pair (key-pair.ts); `secrets` is app.secrets. */
export async function createAccount(
  db: Kysely<Schema>,
  input: { username: string; email: string; password: string; totpSecret?: string },
  secrets: Secrets,
): Promise<string> {
  checkNameAndAddress(input);
  await checkNewPassword(input.password, [input.username, input.email]);
  return insertAccount(db, input, secrets);
}

function checkNameAndAddress(input: { username: string; email: string }): void {
  if (!USERNAME.test(input.username))
    throw new AccountError(
      `The username must be ${USERNAME_MIN_LENGTH} to ${USERNAME_MAX_LENGTH} letters, digits, dots, dashes or underscores`,
    );
  if (!EMAIL.test(input.email) || input.email.length > 254) throw new AccountError('The email address is not valid');
}

/**
 * Creates the account whose password the caller has checked already (checkNewPassword): hashes it
 * and makes the key pair. Throws an AccountError for a bad name, address or TOTP secret, or when
 * the username or address is taken.
 */
export async function insertAccount(
  db: Kysely<Schema>,
  input: { username: string; email: string; password: string; totpSecret?: string },
  secrets: Secrets,
): Promise<string> {
  checkNameAndAddress(input);
  if (input.totpSecret !== undefined && !isBase32Secret(input.totpSecret))
    throw new AccountError('The TOTP secret must be base32, at least 16 characters');
  const userId = randomUUID();
  const [keyPair, passwordHash] = await Promise.all([newAccountKeyPair(secrets, userId), hashPassword(input.password)]);
  try {
    await db
      .insertInto('users')
      .values({
        user_id: userId,
        public_key: keyPair.publicKey,
        created_at: Date.now(),
        username: input.username,
        email: input.email.toLowerCase(),
        password_hash: passwordHash,
        totp_secret: input.totpSecret?.toUpperCase().replace(/=+$/, '') ?? null,
        private_key: keyPair.sealedPrivateKey,
      })
      .execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new AccountError('That username or email address is taken');
    throw error;
  }
  return userId;
}

const accountColumns = [
  'user_id',
  'username',
  'email',
  'password_hash',
  'totp_secret',
  'locked_at',
  'operator',
] as const;

function toAccount(row: Pick<Selectable<Schema['users']>, (typeof accountColumns)[number]>): Account {
  return {
    userId: row.user_id,
    username: row.username ?? '',
    email: row.email,
    passwordHash: row.password_hash,
    totpSecret: row.totp_secret,
    locked: row.locked_at !== null,
    operator: row.operator === 1,
  };
}

/** Finds an account by username (any case) or email address. */
export async function findAccountByLogin(db: Kysely<Schema>, login: string): Promise<Account | undefined> {
  const key = login.trim().toLowerCase();
  // No account's name holds a NUL, and PostgreSQL refuses one in a query.
  if (key === '' || key.length > 254 || key.includes('\u0000')) return undefined;
  const row = await db
    .selectFrom('users')
    .select(accountColumns)
    .where((eb) => (key.includes('@') ? eb('email', '=', key) : eb(sql`lower(username)`, '=', key)))
    .executeTakeFirst();
  return row && row.username !== null ? toAccount(row) : undefined;
}

export async function findAccount(db: Kysely<Schema>, userId: string): Promise<Account | undefined> {
  const row = await db.selectFrom('users').select(accountColumns).where('user_id', '=', userId).executeTakeFirst();
  return row && toAccount(row);
}

/**
 * The username of the user `userId` names (null when it has none, or there is no such user), as a
 * subquery: another feature selects it within its own statement rather than joining `users`.
 */
export function usernameOf(userId: Expression<string>) {
  return expressionBuilder<Schema>().selectFrom('users').select('users.username').where('users.user_id', '=', userId);
}

/**
 * The user's OpenID Connect claims as values selected in another feature's statement: username,
 * email and updated_at (the account keeps no time of its last profile change, so its creation).
 */
export function userClaimsOf(userId: Expression<string>) {
  const user = () => expressionBuilder<Schema>().selectFrom('users').where('users.user_id', '=', userId);
  return [
    user().select('users.username').as('username'),
    user().select('users.email').as('email'),
    user().select('users.created_at').as('updated_at'),
  ] as const;
}

/**
 * The user `userId` names if it is locked, as a subquery: a feature that authenticates a request
 * (a bearer token, a grant) refuses a locked account within the statement it runs anyway
 * (`not exists`), so the check adds no round trip.
 */
export function lockedAccount(userId: Expression<string | null>) {
  return expressionBuilder<Schema>()
    .selectFrom('users')
    .select('users.user_id')
    .where('users.user_id', '=', userId)
    .where('users.locked_at', 'is not', null);
}

/** What a user may change about itself through the v4 User class; an absent field stays. */
export interface ProfileChange {
  username?: string | null;
  /** SPKI PEM (public-key.ts normalizes it); the sealed private key opens only with the key it was made with. */
  publicKey?: string | null;
}

/**
 * Changes the user's username and/or public key; false when there is no such user. A username
 * taken by another account (in any case) fails with the database's unique violation.
 */
export async function changeProfile(db: Kysely<Schema>, userId: string, change: ProfileChange): Promise<boolean> {
  const values = {
    ...(change.username !== undefined ? { username: change.username } : {}),
    ...(change.publicKey !== undefined ? { public_key: change.publicKey } : {}),
  };
  if (Object.keys(values).length === 0) return (await findAccount(db, userId)) !== undefined;
  const result = await db.updateTable('users').set(values).where('user_id', '=', userId).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Runs `work` in the caller's transaction when `db` is one, else in a new transaction. */
const inTransaction = <T>(db: Kysely<Schema>, work: (trx: Kysely<Schema>) => Promise<T>): Promise<T> =>
  db.isTransaction ? work(db) : db.transaction().execute(work);

/** Sets the password; every device trusted to skip the two-step code is trusted no longer. */
export async function setPassword(db: Kysely<Schema>, userId: string, password: string): Promise<boolean> {
  const account = await findAccount(db, userId);
  await checkNewPassword(password, [account?.username, account?.email]);
  const passwordHash = await hashPassword(password);
  return inTransaction(db, async (trx) => {
    const stored = await storePasswordHash(trx, userId, passwordHash);
    await endAllDeviceTrust(trx, userId);
    return stored;
  });
}

/** Stores a password hashed beforehand (hashPassword), so a transaction need not wait for the hashing. */
export async function storePasswordHash(db: Kysely<Schema>, userId: string, passwordHash: string): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ password_hash: passwordHash })
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Sets (or with null, removes) the two-step secret; it ends every device trust (and, removed, the backup codes) as well. */
export async function setTotpSecret(db: Kysely<Schema>, userId: string, secret: string | null): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const result = await trx
      .updateTable('users')
      .set({ totp_secret: secret })
      .where('user_id', '=', userId)
      .executeTakeFirst();
    await endAllDeviceTrust(trx, userId);
    if (secret === null) await removeBackupCodes(trx, userId);
    return result.numUpdatedRows > 0n;
  });
}

export type TotpOutcome = 'accepted' | 'wrong' | 'used';

/**
 * Checks a two-step code of the user. A code is accepted only for a time step later than the
 * last one accepted (RFC 6238 §5.2), decided by one conditional UPDATE, so of two simultaneous
 * submissions of one code only one is accepted. 'used': the code is right but its step (or a
 * later one) was accepted already.
 */
export async function acceptTotpCode(
  db: Kysely<Schema>,
  userId: string,
  code: string,
  now = Date.now(),
): Promise<TotpOutcome> {
  const row = await db.selectFrom('users').select('totp_secret').where('user_id', '=', userId).executeTakeFirst();
  if (!row?.totp_secret) return 'wrong';
  const step = totpStep(row.totp_secret, code, now);
  if (step === undefined) return 'wrong';
  const accepted = await db
    .updateTable('users')
    .set({ totp_last_step: step })
    .where('user_id', '=', userId)
    // The secret it was checked against is still the account's.
    .where('totp_secret', '=', row.totp_secret)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .executeTakeFirst();
  return accepted.numUpdatedRows > 0n ? 'accepted' : 'used';
}

/**
 * Turns two-step on with `secret`, whose first code (of time step `step`) confirmed it: that code is
 * used up at once (RFC 6238 §5.2). Only when the account has no secret yet, so of two simultaneous
 * confirmations one wins (false for the other).
 */
export async function enableTotpSecret(
  db: Kysely<Schema>,
  userId: string,
  secret: string,
  step: number,
): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ totp_secret: secret, totp_last_step: step })
    .where('user_id', '=', userId)
    .where('totp_secret', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
