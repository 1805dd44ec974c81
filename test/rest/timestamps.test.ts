/** isoFromMillis (src/rest/properties.ts) writes exactly what Date#toISOString writes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isoFromMillis } from '../../src/rest/properties.ts';

test('isoFromMillis equals toISOString: day and year edges, negative and six-digit years, fractions, random values', () => {
  const values = [
    0,
    1,
    -1,
    999,
    86_399_999,
    86_400_000,
    -86_400_001,
    Date.UTC(2024, 1, 29, 23, 59, 59, 999),
    253402300799999,
    253402300800000,
    -62198755200001,
    8.64e15,
    -8.64e15,
    1.5,
    -0.5,
  ];
  for (let n = 0; n < 20_000; n++) values.push(Math.floor((Math.random() - 0.3) * 4e12));
  // Consecutive values of one day, as a page of rows gives them, and a return to an earlier day.
  for (let n = 0; n < 1000; n++) values.push(1_732_400_000_000 + n * 37_003, 1_700_000_000_000);
  for (const ms of values) assert.equal(isoFromMillis(ms), new Date(ms).toISOString(), String(ms));
});
