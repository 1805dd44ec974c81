import type { Config } from '../../config.ts';
import type { EngramRow } from './store.ts';

/** Availability bits of the game's maps. */
export const ENVIRONMENTS = { Island: 1, Scorched: 2, Center: 4, Ragnarok: 8, Abberation: 16 } as const;
export const ALL_BITS = 31;

/** The names of every availability mask, made once: each engram answered needs them. */
const NAMES_BY_MASK: readonly (readonly string[])[] = Array.from({ length: ALL_BITS + 1 }, (_, mask) =>
  Object.entries(ENVIRONMENTS)
    .filter(([, bit]) => (mask & bit) !== 0)
    .map(([name]) => name),
);

export function environmentNames(availability: number): string[] {
  const names = NAMES_BY_MASK[availability & ALL_BITS]!;
  return Number.isInteger(availability) && availability >= 0 && availability <= ALL_BITS ? [...names] : slowEnvironmentNames(availability);
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

/**
 * The Engram structure as JSON text. `mod_id` is an integer in the spec, and workshop ids reach
 * 2^64 − 1, beyond what a JavaScript number holds exactly, so its digits are written as they are
 * stored. (The key cannot occur unescaped inside another value: every `"` in a JSON string is `\"`.)
 */
export function engramJson(config: Config, row: EngramRow): string {
  const text = JSON.stringify(engramStructure(config, row));
  return row.mod_id === null ? text : text.replace(`"mod_id":${JSON.stringify(row.mod_id)}`, `"mod_id":${row.mod_id}`);
}
