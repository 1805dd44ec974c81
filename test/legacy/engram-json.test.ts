import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Config } from '../../src/config.ts';
import type { EngramRow } from '../../src/legacy/engrams/store.ts';
import { engramJson, engramJsonOfColumns, engramStructure } from '../../src/legacy/engrams/structure.ts';

const config = { baseUrl: 'https://content.example' } as Config;

/** What engramJson wrote before it wrote the text directly: the structure stringified, the mod id's digits put back unquoted. */
function stringified(row: EngramRow): string {
  const text = JSON.stringify(engramStructure(config, row));
  return row.mod_id === null ? text : text.replace(`"mod_id":${JSON.stringify(row.mod_id)}`, `"mod_id":${row.mod_id}`);
}

const base: EngramRow = {
  uid: '0d3b8c1d4ee95fd245de3b9640d0383d',
  path: '/Game/Mods/Thing/Item_1.Item_1',
  class: 'Item_1_C',
  label: 'Item 1',
  availability: 31,
  can_blueprint: 1,
  mod_id: null,
  mod_name: null,
  user_id: null,
};

test('engramJson writes the same text as the stringified structure, for awkward values too', () => {
  const rows: EngramRow[] = [
    base,
    { ...base, can_blueprint: 0, availability: 0 },
    { ...base, mod_id: '18446744073709551615', mod_name: 'A "quoted" mod \\ with a backslash', user_id: 'u' },
    { ...base, path: '/Game/"odd"\\path\u0000\n\u2028é😀.Thing', label: '<script>\r\n', class: 'Thing_C' },
    { ...base, availability: 5 },
    // Out of range, as only a hand-edited database could hold.
    { ...base, availability: 99 },
    { ...base, availability: -1 },
    { ...base, availability: 2.5 },
  ];
  for (const row of rows) {
    const text = engramJson(config, row);
    assert.equal(text, stringified(row));
    assert.deepEqual(Object.keys(JSON.parse(text)), Object.keys(engramStructure(config, row)));
    // The GET reads the same row as columns (readEngramColumns).
    assert.equal(
      engramJsonOfColumns(config, [
        row.uid,
        row.path,
        row.class,
        row.label,
        row.availability,
        row.can_blueprint,
        row.mod_id,
        row.mod_name,
      ]),
      text,
    );
  }
});

test('a mod id beyond 2^53 keeps its exact digits as a JSON integer', () => {
  const text = engramJson(config, { ...base, mod_id: '18446744073709551615', mod_name: 'Big' });
  assert.match(text, /"mod_id":18446744073709551615,"mod_name":"Big"}$/);
});
