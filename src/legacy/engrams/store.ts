import { hash } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/connection.ts';
import { bumpContentVersion } from '../../db/content-versions.ts';
import { isForeignKeyViolation } from '../../db/errors.ts';
import { lockKeys } from '../../db/locks.ts';
import { reusableQuery } from '../../db/reusable-query.ts';
import type { Schema } from '../../db/schema.ts';
import { modLockKey } from '../mods/store.ts';

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
    readonly kind:
      | 'heldByAnotherMod'
      | 'notYourConfirmedMod'
      | 'missingField'
      | 'notFound'
      | 'notYours'
      | 'modNotFound',
    readonly element: { index?: number; path?: string; identifier?: string; fields?: string[] },
    message: string,
  ) {
    super(message);
  }
}

export const engramUid = (path: string) => hash('md5', path.toLowerCase(), 'hex');
export const isEngramUid = (identifier: string) => /^[0-9a-f]{32}$/i.test(identifier);

/** The class string the game uses for a blueprint path: its object name plus _C. */
export function classOfPath(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const object = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1) : name;
  return object.endsWith('_C') ? object : `${object}_C`;
}

/** The columns an engram's answer shows (engramJson), in the order of EngramColumns. */
const ANSWER_COLUMNS = [
  'engrams.uid',
  'engrams.path',
  'engrams.class',
  'engrams.label',
  'engrams.availability',
  'engrams.can_blueprint',
  'engrams.mod_id',
  'mods.name as mod_name',
] as const;

function engramsWithModName(db: Kysely<Schema>) {
  return db
    .selectFrom('engrams')
    .leftJoin('mods', (join) =>
      join.onRef('mods.mod_id', '=', 'engrams.mod_id').onRef('mods.user_id', '=', 'engrams.user_id'),
    );
}

/** Every column of EngramRow: the answer's and the owner's. */
const ROW_COLUMNS = [...ANSWER_COLUMNS, 'engrams.user_id'] as const;

function selectEngrams(db: Kysely<Schema>) {
  return engramsWithModName(db).select(ROW_COLUMNS);
}

/**
 * Every engram (optionally of some mods), in keyset-paged chunks of rows: memory holds one chunk,
 * and no connection is held while the client reads.
 */
export async function* streamEngrams(
  db: Kysely<Schema>,
  modIds?: readonly string[],
  chunkSize = 1000,
): AsyncGenerator<EngramRow[]> {
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

/** The identifiers split into uids (32 hex digits, lowercased) and class strings. */
function byKind(identifiers: readonly string[]): ByKind {
  const uids: string[] = [];
  const classes: string[] = [];
  for (const identifier of identifiers) {
    if (isEngramUid(identifier)) uids.push(identifier.toLowerCase());
    else classes.push(identifier);
  }
  return { uids, classes };
}

/** Engrams matching any identifier: a uid (32 hex digits) or a class string. */
export function findEngrams(db: Kysely<Schema>, identifiers: readonly string[]): Promise<EngramRow[]> {
  if (identifiers.length === 0) return Promise.resolve([]);
  // A plain function handing on the query's promise: no promise layer of its own (see reusableQuery).
  return engramsByIdentifiers(db, byKind(identifiers));
}

type ByKind = { uids: readonly string[]; classes: readonly string[] };

/** The engrams any identifier names, in uid order; the caller chooses the columns. */
function engramsMatching(db: Kysely<Schema>, { uids, classes }: ByKind) {
  return engramsWithModName(db)
    .where((eb) =>
      eb.or([
        ...(uids.length ? [eb('engrams.uid', 'in', uids)] : []),
        ...(classes.length ? [eb('engrams.class', 'in', classes)] : []),
      ]),
    )
    .orderBy('engrams.uid');
}

const engramsByIdentifiers = reusableQuery((db: Kysely<Schema>, identifiers: ByKind) =>
  engramsMatching(db, identifiers).select(ROW_COLUMNS),
);

/** What an engram's answer shows (engramJson), as a row of columns in this order. */
export type EngramColumns = [
  uid: string,
  path: string,
  engramClass: string,
  label: string,
  availability: number,
  canBlueprint: number,
  modId: string | null,
  modName: string | null,
];

/**
 * findEngrams for the GET, outside any transaction: only the columns the answer shows, each row an
 * array. Rows as objects cost more than the statement's own search (nine properties a row,
 * measured: 4.7 against 4.1 µs for the statement of one engram).
 */
export function readEngramColumns(database: Database, identifiers: readonly string[]): Promise<EngramColumns[]> {
  if (identifiers.length === 0) return Promise.resolve([]);
  return engramColumnsByIdentifiers.arrays(database, byKind(identifiers)) as Promise<EngramColumns[]>;
}

const engramColumnsByIdentifiers = reusableQuery((db: Kysely<Schema>, identifiers: ByKind) =>
  engramsMatching(db, identifiers).select(ANSWER_COLUMNS),
);

/**
 * Why `userId` may not write to `modId`: 403 when the mod is there but not theirs to write (their
 * registration is unconfirmed, or another user confirmed it), 404 when there is no such mod (never
 * registered, or deleted).
 */
async function refusal(
  db: Kysely<Schema>,
  userId: string,
  modId: string,
  element: EngramRuleError['element'],
): Promise<EngramRuleError> {
  const known = await db
    .selectFrom('mods')
    .select('mod_id')
    .where('mod_id', '=', modId)
    .where((eb) => eb.or([eb('user_id', '=', userId), eb('confirmed', '=', 1)]))
    .executeTakeFirst();
  return known
    ? new EngramRuleError('notYourConfirmedMod', element, `Mod ${modId} is not a confirmed mod of yours`)
    : new EngramRuleError('modNotFound', element, `There is no mod ${modId}: register and confirm it first`);
}

/** Adds or updates every engram, or none; answers the engrams as stored, in the order written. */
export async function saveEngrams(
  db: Kysely<Schema>,
  userId: string,
  writes: readonly EngramWrite[],
): Promise<EngramRow[]> {
  try {
    return await db.transaction().execute((trx) => writeEngrams(trx, userId, writes));
  } catch (error) {
    // The mod (or its registrant) was deleted by a path that takes no mod lock (a user's deletion).
    if (isForeignKeyViolation(error))
      throw new EngramRuleError('modNotFound', {}, 'The mod of this engram was deleted');
    throw error;
  }
}

async function writeEngrams(
  trx: Transaction<Schema>,
  userId: string,
  writes: readonly EngramWrite[],
): Promise<EngramRow[]> {
  const now = Date.now();
  // Requests writing the same paths run one after another, so a path another request is adding
  // is seen as existing (a rule error or an update) rather than failing its insert. The mods
  // written to are locked too (a mod's deletion takes the same lock), so a mod cannot vanish
  // between the check below and the insert: the write lands first or finds the mod gone.
  const modIds = new Set(writes.flatMap((write) => (write.modId === undefined ? [] : [write.modId])));
  await lockKeys(trx, [...writes.map((write) => `engram:${engramUid(write.path)}`), ...[...modIds].map(modLockKey)]);
  const confirmed = new Set(
    (
      await trx.selectFrom('mods').select('mod_id').where('user_id', '=', userId).where('confirmed', '=', 1).execute()
    ).map((row) => row.mod_id),
  );
  const uids: string[] = [];
  for (const [index, write] of writes.entries()) {
    const uid = engramUid(write.path);
    const element = { index, path: write.path };
    if (write.modId !== undefined && !confirmed.has(write.modId))
      throw await refusal(trx, userId, write.modId, element);
    const existing = await trx
      .selectFrom('engrams')
      .select(['mod_id', 'user_id'])
      .where('uid', '=', uid)
      .executeTakeFirst();
    if (existing) {
      if (existing.user_id !== userId || (write.modId !== undefined && write.modId !== existing.mod_id)) {
        throw new EngramRuleError(
          'heldByAnotherMod',
          element,
          `Path ${write.path} belongs to mod ${existing.mod_id ?? '(none)'}; delete that engram first`,
        );
      }
      const updated = await trx
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
        .executeTakeFirst();
      // Deleted meanwhile with its mod (a write without mod_id does not lock the mod).
      if (updated.numUpdatedRows === 0n)
        throw new EngramRuleError('modNotFound', element, `Engram ${write.path} was deleted with its mod`);
    } else {
      const missing = (['label', 'modId', 'availability', 'canBlueprint'] as const).filter(
        (key) => write[key] === undefined,
      );
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
  await bumpContentVersion(trx, 'engrams');
  const rows = new Map((await findEngrams(trx, uids)).map((row) => [row.uid, row]));
  return uids.map((uid) => rows.get(uid)!);
}

/** Deletes every engram the identifiers name (uids or class strings), or none. */
export async function deleteEngrams(
  db: Kysely<Schema>,
  userId: string,
  identifiers: readonly string[],
): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    const rows = await findEngrams(trx, identifiers);
    for (const identifier of identifiers) {
      const matches = rows.filter((row) =>
        isEngramUid(identifier) ? row.uid === identifier.toLowerCase() : row.class === identifier,
      );
      if (matches.length === 0) throw new EngramRuleError('notFound', { identifier }, `No engram ${identifier}`);
      if (matches.some((row) => row.user_id !== userId)) {
        throw new EngramRuleError(
          'notYours',
          { identifier },
          `Engram ${identifier} belongs to a mod that is not yours`,
        );
      }
    }
    const uids = rows.map((row) => row.uid);
    if (uids.length > 0) await trx.deleteFrom('engrams').where('uid', 'in', uids).execute();
    await bumpContentVersion(trx, 'engrams');
    return uids;
  });
}
