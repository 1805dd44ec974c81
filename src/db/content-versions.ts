import { type Kysely, sql, type Transaction } from 'kysely';
import { reusableQuery } from './reusable-query.ts';
import type { Schema } from './schema.ts';

/**
 * Kinds of content whose answers instances cache. `engrams`: every engram list (engrams, and the
 * mods whose names and existence they show).
 */
export type ContentName = 'engrams';

/**
 * Counts a change to `name`. Called inside the writing transaction, so the new version is visible
 * exactly when the change is; best last in the transaction, as the row stays locked until commit.
 */
export async function bumpContentVersion(trx: Transaction<Schema>, name: ContentName): Promise<void> {
  await trx
    .updateTable('content_versions')
    .set({ version: sql<number>`version + 1` })
    .where('name', '=', name)
    .execute();
}

/** The current version of `name`: one primary-key read. */
export async function contentVersion(db: Kysely<Schema>, name: ContentName): Promise<number> {
  const [row] = await versionOf(db, { name });
  return Number(row?.version ?? 0);
}

// Read on every request for a cached list: compiled once.
const versionOf = reusableQuery((db: Kysely<Schema>, { name }: { name: string }) =>
  db.selectFrom('content_versions').select('version').where('name', '=', name),
);
