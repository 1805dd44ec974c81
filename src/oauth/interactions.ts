import type { Kysely } from 'kysely';
import type { InteractionsTable, Schema } from '../db/schema.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';

/** How long a user has to finish signing in and approving. */
export const INTERACTION_TTL_MS = 15 * 60 * 1000;

export type Interaction = Omit<InteractionsTable, 'interaction_hash'>;

/** Starts an interaction; its id appears only in the page URL, the database keeps a hash. */
export async function createInteraction(
  db: Kysely<Schema>,
  interaction: Omit<Interaction, 'expires_at'>,
  now = Date.now(),
): Promise<string> {
  const id = newSecret();
  await db
    .insertInto('interactions')
    .values({ ...interaction, interaction_hash: hashSecret(id), expires_at: now + INTERACTION_TTL_MS })
    .execute();
  return id;
}

export async function findInteraction(
  db: Kysely<Schema>,
  id: string,
  now = Date.now(),
): Promise<Interaction | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
  const row = await db
    .selectFrom('interactions')
    .selectAll()
    .where('interaction_hash', '=', hashSecret(id))
    .executeTakeFirst();
  if (!row || row.expires_at <= now) return undefined;
  const { interaction_hash: _hash, ...interaction } = row;
  return interaction;
}

/** Ends the interaction; false when it was already ended (a double submit). */
export async function endInteraction(db: Kysely<Schema>, id: string): Promise<boolean> {
  const result = await db.deleteFrom('interactions').where('interaction_hash', '=', hashSecret(id)).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
