import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { lockKeys } from '../../db/locks.ts';
import type { Schema } from '../../db/schema.ts';
import { reusableQuery } from '../../db/reusable-query.ts';

export interface EngramRow {
  uid: string;
  path: string;
  class: string;
  label: string;
  availability: number;
  can_blueprint: number;
  mod_id: string | null;
  mod_name: string | null;
  user_id: string | null;
}

/** A write: `path` identifies the engram; the other fields are present when given. */
export interface EngramWrite {
  path: string;
  label?: string;
  modId?: string;
  availability?: number;
  canBlueprint?: boolean;
}

export class EngramRuleError extends Error {
  constructor(
    readonly kind: 'heldByAnotherMod' | 'notYourConfirmedMod' | 'missingField' | 'notFound' | 'notYours',
    readonly element: { index?: number; path?: string; identifier?: string; fields?: string[] },
    message: string,
  ) {
    super(message);
  }
}

export const engramUid = (path: string) => createHash('md5').update(path.toLowerCase()).digest('hex');
export const isEngramUid = (identifier: string) => /^[0-9a-f]{32}$/i.test(identifier);

/** The class string the game uses for a blueprint path: its object name plus _C. */
export function classOfPath(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const object = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1) : name;
  return object.endsWith('_C') ? object : `${object}_C`;
}

function selectEngrams(db: Kysely<Schema>) {
  return db
    .selectFrom('engrams')
    .leftJoin('mods', (join) => join.onRef('mods.mod_id', '=', 'engrams.mod_id').onRef('mods.user_id', '=', 'engrams.user_id'))
    .select([
      'engrams.uid',
      'engrams.path',
      'engrams.class',
      'engrams.label',
      'engrams.availability',
      'engrams.can_blueprint',
      'engrams.mod_id',
      'mods.name as mod_name',
      'engrams.user_id',
    ]);
}

/**
 * Every engram (optionally of some mods), in keyset-paged chunks of rows: memory holds one chunk,
 * and no connection is held while the client reads.
 */
export async function* streamEngrams(db: Kysely<Schema>, modIds?: readonly string[], chunkSize = 1000): AsyncGenerator<EngramRow[]> {
  let after = '';
  for (;;) {
    let query = selectEngrams(db).where('engrams.uid', '>', after).orderBy('engrams.uid').limit(chunkSize);
    if (modIds) query = query.where('engrams.mod_id', 'in', modIds);
    const rows = await query.execute();
    if (rows.length > 0) yield rows;
    if (rows.length < chunkSize) return;
    after = rows[rows.length - 1]!.uid;
  }
}

/** Engrams matching any identifier: a uid (32 hex digits) or a class string. */
export async function findEngrams(db: Kysely<Schema>, identifiers: readonly string[]): Promise<EngramRow[]> {
  const uids = identifiers.filter(isEngramUid).map((uid) => uid.toLowerCase());
  const classes = identifiers.filter((identifier) => !isEngramUid(identifier));
  if (identifiers.length === 0) return [];
  return engramsByIdentifiers(db, { uids, classes });
}

const engramsByIdentifiers = reusableQuery((db: Kysely<Schema>, { uids, classes }: { uids: readonly string[]; classes: readonly string[] }) =>
  selectEngrams(db)
    .where((eb) => eb.or([...(uids.length ? [eb('engrams.uid', 'in', uids)] : []), ...(classes.length ? [eb('engrams.class', 'in', classes)] : [])]))
    .orderBy('engrams.uid'),
);

/** Adds or updates every engram, or none. */
export async function saveEngrams(db: Kysely<Schema>, userId: string, writes: readonly EngramWrite[]): Promise<string[]> {
  const now = Date.now();
  return db.transaction().execute(async (trx) => {
    const confirmed = new Set(
      (await trx.selectFrom('mods').select('mod_id').where('user_id', '=', userId).where('confirmed', '=', 1).execute()).map((row) => row.mod_id),
    );
    // Requests writing the same paths run one after another, so a path another request is adding
    // is seen as existing (a rule error or an update) rather than failing its insert.
    await lockKeys(trx, writes.map((write) => `engram:${engramUid(write.path)}`));
    const uids: string[] = [];
    for (const [index, write] of writes.entries()) {
      const uid = engramUid(write.path);
      const element = { index, path: write.path };
      if (write.modId !== undefined && !confirmed.has(write.modId)) {
        throw new EngramRuleError('notYourConfirmedMod', element, `Mod ${write.modId} is not a confirmed mod of yours`);
      }
      const existing = await trx.selectFrom('engrams').select(['mod_id', 'user_id']).where('uid', '=', uid).executeTakeFirst();
      if (existing) {
        if (existing.user_id !== userId || (write.modId !== undefined && write.modId !== existing.mod_id)) {
          throw new EngramRuleError('heldByAnotherMod', element, `Path ${write.path} belongs to mod ${existing.mod_id ?? '(none)'}; delete that engram first`);
        }
        await trx
          .updateTable('engrams')
          .set({
            path: write.path,
            class: classOfPath(write.path),
            ...(write.label !== undefined && { label: write.label }),
            ...(write.availability !== undefined && { availability: write.availability }),
            ...(write.canBlueprint !== undefined && { can_blueprint: write.canBlueprint ? 1 : 0 }),
            updated_at: now,
          })
          .where('uid', '=', uid)
          .execute();
      } else {
        const missing = (['label', 'modId', 'availability', 'canBlueprint'] as const).filter((key) => write[key] === undefined);
        if (missing.length > 0) {
          const names = { label: 'label', modId: 'mod_id', availability: 'availability', canBlueprint: 'can_blueprint' };
          const fields = missing.map((key) => names[key]);
          throw new EngramRuleError('missingField', { ...element, fields }, `A new engram needs ${fields.join(', ')}`);
        }
        await trx
          .insertInto('engrams')
          .values({
            uid,
            path: write.path,
            class: classOfPath(write.path),
            label: write.label!,
            availability: write.availability!,
            can_blueprint: write.canBlueprint ? 1 : 0,
            mod_id: write.modId!,
            user_id: userId,
            created_at: now,
            updated_at: now,
          })
          .execute();
      }
      uids.push(uid);
    }
    return uids;
  });
}

/** Deletes every engram the identifiers name (uids or class strings), or none. */
export async function deleteEngrams(db: Kysely<Schema>, userId: string, identifiers: readonly string[]): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    const rows = await findEngrams(trx, identifiers);
    for (const identifier of identifiers) {
      const matches = rows.filter((row) => (isEngramUid(identifier) ? row.uid === identifier.toLowerCase() : row.class === identifier));
      if (matches.length === 0) throw new EngramRuleError('notFound', { identifier }, `No engram ${identifier}`);
      if (matches.some((row) => row.user_id !== userId)) {
        throw new EngramRuleError('notYours', { identifier }, `Engram ${identifier} belongs to a mod that is not yours`);
      }
    }
    const uids = rows.map((row) => row.uid);
    if (uids.length > 0) await trx.deleteFrom('engrams').where('uid', 'in', uids).execute();
    return uids;
  });
}
