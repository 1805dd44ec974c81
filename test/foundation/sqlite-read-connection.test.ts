/**
 * SQLite (issue 12): a read outside a transaction is answered while another caller's write
 * transaction is still open, from the last commit; a lone write waits for that transaction
 * instead of landing inside it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openDatabase } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

const onSqlite = !process.env.DATABASE_URL?.startsWith('postgres');

test('reads do not wait for an open write transaction, and lone writes do not join it', {
  skip: !onSqlite && 'SQLite only',
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-read-conn-'));
  const database = openDatabase({ kind: 'sqlite', path: join(dir, 'test.db') });
  try {
    const { db } = database;
    await migrateToLatest(db);
    const version = () => db.selectFrom('content_versions').selectAll().execute();
    const before = await version();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const transaction = db.transaction().execute(async (trx) => {
      await trx.insertInto('content_versions').values({ name: 'held', version: 1 }).execute();
      await held;
      throw new Error('rolled back on purpose');
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Answered while the transaction is open, without its uncommitted row.
    assert.deepEqual(
      await Promise.race([version(), new Promise((resolve) => setTimeout(() => resolve('waited'), 1000))]),
      before,
    );
    let loneWriteDone = false;
    const loneWrite = db
      .insertInto('content_versions')
      .values({ name: 'lone', version: 2 })
      .execute()
      .then(() => (loneWriteDone = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(loneWriteDone, false, 'a lone write waits for the open transaction');
    release();
    await assert.rejects(transaction, /rolled back on purpose/);
    await loneWrite;
    // The lone write survived the rollback: it did not run inside the transaction.
    const names = (await version()).map((row) => row.name);
    assert.ok(names.includes('lone'));
    assert.ok(!names.includes('held'));
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
