/** The remembered encoding choice and the exact-tag shortcut answer what the full parsers answer. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chooseEncoding, encodingChooser, noneMatchHits } from '../../src/http/conditional.ts';

test('encodingChooser answers chooseEncoding, also past its memory', () => {
  const available = ['br', 'gzip'] as const;
  const choose = encodingChooser(available, 3);
  const headers = [
    undefined,
    '',
    'br, gzip',
    'gzip',
    'br;q=0',
    'gzip;q=0.5, br;q=0.4',
    '*',
    'identity',
    'br, gzip',
    'GZIP',
    'deflate',
    ['gzip', 'br;q=0'],
  ];
  for (let round = 0; round < 2; round++) {
    for (const header of headers) assert.equal(choose(header), chooseEncoding(header, available), String(header));
  }
});

test('noneMatchHits: an exact tag, lists, weak tags and * still match; others do not', () => {
  const tags = ['"a"', '"a-br"', '"a-gzip"'];
  assert.equal(noneMatchHits('"a-br"', tags), true);
  assert.equal(noneMatchHits('W/"a"', tags), true);
  assert.equal(noneMatchHits('"x", "a-gzip"', tags), true);
  assert.equal(noneMatchHits(' * ', tags), true);
  assert.equal(noneMatchHits('"b"', tags), false);
  assert.equal(noneMatchHits('a', tags), false);
  assert.equal(noneMatchHits(undefined, tags), false);
});
