import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { bumpContentVersion } from '../../db/content-versions.ts';
import { lockKey, lockKeys } from '../../db/locks.ts';
import { reusableQuery } from '../../db/reusable-query.ts';
import type { ModsTable, Schema } from '../../db/schema.ts';

export type ModRow = Pick<ModsTable, 'mod_id' | 'name' | 'confirmed' | 'confirmation_code' | 'pull_url'>;

export interface NewRegistration {
  modId: string;
  name: string;
  pullUrl: string | null;
}

/** A registration rule was broken; `modId` names the mod. */
export class ModRuleError extends Error {
  constructor(
    readonly modId: string,
    readonly reason: 'alreadyRegistered' | 'confirmedByAnother' | 'notRegistered',
    message: string,
  ) {
    super(message);
  }
}

const columns = ['mod_id', 'name', 'confirmed', 'confirmation_code', 'pull_url'] as const;

const modsOf = reusableQuery((db: Kysely<Schema>, { userId }: { userId: string }) =>
  db.selectFrom('mods').select(columns).where('user_id', '=', userId).orderBy('mod_id'),
);
const modsOfAmong = reusableQuery(
  (db: Kysely<Schema>, { userId, modIds }: { userId: string; modIds: readonly string[] }) =>
    db.selectFrom('mods').select(columns).where('user_id', '=', userId).where('mod_id', 'in', modIds).orderBy('mod_id'),
);

export async function listMods(db: Kysely<Schema>, userId: string, modIds?: readonly string[]): Promise<ModRow[]> {
  if (!modIds) return modsOf(db, { userId });
  if (modIds.length === 0) return [];
  return modsOfAmong(db, { userId, modIds });
}

/** Mods of `modIds` that someone other than `userId` has confirmed. */
export async function confirmedByOthers(
  db: Kysely<Schema>,
  userId: string,
  modIds: readonly string[],
): Promise<string[]> {
  if (modIds.length === 0) return [];
  const rows = await db
    .selectFrom('mods')
    .select('mod_id')
    .where('mod_id', 'in', modIds)
    .where('confirmed', '=', 1)
    .where('user_id', '<>', userId)
    .execute();
  return rows.map((row) => row.mod_id);
}

/** The lock key every transaction about one mod (its registrations and its engrams) holds. */
export const modLockKey = (modId: string) => `mod:${modId}`;

/** Registers every mod or none. */
export async function registerMods(
  db: Kysely<Schema>,
  userId: string,
  mods: readonly NewRegistration[],
): Promise<ModRow[]> {
  const now = Date.now();
  return db.transaction().execute(async (trx) => {
    // Every mod's lock at once, in a fixed order: one at a time in request order, two requests
    // naming the same mods in opposite orders would each wait for the other (a deadlock).
    await lockKeys(
      trx,
      mods.map((mod) => modLockKey(mod.modId)),
    );
    const created: ModRow[] = [];
    for (const mod of mods) {
      if ((await confirmedByOthers(trx, userId, [mod.modId])).length > 0) {
        throw new ModRuleError(
          mod.modId,
          'confirmedByAnother',
          `Mod ${mod.modId} is already confirmed by another user`,
        );
      }
      const row = await trx
        .insertInto('mods')
        .values({
          mod_id: mod.modId,
          user_id: userId,
          name: mod.name,
          confirmed: 0,
          confirmation_code: randomUUID(),
          pull_url: mod.pullUrl,
          created_at: now,
        })
        .onConflict((conflict) => conflict.columns(['mod_id', 'user_id']).doNothing())
        .returning(columns)
        .executeTakeFirst();
      if (!row) throw new ModRuleError(mod.modId, 'alreadyRegistered', `You have already registered mod ${mod.modId}`);
      created.push(row);
    }
    // Engram lists show mods' names: every mod write counts as a change to them.
    await bumpContentVersion(trx, 'engrams');
    return created;
  });
}

/**
 * Marks the caller's registration confirmed and removes every other user's unconfirmed
 * registration of the mod, in one transaction.
 */
export async function confirmMod(db: Kysely<Schema>, userId: string, modId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await lockKey(trx, modLockKey(modId));
    if ((await confirmedByOthers(trx, userId, [modId])).length > 0) {
      throw new ModRuleError(modId, 'confirmedByAnother', `Mod ${modId} is already confirmed by another user`);
    }
    const updated = await trx
      .updateTable('mods')
      .set({ confirmed: 1 })
      .where('mod_id', '=', modId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n)
      throw new ModRuleError(modId, 'notRegistered', `You have not registered mod ${modId}`);
    await trx
      .deleteFrom('mods')
      .where('mod_id', '=', modId)
      .where('user_id', '<>', userId)
      .where('confirmed', '=', 0)
      .execute();
    await bumpContentVersion(trx, 'engrams');
  });
}

/** Deletes the caller's registrations of every mod in `modIds` (their engrams cascade), or none. */
export async function deleteMods(db: Kysely<Schema>, userId: string, modIds: readonly string[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    // An engram write to one of these mods holds its lock too, so it either lands before the
    // delete (and is removed with the mod) or finds the mod gone.
    await lockKeys(trx, modIds.map(modLockKey));
    const held = new Set((await listMods(trx, userId, modIds)).map((row) => row.mod_id));
    const missing = modIds.find((modId) => !held.has(modId));
    if (missing !== undefined)
      throw new ModRuleError(missing, 'notRegistered', `You have not registered mod ${missing}`);
    await trx.deleteFrom('mods').where('user_id', '=', userId).where('mod_id', 'in', modIds).execute();
    await bumpContentVersion(trx, 'engrams');
  });
}
