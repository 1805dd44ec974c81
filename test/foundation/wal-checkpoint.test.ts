/**
 * SQLite (issue 12): the write-ahead log is copied back into the database by a worker thread, not
 * by the commits of requests; the log still stays bounded when writes never pause, and closing
 * leaves a complete database file.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { type Database, openDatabase } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

const onSqlite = !process.env.DATABASE_URL?.startsWith('postgres');
const until = async (what: string, check: () => boolean, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`${what} within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

test('commits leave checkpoints to the worker, which copies the log back while nothing waits', {
  skip: !onSqlite && 'SQLite only',
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-wal-'));
  const path = join(dir, 'test.db');
  // The worker starts at the first write here (a server's, at its 256th).
  const database = openDatabase({ kind: 'sqlite', path }, { checkpointWorkerAfterWrites: 1 });
  try {
    const { db } = database;
    await migrateToLatest(db);
    const fileSize = () => statSync(path).size;
    const sizeBefore = fileSize();
    // ~300 pages: fewer than SQLite's automatic checkpoint waits for (1,000), so only the worker
    // copies them into the database file, and it does so while no commit happens.
    for (let batch = 0; batch < 6; batch++) {
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < 50; i++)
          await trx
            .insertInto('content_versions')
            .values({ name: `${batch}-${i}-${'x'.repeat(3000)}`, version: i })
            .execute();
      });
    }
    await until('the database file receives the log', () => fileSize() > sizeBefore + 800_000);
    const rows = await db.selectFrom('content_versions').select('name').where('name', 'like', '5-%').execute();
    assert.equal(rows.length, 50);
  } finally {
    await database.close();
  }
  // Closed: the log is folded in and removed, and the file alone holds every row.
  assert.equal(existsSync(`${path}-wal`), false);
  const check = new BetterSqlite3(path, { readonly: true });
  assert.equal(
    (check.prepare("select count(*) as n from content_versions where name like '%-%-x%'").get() as { n: number }).n,
    300,
  );
  check.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs `write` on a fresh database whose thread restarts the log from 1,000 pages (4 MiB; commits
 * checkpoint it only at 4,000), and answers the log file's largest length seen by `note()` (the
 * file never shrinks below its largest length, so that is what is measured).
 */
async function largestLog(
  write: (database: Database, note: () => void, path: string) => Promise<void>,
): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-wal-'));
  const path = join(dir, 'test.db');
  const database = openDatabase({ kind: 'sqlite', path }, { walBacklogFrames: 1000, checkpointWorkerAfterWrites: 1 });
  let largest = 0;
  try {
    await migrateToLatest(database.db);
    await write(
      database,
      () => (largest = Math.max(largest, existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0)),
      path,
    );
    return largest;
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('writes that never pause still keep the log bounded', { skip: !onSqlite && 'SQLite only' }, async () => {
  // ~120 MB of pages written back to back (rows of 100 KB), yielding to the event loop only every
  // twentieth transaction: restarted here, where it would otherwise reach ~120 MB.
  const largest = await largestLog(async ({ db }, note) => {
    const filler = 'y'.repeat(100_000);
    for (let batch = 0; batch < 120; batch++) {
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < 10; i++)
          await trx
            .insertInto('content_versions')
            .values({ name: `${batch}-${i}-${filler}`, version: i })
            .execute();
      });
      if (batch % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
      note();
    }
  });
  assert.ok(largest < 64 * 1024 * 1024, `the log reached ${largest} bytes`);
});

test('bulk writes beside steady reads restart the log at its restart length, not at the commits’ backstop', {
  skip: !onSqlite && 'SQLite only',
}, async () => {
  // Without a restart under the write lock, the log never started again here while reads went on (22 MB).
  const largest = await largestLog(async (database, note, path) => {
    let stop = false;
    // A reader that is nearly always inside a read (2 ms each, back to back), as under a steady
    // load of GETs: the log is never found without one, unless a checkpoint waits for it to end.
    const reader = new BetterSqlite3(path, { readonly: true });
    const reads = (async () => {
      while (!stop) {
        reader.exec('begin');
        reader.prepare('select count(*) from content_versions').get();
        await new Promise((resolve) => setTimeout(resolve, 2));
        reader.exec('commit');
      }
    })();
    // Small batches a millisecond apart: ~1,000 pages between two checkpoints (100 ms apart).
    const filler = 'z'.repeat(3000);
    const until = Date.now() + 3000;
    for (let batch = 0; Date.now() < until; batch++) {
      const names = Array.from({ length: 3 }, (_, i) => `${batch}-${i}-${filler}`);
      await database.writeBatch!([
        {
          sql: `insert into content_versions (name, version) values ${names.map(() => '(?, 1)').join(', ')}`,
          parameters: names,
        },
      ]);
      note();
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    stop = true;
    await reads;
    reader.close();
  });
  assert.ok(largest > 0);
  assert.ok(largest < 10 * 1024 * 1024, `the log reached ${largest} bytes`);
});

test('a database with few writes keeps the checkpoint in its commits and starts no worker', {
  skip: !onSqlite && 'SQLite only',
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-wal-'));
  const path = join(dir, 'test.db');
  const database = openDatabase({ kind: 'sqlite', path }, { checkpointWorkerAfterWrites: 1_000_000 });
  try {
    const { db } = database;
    await migrateToLatest(db);
    // The migrations' own pages out of the log first: only the writes below count toward its length.
    await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db);
    const sizeBefore = statSync(path).size;
    for (let batch = 0; batch < 6; batch++) {
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < 50; i++)
          await trx
            .insertInto('content_versions')
            .values({ name: `${batch}-${i}-${'x'.repeat(3000)}`, version: i })
            .execute();
      });
    }
    // The same ~300 pages the worker copies within moments in the test above stay in the log here.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.ok(statSync(path).size < sizeBefore + 800_000, 'no worker copied the log into the database file');
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
