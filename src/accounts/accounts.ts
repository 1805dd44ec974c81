import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import type { Schema } from '../db/schema.ts';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords.ts';
import { isBase32Secret } from './totp.ts';

/** A user who can sign in with a password. */
export interface Account {
  userId: string;
  username: string;
  email: string | null;
  passwordHash: string | null;
  totpSecret: string | null;
}

export class AccountError extends Error {}

export const USERNAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{2,31}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/;

export function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw new AccountError(`The password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new AccountError(`The password must have at most ${MAX_PASSWORD_LENGTH} characters`);
}

export async function createAccount(
  db: Kysely<Schema>,
  input: { username: string; email: string; password: string; totpSecret?: string },
): Promise<string> {
  if (!USERNAME.test(input.username)) throw new AccountError('The username must be 3 to 32 letters, digits, dots, dashes or underscores');
  if (!EMAIL.test(input.email) || input.email.length > 254) throw new AccountError('The email address is not valid');
  checkPassword(input.password);
  if (input.totpSecret !== undefined && !isBase32Secret(input.totpSecret)) throw new AccountError('The TOTP secret must be base32, at least 16 characters');
  const userId = randomUUID();
  try {
    await db
      .insertInto('users')
      .values({
        user_id: userId,
        public_key: null,
        created_at: Date.now(),
        username: input.username,
        email: input.email.toLowerCase(),
        password_hash: await hashPassword(input.password),
        totp_secret: input.totpSecret?.toUpperCase().replace(/=+$/, '') ?? null,
        private_key: null,
      })
      .execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new AccountError('That username or email address is taken');
    throw error;
  }
  return userId;
}

const accountColumns = ['user_id', 'username', 'email', 'password_hash', 'totp_secret'] as const;

function toAccount(row: Pick<Schema['users'], (typeof accountColumns)[number]>): Account {
  return { userId: row.user_id, username: row.username ?? '', email: row.email, passwordHash: row.password_hash, totpSecret: row.totp_secret };
}

/** Finds an account by username (any case) or email address. */
export async function findAccountByLogin(db: Kysely<Schema>, login: string): Promise<Account | undefined> {
  const key = login.trim().toLowerCase();
  if (key === '' || key.length > 254) return undefined;
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

export async function setPassword(db: Kysely<Schema>, userId: string, password: string): Promise<boolean> {
  checkPassword(password);
  const result = await db.updateTable('users').set({ password_hash: await hashPassword(password) }).where('user_id', '=', userId).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function setTotpSecret(db: Kysely<Schema>, userId: string, secret: string | null): Promise<boolean> {
  const result = await db.updateTable('users').set({ totp_secret: secret }).where('user_id', '=', userId).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
