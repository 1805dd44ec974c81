import type { Kysely } from 'kysely';
import { reusableQuery } from '../db/reusable-query.ts';
import type { Schema } from '../db/schema.ts';

export interface NewUser {
  userId: string;
  publicKey: string;
}

export interface StoredUser {
  userId: string;
  publicKey: string | null;
}

export class DuplicateUserError extends Error {
  constructor(readonly userId: string) {
    super(`User ${userId} already exists`);
  }
}

/** The key that verifies the user's v1 signatures; undefined for an unknown or locked user. */
export async function findPublicKey(db: Kysely<Schema>, userId: string): Promise<string | null | undefined> {
  const [row] = await publicKeyOf(db, { userId });
  return row ? row.public_key : undefined;
}

// A locked account's key signs nothing (the lock is checked in the same statement).
const publicKeyOf = reusableQuery((db: Kysely<Schema>, { userId }: { userId: string }) =>
  db.selectFrom('users').select('public_key').where('user_id', '=', userId).where('locked_at', 'is', null),
);

const usersByIds = reusableQuery((db: Kysely<Schema>, { ids }: { ids: readonly string[] }) =>
  db.selectFrom('users').select(['user_id', 'public_key']).where('user_id', 'in', ids).orderBy('user_id'),
);

export async function findUsers(db: Kysely<Schema>, userIds: readonly string[]): Promise<StoredUser[]> {
  if (userIds.length === 0) return [];
  const rows = await usersByIds(db, { ids: userIds });
  return rows.map((row) => ({ userId: row.user_id, publicKey: row.public_key }));
}

/** Creates every user or none: an id that exists (or is being created concurrently) aborts all. */
export async function createUsers(db: Kysely<Schema>, users: readonly NewUser[]): Promise<void> {
  const now = Date.now();
  await db.transaction().execute(async (trx) => {
    for (const user of users) {
      const inserted = await trx
        .insertInto('users')
        .values({ user_id: user.userId, public_key: user.publicKey, created_at: now })
        .onConflict((conflict) => conflict.column('user_id').doNothing())
        .returning('user_id')
        .executeTakeFirst();
      if (!inserted) throw new DuplicateUserError(user.userId);
    }
  });
}

/**
 * Deletes the user; everything the user owns goes with it through ON DELETE CASCADE. Pass a
 * transaction to do more in the same commit (the v1 API bumps its engram cache version there).
 */
export async function deleteUser(db: Kysely<Schema>, userId: string): Promise<boolean> {
  const result = await db.deleteFrom('users').where('user_id', '=', userId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
