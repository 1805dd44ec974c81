import type { Config } from '../../config.ts';
import type { EngramColumns, EngramRow } from './store.ts';

/** Availability bits of the game's maps. */
export const ENVIRONMENTS = { Island: 1, Scorched: 2, Center: 4, Ragnarok: 8, Abberation: 16 } as const;
export const ALL_BITS = 31;

/** The names of every availability mask, made once: each engram answered needs them. */
const NAMES_BY_MASK: readonly (readonly string[])[] = Array.from({ length: ALL_BITS + 1 }, (_, mask) =>
  Object.entries(ENVIRONMENTS)
    .filter(([, bit]) => (mask & bit) !== 0)
    .map(([name]) => name),
);

/** A mask NAMES_BY_MASK holds: what the API accepts (anything else only a hand-edited database holds). */
const isKnownMask = (availability: number) =>
  Number.isInteger(availability) && availability >= 0 && availability <= ALL_BITS;

export function environmentNames(availability: number): string[] {
  return isKnownMask(availability) ? [...NAMES_BY_MASK[availability]!] : slowEnvironmentNames(availability);
}

function slowEnvironmentNames(availability: number): string[] {
  return Object.entries(ENVIRONMENTS)
    .filter(([, bit]) => (availability & bit) !== 0)
    .map(([name]) => name);
}

export function engramStructure(config: Config, row: EngramRow) {
  return {
    path: row.path,
    class: row.class,
    label: row.label,
    environments: environmentNames(row.availability),
    can_blueprint: row.can_blueprint === 1,
    spawn: `cheat giveitem "Blueprint'${row.path}'" 1 0 false`,
    uid: row.uid,
    resource_url: `${config.baseUrl}/v1/engram.php/${row.uid}`,
    /** Exact digits; engramJson writes them as the JSON integer the spec shows. */
    mod_id: row.mod_id,
    mod_name: row.mod_name,
  };
}

/** The environments array of every availability mask as JSON text, made once. */
const NAMES_JSON_BY_MASK: readonly string[] = NAMES_BY_MASK.map((names) => JSON.stringify(names));

/**
 * The Engram structure as JSON text, the same members in the same order as engramStructure,
 * written directly: each engram answered (one, or ten thousand in the list) would otherwise build
 * the object, stringify it and search the text again for the mod id. `mod_id` is an integer in
 * the spec, and workshop ids reach 2^64 − 1, beyond what a JavaScript number holds exactly, so its
 * digits are written as they are stored (only digits are stored: parseModId).
 */
export function engramJson(config: Config, row: EngramRow): string {
  return writeEngramJson(
    config,
    row.uid,
    row.path,
    row.class,
    row.label,
    row.availability,
    row.can_blueprint,
    row.mod_id,
    row.mod_name,
  );
}

/** engramJson of a row read as columns (readEngramColumns). */
export function engramJsonOfColumns(
  config: Config,
  [uid, path, engramClass, label, availability, canBlueprint, modId, modName]: EngramColumns,
): string {
  return writeEngramJson(config, uid, path, engramClass, label, availability, canBlueprint, modId, modName);
}

function writeEngramJson(
  config: Config,
  uid: string,
  path: string,
  engramClass: string,
  label: string,
  availability: number,
  canBlueprint: number,
  modId: string | null,
  modName: string | null,
): string {
  const environments = isKnownMask(availability)
    ? NAMES_JSON_BY_MASK[availability]!
    : JSON.stringify(slowEnvironmentNames(availability));
  return (
    `{"path":${JSON.stringify(path)},"class":${JSON.stringify(engramClass)},"label":${JSON.stringify(label)},` +
    `"environments":${environments},"can_blueprint":${canBlueprint === 1},` +
    `"spawn":${JSON.stringify(`cheat giveitem "Blueprint'${path}'" 1 0 false`)},"uid":${JSON.stringify(uid)},` +
    `"resource_url":${JSON.stringify(`${config.baseUrl}/v1/engram.php/${uid}`)},` +
    `"mod_id":${modId === null ? 'null' : modId},"mod_name":${JSON.stringify(modName)}}`
  );
}
