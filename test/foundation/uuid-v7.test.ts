/** UUIDv7 (RFC 9562) for server-generated ids: layout, time, order and uniqueness. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isUuid, uuidv7 } from '../../src/http/uuid.ts';

/** The 48-bit millisecond timestamp of a UUIDv7. */
const millisOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

test('a UUIDv7 is a lowercase UUID of version 7 and variant 10, stamped with the current millisecond', () => {
  const before = Date.now();
  const id = uuidv7();
  const after = Date.now();
  assert.ok(isUuid(id), id);
  assert.equal(id, id.toLowerCase());
  assert.equal(id[14], '7', `version nibble of ${id}`);
  assert.ok(['8', '9', 'a', 'b'].includes(id[19]!), `variant of ${id}`);
  // A later call may have moved the stamp on when an earlier test exhausted a millisecond's counter; never backwards.
  assert.ok(millisOf(id) >= before && millisOf(id) <= after + 1, `${millisOf(id)} within [${before}, ${after}]`);
});

test('100,000 ids in a row are unique and sort (as text) in the order they were made, across milliseconds and counter overflows', () => {
  const ids = Array.from({ length: 100_000 }, () => uuidv7());
  assert.equal(new Set(ids).size, ids.length);
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} before ${ids[i]}`);
});

test('a clock stepping back keeps the order: the id goes on from the last one', () => {
  const first = uuidv7();
  const second = uuidv7(millisOf(first) - 60_000);
  assert.ok(first < second, `${first} before ${second}`);
});

test('the random part differs between ids made in the same millisecond', () => {
  const ids = Array.from({ length: 1000 }, () => uuidv7());
  const tails = new Set(ids.map((id) => id.slice(19)));
  assert.equal(tails.size, ids.length);
});

/**
 * A copy of the generator of its own (the module imported again under another URL): the last two
 * tests move its clock years ahead, and the suite's other files share this process's generator.
 */
async function separateGenerator(): Promise<typeof uuidv7> {
  const url = `${new URL('../../src/http/uuid.ts', import.meta.url).href}?clock-ahead`;
  const module: typeof import('../../src/http/uuid.ts') = await import(url);
  assert.notEqual(module.uuidv7, uuidv7);
  return module.uuidv7;
}

test('a given timestamp is written as its 48 bits, big-endian', async () => {
  const uuidv7 = await separateGenerator();
  // Later than every id made so far, so the generator takes it as is.
  const future = Date.now() + 10 * 365 * 24 * 3600 * 1000;
  const id = uuidv7(future);
  assert.equal(millisOf(id), future);
  assert.equal(id.slice(0, 13).replace('-', ''), future.toString(16).padStart(12, '0'));
});

test('within one millisecond, more ids than the counter holds still sort in order (the stamp moves on by one)', async () => {
  const uuidv7 = await separateGenerator();
  const at = Date.now() + 20 * 365 * 24 * 3600 * 1000;
  const ids = Array.from({ length: 5000 }, () => uuidv7(at));
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} before ${ids[i]}`);
  assert.equal(millisOf(ids[0]!), at);
  assert.ok(millisOf(ids.at(-1)!) > at && millisOf(ids.at(-1)!) <= at + 3);
});

test('the clock of the generator the service uses was not moved ahead by the tests above', () => {
  assert.ok(millisOf(uuidv7()) <= Date.now() + 1);
});
