/**
 * SQLite (issue 21): batches of writes run on the database's thread (src/db/sqlite-thread.ts), as one
 * transaction each, under the request thread's write lock, and survive the loss of that thread. The
 * same thread runs the background checkpoints: one thread, kept while either job needs it.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { type Database, openDatabase } from '../../src/db/connection.ts';
import { type CommitGroup, WriteLock } from '../../src/db/sqlite-driver.ts';
import {
  type BatchStatement,
  BatchWriteError,
  BatchWriterUnavailable,
  SqliteThread,
} from '../../src/db/sqlite-thread.ts';

const onSqlite = !process.env.DATABASE_URL?.startsWith('postgres');

/** One INSERT of `names` into the test table. */
const insert = (...names: string[]): BatchStatement => ({
  sql: `insert into items (name) values ${names.map(() => '(?)').join(', ')}`,
  parameters: names,
});

describe('the SQLite batch writer', { skip: !onSqlite && 'SQLite only' }, () => {
  let dir: string;
  let path: string;
  let database: Database;
  const names = async () =>
    (await sql<{ name: string }>`select name from items order by rowid`.execute(database.db)).rows.map(
      (row) => row.name,
    );

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-batch-'));
    path = join(dir, 'test.db');
    database = openDatabase({ kind: 'sqlite', path });
    await sql`create table items (name text primary key)`.execute(database.db);
  });
  after(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('writes every statement of a batch, seen by the request thread once it resolves', async () => {
    assert.equal(await database.writeBatch!([insert('a', 'b'), insert('c')]), true);
    assert.deepEqual(await names(), ['a', 'b', 'c']);
  });

  test('a statement that fails undoes the whole batch and answers SQLite’s code', async () => {
    const error = await database.writeBatch!([insert('d', 'e'), insert('f'), insert('a')]).catch((caught) => caught);
    assert.ok(error instanceof BatchWriteError, String(error));
    assert.equal(error.code, 'SQLITE_CONSTRAINT_PRIMARYKEY');
    assert.deepEqual(await names(), ['a', 'b', 'c']);
  });

  test('writes nothing when a SELECT of `unless` answers a row, checked in the same transaction', async () => {
    const lookup = (name: string): BatchStatement => ({
      sql: 'select name from items where name = ?',
      parameters: [name],
    });
    assert.equal(await database.writeBatch!([insert('u1'), insert('u2')], [lookup('nothing'), lookup('b')]), false);
    assert.deepEqual(await names(), ['a', 'b', 'c']);
    assert.equal(await database.writeBatch!([insert('u1')], [lookup('nothing')]), true);
    assert.deepEqual(await names(), ['a', 'b', 'c', 'u1']);
  });

  test('waits for the transactions of an open group commit and runs after them', async () => {
    // The transaction joins a group whose COMMIT comes at the end of the turn; the batch is asked for meanwhile.
    let written!: () => void;
    const inGroup = new Promise<void>((resolve) => (written = resolve));
    const transaction = database.db.transaction().execute(async (trx) => {
      await sql`insert into items (name) values ('g')`.execute(trx);
      written();
    });
    await inGroup;
    const batch = database.writeBatch!([insert('h')]);
    await Promise.all([transaction, batch]);
    assert.deepEqual((await names()).slice(-2), ['g', 'h']);
  });

  test('a write of the request thread asked for during a batch waits for it', async () => {
    const batch = database.writeBatch!([insert(...Array.from({ length: 500 }, (_, n) => `batch ${n}`))]);
    const lone = sql`insert into items (name) values ('after the batch')`.execute(database.db);
    await Promise.all([batch, lone]);
    assert.deepEqual((await names()).slice(-2), ['batch 499', 'after the batch']);
  });

  test('batches asked for together reach the thread at once: the second runs while this thread is busy', async () => {
    const first = database.writeBatch!([insert('together 1')]);
    const second = database.writeBatch!([insert('together 2')]);
    // Two turns: the lock is taken and both batches are sent; then this thread is held, reading
    // through a connection of its own, and never takes the first batch's answer meanwhile.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const check = new BetterSqlite3(path, { readonly: true });
    const count = check.prepare("select count(*) as n from items where name like 'together %'");
    const deadline = Date.now() + 10_000;
    let seen = 0;
    while (seen < 2 && Date.now() < deadline) seen = (count.get() as { n: number }).n;
    check.close();
    assert.equal(seen, 2);
    assert.deepEqual(await Promise.all([first, second]), [true, true]);
  });

  test('a batch asked for while a write of the request thread waits for the lock comes after that write', async () => {
    const first = database.writeBatch!([insert(...Array.from({ length: 500 }, (_, n) => `first ${n}`))]);
    const lone = sql`insert into items (name) values ('between')`.execute(database.db);
    await new Promise((resolve) => setImmediate(resolve));
    const second = database.writeBatch!([insert('second')]);
    await Promise.all([first, lone, second]);
    assert.deepEqual((await names()).slice(-3), ['first 499', 'between', 'second']);
  });

  test('a thread that dies fails its batch as not written, and the next batch gets a new thread', async () => {
    // A million objects as parameters: past the thread's heap limit (32 MiB), it runs out of memory and stops.
    const error = await database.writeBatch!([
      insert('lost'),
      { sql: 'select ?', parameters: Array.from({ length: 1_000_000 }, (_, n) => ({ n })) },
    ]).catch((caught) => caught);
    assert.ok(error instanceof BatchWriterUnavailable, String(error));
    assert.ok(!(await names()).includes('lost'));
    await database.writeBatch!([insert('after the loss')]);
    assert.equal((await names()).at(-1), 'after the loss');
  });

  test('closing lets a batch in flight finish, then refuses new ones', async () => {
    const dir2 = mkdtempSync(join(tmpdir(), 'svc-batch-'));
    const path2 = join(dir2, 'test.db');
    const closing = openDatabase({ kind: 'sqlite', path: path2 });
    await sql`create table items (name text primary key)`.execute(closing.db);
    const inFlight = closing.writeBatch!(
      Array.from({ length: 20 }, (_, chunk) => insert(...Array.from({ length: 50 }, (_, n) => `${chunk}/${n}`))),
    );
    const closed = closing.close();
    await inFlight;
    await closed;
    await assert.rejects(closing.writeBatch!([insert('too late')]), BatchWriterUnavailable);
    const check = new BetterSqlite3(path2, { readonly: true });
    assert.equal((check.prepare('select count(*) as n from items').get() as { n: number }).n, 1000);
    check.close();
    rmSync(dir2, { recursive: true, force: true });
  });
});

describe('one thread for batches and checkpoints', { skip: !onSqlite && 'SQLite only' }, () => {
  /** The worker threads this process has running (node:worker_threads announces each new one). */
  const running = new Set<Worker>();
  const track = (message: unknown) => {
    const { worker } = message as { worker: Worker };
    running.add(worker);
    worker.once('exit', () => running.delete(worker));
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const until = async (what: string, check: () => boolean, ms = 5000) => {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) assert.fail(`${what} within ${ms} ms`);
      await sleep(20);
    }
  };
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-thread-'));
    subscribe('worker_threads', track);
  });
  after(() => {
    unsubscribe('worker_threads', track);
    rmSync(dir, { recursive: true, force: true });
  });

  test('a batch runs on the checkpoints’ thread, which stays past the batches’ idle time while checkpoints are on', async () => {
    const path = join(dir, 'both.db');
    const database = openDatabase({ kind: 'sqlite', path }, { checkpointWorkerAfterWrites: 1, threadIdleMs: 100 });
    try {
      assert.equal(running.size, 0);
      // The first write turns the checkpoints on: their thread starts.
      await sql`create table items (name text primary key)`.execute(database.db);
      assert.equal(running.size, 1);
      const [thread] = running;
      assert.equal(await database.writeBatch!([insert('batched')]), true);
      assert.deepEqual([...running], [thread], 'the batch ran on the same thread');
      await sleep(400);
      assert.deepEqual([...running], [thread], 'the checkpoints keep the thread past the batches’ idle time');
      // ~300 pages, fewer than SQLite's automatic checkpoint waits for: only the thread copies them.
      const sizeBefore = statSync(path).size;
      const filler = 'x'.repeat(3000);
      assert.equal(await database.writeBatch!(Array.from({ length: 300 }, (_, n) => insert(`${n}-${filler}`))), true);
      await until(
        'the thread copies the batch’s pages into the database file',
        () => statSync(path).size > sizeBefore + 800_000,
      );
      assert.deepEqual([...running], [thread]);
    } finally {
      await database.close();
    }
    assert.equal(running.size, 0, 'closing stopped the thread');
  });

  test('a checkpoint takes the thread’s turn, not the write lock: a batch asked for meanwhile waits for it, the request thread’s writes do not', async () => {
    const path = join(dir, 'turns.db');
    const setup = new BetterSqlite3(path);
    setup.pragma('journal_mode = WAL');
    setup.exec('create table items (name text primary key)');
    setup.close();
    const lock = new WriteLock();
    const thread = new SqliteThread(
      path,
      { lock, group: { open: false } as CommitGroup },
      { autocheckpoint: () => 1000, restartFrom: () => Number.MAX_SAFE_INTEGER },
    );
    try {
      thread.checkpointEvery(60_000); // one now, the next a minute later
      assert.equal(lock.held, false, 'the checkpoint in flight leaves the write lock free');
      const batch = thread.write([insert('after the checkpoint')]);
      assert.equal(lock.held, false, 'the batch waits for the thread’s turn before it takes the lock');
      assert.equal(await batch, true);
      assert.equal(lock.held, false);
    } finally {
      await thread.stop();
    }
  });

  test('without checkpoints, the thread goes after the idle time and comes back with the next batch', async () => {
    const database = openDatabase(
      { kind: 'sqlite', path: join(dir, 'batches.db') },
      { checkpointWorkerAfterWrites: 1_000_000, threadIdleMs: 100 },
    );
    try {
      await sql`create table items (name text primary key)`.execute(database.db);
      assert.equal(running.size, 0);
      assert.equal(await database.writeBatch!([insert('one')]), true);
      assert.equal(running.size, 1);
      await until('the idle thread stops', () => running.size === 0);
      assert.equal(await database.writeBatch!([insert('two')]), true);
      assert.equal(running.size, 1);
      assert.deepEqual(
        (await sql<{ name: string }>`select name from items order by rowid`.execute(database.db)).rows.map(
          (row) => row.name,
        ),
        ['one', 'two'],
      );
    } finally {
      await database.close();
    }
  });
});

test('an in-memory SQLite database, and PostgreSQL, have no batch writer', async () => {
  const memory = openDatabase({ kind: 'sqlite', path: ':memory:' });
  assert.equal(memory.writeBatch, undefined);
  await memory.close();
  if (!onSqlite) {
    const postgres = openDatabase({ kind: 'postgres', url: process.env.DATABASE_URL! });
    assert.equal(postgres.writeBatch, undefined);
    await postgres.close();
  }
});
