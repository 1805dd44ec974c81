import { createHash, createPublicKey, generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { openSealed, type Secrets } from '../secrets/sealed.ts';

/**
 * Every account's key pair (DESIGN "Self-service accounts", Key pair): RSA 2048, the key the v1
 * API and the desktop client sign with. The public key is the user's `public_key` (SPKI PEM); the
 * private key (PKCS#8 PEM) is kept sealed under SECRETS_KEY (src/secrets/sealed.ts) in
 * `private_key` and shown decrypted only as its owner's v4 `privateKey`.
 *
 * The sealed value is bound to its user and to the public key it was made with: should the user
 * replace `publicKey` (v4 users:update), the stored private key no longer opens and `privateKey`
 * reads null, instead of a private key that does not match the public one.
 */
const generate = promisify(generateKeyPair);

export interface AccountKeyPair {
  /** SPKI PEM: the v1 public key. */
  publicKey: string;
  /** The PKCS#8 PEM private key, sealed. */
  sealedPrivateKey: string;
}

/** A new key pair for the user; generated off the event loop (about 50–100 ms of CPU). */
export async function newAccountKeyPair(secrets: Secrets, userId: string): Promise<AccountKeyPair> {
  const { publicKey, privateKey } = await generate('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { publicKey, sealedPrivateKey: secrets.seal(privateKey, keyContext(userId, publicKey)) };
}

/** The private key of a row (PEM), or null when there is none or it does not open (see above). */
export function openAccountPrivateKey(sealed: string | null, userId: unknown, publicKey: unknown): string | null {
  if (sealed === null || typeof userId !== 'string' || typeof publicKey !== 'string') return null;
  try {
    return openSealed(sealed, keyContext(userId, publicKey)) ?? null;
  } catch {
    return null;
  }
}

/** What a private key is sealed for: its user and its public key (as DER, whatever the PEM's layout). */
function keyContext(userId: string, publicKeyPem: string): string {
  const der = createPublicKey(publicKeyPem).export({ type: 'spki', format: 'der' });
  return `users.private_key\n${userId}\n${createHash('sha256').update(der).digest('base64url')}`;
}

/**
 * Gives a key pair to every account that has none (made before key pairs existed): a migration
 * cannot, since SQL does not know SECRETS_KEY, so each start does it in the background, in small
 * batches. An account only gets one while it still has no public key, so several instances doing
 * this at once, or a user setting a key meanwhile, never lose anything. Answers how many it gave.
 */
export async function giveKeyPairsToAccountsWithout(
  db: Kysely<Schema>,
  secrets: Secrets,
  log: FastifyBaseLogger,
  shouldStop: () => boolean = () => false,
): Promise<number> {
  let given = 0;
  const skipped = new Set<string>();
  while (!shouldStop()) {
    const rows = await db
      .selectFrom('users')
      .select('user_id')
      .where('username', 'is not', null)
      .where('public_key', 'is', null)
      .orderBy('user_id')
      .limit(skipped.size + 20)
      .execute();
    const batch = rows.filter((row) => !skipped.has(row.user_id));
    if (batch.length === 0) break;
    for (const { user_id: userId } of batch) {
      if (shouldStop()) break;
      const pair = await newAccountKeyPair(secrets, userId);
      const result = await db
        .updateTable('users')
        .set({ public_key: pair.publicKey, private_key: pair.sealedPrivateKey })
        .where('user_id', '=', userId)
        .where('public_key', 'is', null)
        .executeTakeFirst();
      if (result.numUpdatedRows > 0n) given++;
      else skipped.add(userId);
    }
  }
  if (given > 0) log.info({ accounts: given }, 'gave a key pair to accounts that had none');
  return given;
}

/**
 * Whether some stored private key was sealed under another key than `keyId`: the secrets key
 * was lost or replaced (a database restored without its key file), and those keys cannot be read.
 */
export async function hasKeysSealedUnderAnotherKey(db: Kysely<Schema>, keyId: string): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('user_id')
    .where('private_key', 'is not', null)
    .where('private_key', 'not like', `v1.${keyId}.%`)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
