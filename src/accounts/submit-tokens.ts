import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';

/**
 * Single-use submit tokens (table submit_tokens): a form that creates, sends or changes something
 * carries one, and only the first submit of it acts. The first claims the token's row; a repeated
 * or simultaneous submit finds the row and waits for the first one's answer, kept sealed under a
 * key that only the token gives (the answer may hold a secret shown once: a client secret, a flow
 * cookie), so the database alone can not show it. The row is keyed by the token and the form's
 * route, so one page's token serves each of its forms once.
 */

/** A first submit's answer is kept this long for its repeats. */
export const SUBMIT_ANSWER_TTL_MS = 60 * 60_000;

/** What the first submit answered, as sent again to a repeat. */
export interface SubmitAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: string;
}

const rowKey = (route: string, token: string) =>
  createHash('sha256').update(`submit\u0000${route}\u0000${token}`).digest('base64url');
const sealKey = (route: string, token: string) =>
  createHash('sha256').update(`submit answer\u0000${route}\u0000${token}`).digest();

/** Claims the token for the form at `route`: true for the first submit, false when another claimed it already. */
export async function claimSubmitToken(
  db: Kysely<Schema>,
  route: string,
  token: string,
  now = Date.now(),
): Promise<boolean> {
  // An expired row the purge has not taken yet frees its token.
  await db
    .deleteFrom('submit_tokens')
    .where('token_hash', '=', rowKey(route, token))
    .where('expires_at', '<=', now)
    .execute();
  const result = await db
    .insertInto('submit_tokens')
    .values({ token_hash: rowKey(route, token), answer: null, expires_at: now + SUBMIT_ANSWER_TTL_MS })
    .onConflict((conflict) => conflict.column('token_hash').doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** Keeps the first submit's answer for its repeats. */
export async function keepSubmitAnswer(
  db: Kysely<Schema>,
  route: string,
  token: string,
  answer: SubmitAnswer,
): Promise<void> {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey(route, token), iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(answer), 'utf8'), cipher.final()]);
  await db
    .updateTable('submit_tokens')
    .set({ answer: Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url') })
    .where('token_hash', '=', rowKey(route, token))
    .execute();
}

/** Gives the token back when its first submit failed (a 5xx, an error): a repeat may then act. */
export async function releaseSubmitToken(db: Kysely<Schema>, route: string, token: string): Promise<void> {
  await db
    .deleteFrom('submit_tokens')
    .where('token_hash', '=', rowKey(route, token))
    .where('answer', 'is', null)
    .execute();
}

/**
 * The first submit's answer: `pending` while it is at work, undefined when the token is free
 * (released, expired, or never claimed).
 */
export async function findSubmitAnswer(
  db: Kysely<Schema>,
  route: string,
  token: string,
  now = Date.now(),
): Promise<SubmitAnswer | 'pending' | undefined> {
  const row = await db
    .selectFrom('submit_tokens')
    .select(['answer', 'expires_at'])
    .where('token_hash', '=', rowKey(route, token))
    .executeTakeFirst();
  if (!row || row.expires_at <= now) return undefined;
  if (row.answer === null) return 'pending';
  try {
    const raw = Buffer.from(row.answer, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', sealKey(route, token), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return JSON.parse(
      Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'),
    ) as SubmitAnswer;
  } catch {
    return undefined;
  }
}
