import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';

/** A challenge is answered within 5 minutes (DESIGN "Passkeys"). */
export const CHALLENGE_TTL_MS = 5 * 60_000;
/** Challenges one browser may hold at once (several tabs); older ones are dropped. */
const LIVE_PER_BINDING = 8;

export type ChallengePurpose = 'sign_in' | 'register';

/**
 * Issues a new random challenge bound to the browser (`bindingHash`, a hash of its binding cookie)
 * and, for adding a passkey, to the signed-in user.
 */
export async function issueChallenge(
  db: Kysely<Schema>,
  binding: { bindingHash: string; purpose: ChallengePurpose; userId?: string },
  now = Date.now(),
): Promise<string> {
  const challenge = randomBytes(32).toString('base64url');
  await db.transaction().execute(async (trx) => {
    const keep = trx
      .selectFrom('passkey_challenges')
      .select('challenge')
      .where('binding_hash', '=', binding.bindingHash)
      .orderBy('expires_at', 'desc')
      .limit(LIVE_PER_BINDING - 1);
    await trx
      .deleteFrom('passkey_challenges')
      .where('binding_hash', '=', binding.bindingHash)
      .where('challenge', 'not in', keep)
      .execute();
    await trx
      .insertInto('passkey_challenges')
      .values({
        challenge,
        binding_hash: binding.bindingHash,
        purpose: binding.purpose,
        user_id: binding.userId ?? null,
        expires_at: now + CHALLENGE_TTL_MS,
      })
      .execute();
  });
  return challenge;
}

/**
 * Uses up `challenge` if it is live and was issued to this browser for this purpose (and user): one
 * conditional DELETE, so a replayed answer, a stale challenge, or one issued to another browser is
 * refused, and of two simultaneous answers only one gets it.
 */
export async function consumeChallenge(
  db: Kysely<Schema>,
  challenge: string,
  binding: { bindingHash: string; purpose: ChallengePurpose; userId?: string },
  now = Date.now(),
): Promise<boolean> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) return false;
  let query = db
    .deleteFrom('passkey_challenges')
    .where('challenge', '=', challenge)
    .where('binding_hash', '=', binding.bindingHash)
    .where('purpose', '=', binding.purpose)
    .where('expires_at', '>', now);
  query =
    binding.userId === undefined ? query.where('user_id', 'is', null) : query.where('user_id', '=', binding.userId);
  const result = await query.executeTakeFirst();
  return result.numDeletedRows > 0n;
}
