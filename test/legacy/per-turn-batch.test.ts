/**
 * batchPerTurn (src/legacy/documents/per-turn-batch.ts), which counts the downloads of a document
 * with one statement per batch: calls of one turn run once per key with their count, calls made
 * while their key's batch runs wait for it and then run together, each call gets the answer of its
 * own batch, and a failure reaches every caller of it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { batchPerTurn } from '../../src/legacy/documents/per-turn-batch.ts';

describe('batchPerTurn', () => {
  test('calls of one turn run once per key, with their count', async () => {
    const runs: Array<[string, number]> = [];
    const totals = new Map<string, number>();
    const add = batchPerTurn(async (key: string, count: number) => {
      runs.push([key, count]);
      const total = (totals.get(key) ?? 0) + count;
      totals.set(key, total);
      return total;
    });
    const answers = await Promise.all([add('a'), add('b'), add('a'), add('a')]);
    assert.deepEqual(runs, [
      ['a', 3],
      ['b', 1],
    ]);
    assert.deepEqual(answers, [3, 1, 3, 3], "each call is answered after its batch ran, with that batch's answer");
  });

  test("calls made while their key's batch runs wait for it, then run as one batch", async () => {
    const counts: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const add = batchPerTurn(async (_key: string, count: number) => {
      counts.push(count);
      if (counts.length === 1) await gate;
      return counts.length;
    });
    const first = [add('k'), add('k')];
    await nextTurn();
    await nextTurn();
    assert.deepEqual(counts, [2], 'the first batch is running');
    const second = [add('k')];
    await nextTurn();
    second.push(add('k'));
    await nextTurn();
    second.push(add('k'));
    await nextTurn();
    await nextTurn();
    assert.deepEqual(counts, [2], 'calls made over several turns while the first batch runs wait for it');
    release();
    assert.deepEqual(await Promise.all(first), [1, 1]);
    assert.deepEqual(await Promise.all(second), [2, 2, 2]);
    assert.deepEqual(counts, [2, 3]);
  });

  test('a running batch does not hold up another key', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const add = batchPerTurn(async (key: string, count: number) => {
      if (key === 'slow') await gate;
      return count;
    });
    const slow = add('slow');
    await nextTurn();
    assert.equal(await add('fast'), 1);
    release();
    assert.equal(await slow, 1);
  });

  test('a failing run rejects every call of its batch, and the next batch runs again', async () => {
    let fail = true;
    const add = batchPerTurn(async (key: string, count: number) => {
      if (fail) throw new Error(`cannot count ${count} for ${key}`);
      return count;
    });
    const failed = await Promise.allSettled([add('x'), add('x')]);
    assert.deepEqual(
      failed.map((result) => (result.status === 'rejected' ? (result.reason as Error).message : 'fulfilled')),
      ['cannot count 2 for x', 'cannot count 2 for x'],
    );
    fail = false;
    assert.equal(await add('x'), 1);
  });

  test('a run that throws synchronously rejects its calls instead of escaping', async () => {
    const add = batchPerTurn((key: string): Promise<number> => {
      throw new Error(`no ${key}`);
    });
    await assert.rejects(add('y'), /no y/);
  });
});
