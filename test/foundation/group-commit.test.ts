/**
 * SQLite group commit (issue 21): the write transactions of one event-loop turn share one COMMIT,
 * each in a savepoint of its own. A transaction's commit resolves only once its writes are
 * committed (a read on the other connection sees them); one transaction's rollback leaves the
 * others' writes; a lone write arriving while a group is open is done once that group commits.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openDatabase } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

const onSqlite = !process.env.DATABASE_URL?.startsWith('postgres');

test('transactions of one turn commit together; each is durable when its commit resolves, and a rollback undoes only its own', {
  skip: !onSqlite && 'SQLite only',
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-group-commit-'));
  const database = openDatabase({ kind: 'sqlite', path: join(dir, 'test.db') });
  try {
    const { db } = database;
    await migrateToLatest(db);
    const names = async () =>
      (await db.selectFrom('content_versions').select('name').orderBy('name').execute()).map((row) => row.name);
    const write = (name: string, fail = false) =>
      db.transaction().execute(async (trx) => {
        await trx.insertInto('content_versions').values({ name, version: 1 }).execute();
        if (fail) throw new Error(`${name} rolled back on purpose`);
        // Read back inside the transaction: its own write is there.
        assert.ok(await trx.selectFrom('content_versions').select('name').where('name', '=', name).executeTakeFirst());
        return name;
      });
    const seen: string[][] = [];
    const results = await Promise.allSettled([
      write('a').then(async (name) => {
        seen.push(await names());
        return name;
      }),
      write('b', true),
      write('c').then(async (name) => {
        seen.push(await names());
        return name;
      }),
      db
        .insertInto('content_versions')
        .values({ name: 'lone', version: 2 })
        .execute()
        .then(async () => seen.push(await names())),
    ]);
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
    );
    // Whoever's commit resolved reads every write of the group from the read connection.
    for (const view of seen)
      for (const name of ['a', 'c', 'lone']) assert.ok(view.includes(name), `${name} in ${view}`);
    assert.deepEqual(
      (await names()).filter((name) => ['a', 'b', 'c', 'lone'].includes(name)),
      ['a', 'c', 'lone'],
    );
    // A later transaction opens a new group.
    await write('d');
    assert.ok((await names()).includes('d'));
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
