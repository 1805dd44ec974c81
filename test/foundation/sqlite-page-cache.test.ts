/**
 * SQLite (issue 21, memory): the writer keeps a small cache of unchanged pages between transactions
 * (4 MiB), yet a transaction's changed pages, up to 16 MiB, stay in memory until its commit instead
 * of being spilled to the log before it (which would write many of them twice).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/connection.ts';

const onSqlite = !process.env.DATABASE_URL?.startsWith('postgres');

test('a write transaction of ~10 MiB of pages writes nothing to the log before its commit', {
  skip: !onSqlite && 'SQLite only',
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-page-cache-'));
  const path = join(dir, 'test.db');
  const database = openDatabase({ kind: 'sqlite', path });
  const walBytes = () => statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  try {
    const { db } = database;
    assert.deepEqual((await sql<{ cache_size: number }>`pragma cache_size`.execute(db)).rows, [{ cache_size: -4096 }]);
    await sql`create table filler (id integer primary key, data blob not null)`.execute(db);
    const before = walBytes();
    let during = -1;
    await db.transaction().execute(async (trx) => {
      // 2,500 rows of 4 KiB: ~2,500 pages, past the 1,024 the cache keeps and below the 4,096 it may hold.
      for (let i = 0; i < 2500; i++)
        await sql`insert into filler (data) values (${Buffer.alloc(4000, i % 251)})`.execute(trx);
      during = walBytes();
    });
    assert.equal(during, before, 'no page was spilled to the log before the commit');
    assert.ok(walBytes() > before + 2500 * 4096, 'the commit wrote the pages');
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
