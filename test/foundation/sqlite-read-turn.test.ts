/**
 * SQLite (issue 21): the reads of one event-loop turn share one read transaction on the reader
 * connection. A read sees every commit this process made before it, in the same turn or not; a
 * commit of another connection shows from the next turn; the turn's transaction ends with the
 * turn, so it holds back neither a checkpoint nor the database's close.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { type Database, openDatabase } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

const onSqlite = !process.env.DATABASE_URL?.startsWith('postgres');
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('reads share a read transaction per turn', { skip: !onSqlite && 'SQLite only' }, () => {
  let dir: string;
  let path: string;
  let database: Database;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-read-turn-'));
    path = join(dir, 'test.db');
    database = openDatabase({ kind: 'sqlite', path });
    await migrateToLatest(database.db);
  });
  after(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const versionOf = async (name: string) =>
    (await database.db.selectFrom('content_versions').select('version').where('name', '=', name).executeTakeFirst())
      ?.version;
  const rawVersionOf = async (name: string) =>
    (await database.selectRows('select version from content_versions where name = ?', [name]))[0] as
      | { version: number }
      | undefined;

  test("another connection's commit shows from the next turn, not within the turn that read before it", async () => {
    await database.db.insertInto('content_versions').values({ name: 'outside', version: 1 }).execute();
    await nextTurn();
    const other = new BetterSqlite3(path);
    try {
      other.pragma('busy_timeout = 5000');
      // Both reads and the other connection's write in one turn (awaiting a read takes microtasks
      // only): the second read is from the first's snapshot.
      assert.equal(await versionOf('outside'), 1);
      other.prepare("update content_versions set version = 2 where name = 'outside'").run();
      assert.equal((await rawVersionOf('outside'))?.version, 1, 'the same snapshot within the turn');
      await nextTurn();
      assert.equal(await versionOf('outside'), 2, 'the next turn sees the commit');
    } finally {
      other.close();
    }
  });

  test('a read after a lone write of this process sees it, in the same turn', async () => {
    await database.db.insertInto('content_versions').values({ name: 'lone', version: 1 }).execute();
    await nextTurn();
    assert.equal(await versionOf('lone'), 1);
    await database.db.updateTable('content_versions').set({ version: 2 }).where('name', '=', 'lone').execute();
    assert.equal(await versionOf('lone'), 2);
    assert.equal((await rawVersionOf('lone'))?.version, 2);
  });

  test('a read after a transaction of this process commits sees it, whichever turn its snapshot began in', async () => {
    await database.db.insertInto('content_versions').values({ name: 'grouped', version: 1 }).execute();
    await nextTurn();
    // The read takes the turn's snapshot before the transaction commits (at the end of its turn).
    assert.equal(await versionOf('grouped'), 1);
    const committed = database.db.transaction().execute(async (trx) => {
      await trx.updateTable('content_versions').set({ version: 2 }).where('name', '=', 'grouped').execute();
    });
    assert.equal(await versionOf('grouped'), 1, 'not committed yet');
    await committed;
    assert.equal(await versionOf('grouped'), 2);
  });

  test('a read after a batch written by the database thread sees it', async () => {
    assert.ok(database.writeBatch, 'a file database has its thread');
    await versionOf('batch');
    const written = await database.writeBatch([
      { sql: "insert into content_versions (name, version) values ('batch', 7)", parameters: [] },
    ]);
    assert.equal(written, true);
    assert.equal(await versionOf('batch'), 7);
  });

  test("the turn's read transaction ends with the turn: a checkpoint of another connection copies the whole log", async () => {
    await versionOf('lone');
    await nextTurn();
    const other = new BetterSqlite3(path);
    try {
      const [result] = other.pragma('wal_checkpoint(TRUNCATE)') as Array<{
        busy: number;
        log: number;
        checkpointed: number;
      }>;
      assert.equal(result!.busy, 0, 'no reader left in the log');
    } finally {
      other.close();
    }
  });

  test('closing the database while a turn is reading ends its transaction without an error', async () => {
    const second = openDatabase({ kind: 'sqlite', path });
    await second.selectRows('select count(*) from content_versions', []);
    await second.close();
    await nextTurn();
  });
});
