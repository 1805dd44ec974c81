/**
 * Bulk POSTs larger than one INSERT (the engine writes INSERT_CHUNK rows a statement and lets the
 * event loop run between two; on SQLite, new objects only are written by the batch writer's thread):
 * still all or nothing, answered in the order sent, and reads of other requests are answered while
 * one is being written.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { Database } from '../../src/db/connection.ts';
import { type BatchStatement, BatchWriterUnavailable } from '../../src/db/sqlite-thread.ts';
import { bearerAuth } from '../../src/http/bearer-auth.ts';
import { findAccessToken } from '../../src/oauth/sessions.ts';
import type { ClassDefinition } from '../../src/rest/definition.ts';
import { textProperty, uuidProperty } from '../../src/rest/properties.ts';
import { registerClasses } from '../../src/rest/routes.ts';
import { INSERT_CHUNK } from '../../src/rest/store.ts';
import { freshDatabase, startServer, type TestServer } from '../helpers/server.ts';
import { assertError, type SignedIn, signIn } from './fixtures/clients.ts';
import { createNotesTable, Note } from './fixtures/note.ts';

/** A class whose label is unique across the table, so an INSERT can fail on a constraint. */
const Tag: ClassDefinition = {
  name: 'Tag',
  path: '/tags',
  table: 'test_tags',
  id: { property: 'tagId', column: 'tag_id' },
  properties: {
    ownerId: uuidProperty('owner_id'),
    label: textProperty('label', { writable: true, required: true, minLength: 1, maxLength: 100 }),
  },
  sortable: ['label'],
  defaultSort: 'label',
  visible: (eb, caller) => eb('owner_id', '=', caller.userId),
  onCreate: (caller) => ({ owner_id: caller.userId }),
};

const onSqlite = !process.env.DATABASE_URL?.startsWith('postgres');

let server: TestServer;
let client: SignedIn;
/** POSTs between their handler's start and their answer, and GETs answered meanwhile. */
const progress = { postsInHandler: 0, getsAnsweredDuringPost: 0 };

async function serve(app: FastifyInstance): Promise<void> {
  await app.database.db.schema
    .createTable('test_tags')
    .addColumn('tag_id', 'text', (col) => col.primaryKey())
    .addColumn('owner_id', 'text', (col) => col.notNull())
    .addColumn('label', 'text', (col) => col.notNull().unique())
    .execute();
  await createNotesTable(app.database.db);
  await serveClasses(app);
}

async function serveClasses(app: FastifyInstance): Promise<void> {
  await app.register(
    async (api) => {
      const { db } = app.database;
      await api.register(bearerAuth, { lookup: (token, now) => findAccessToken(db, token, now) });
      api.addHook('preHandler', async (request) => {
        if (request.method === 'POST') progress.postsInHandler++;
      });
      api.addHook('onSend', async (request) => {
        if (request.method === 'POST') progress.postsInHandler--;
        else if (request.method === 'GET' && progress.postsInHandler > 0) progress.getsAnsweredDuringPost++;
      });
      await registerClasses(api, [Tag, Note]);
    },
    { prefix: '/v4' },
  );
}

before(async () => {
  server = await startServer({ beforeListen: serve });
  client = await signIn(server, 'common users:update');
});
after(() => server.close());

async function tagCount(): Promise<number> {
  const reply = await client.call('GET', '/v4/tags?pageSize=1');
  assert.equal(reply.status, 200, reply.text);
  return reply.body.totalResults;
}

describe('a bulk POST of more objects than one INSERT holds', () => {
  test('creates every object, answered in the order sent, with the ids given', async () => {
    const items = Array.from({ length: INSERT_CHUNK * 2 + 3 }, (_, n) => ({
      label: `ordered ${n}`,
      ...(n % 2 === 0 && { tagId: randomUUID() }),
    }));
    const reply = await client.call('POST', '/v4/tags', { body: items });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(
      reply.body.created.map((tag: any) => tag.label),
      items.map((item) => item.label),
    );
    for (const [n, item] of items.entries()) if (item.tagId) assert.equal(reply.body.created[n].tagId, item.tagId);
    assert.deepEqual(reply.body.updated, []);
  });

  test('an object of the last INSERT breaking a unique constraint is 409 and none of the earlier INSERTs is kept', async () => {
    const before = await tagCount();
    const items = Array.from({ length: INSERT_CHUNK * 3 + 7 }, (_, n) => ({ label: `all or nothing ${n}` }));
    items.push({ label: 'all or nothing 0' });
    assertError(await client.call('POST', '/v4/tags', { body: items }), 409, 'conflict');
    assert.equal(await tagCount(), before);
  });

  test('creates and an update (its id in upper case) in one POST: each answered in created or updated', async () => {
    const [first] = (await client.call('POST', '/v4/tags', { body: { label: 'to update' } })).body.created;
    const items: object[] = Array.from({ length: INSERT_CHUNK + 5 }, (_, n) => ({ label: `mixed ${n}` }));
    items.push({ tagId: first.tagId.toUpperCase(), label: 'updated' });
    const reply = await client.call('POST', '/v4/tags', { body: items });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.created.length, INSERT_CHUNK + 5);
    assert.deepEqual(reply.body.updated, [{ tagId: first.tagId, ownerId: client.account.userId, label: 'updated' }]);
  });

  // A multi-row INSERT keeps a statement journal to undo itself alone (the 409 above relies on it);
  // past 64 KiB SQLite spilled it to a temporary file, a write call per page of every chunk.
  test('on SQLite the writer keeps statement journals in memory', {
    skip: process.env.DATABASE_URL?.startsWith('postgres') && 'SQLite only',
  }, async () => {
    const { rows } = await server.app.database.db
      .transaction()
      .execute((trx) => sql<{ temp_store: number }>`pragma temp_store`.execute(trx));
    assert.equal(rows[0]?.temp_store, 2, 'temp_store = MEMORY');
  });

  // Where SQLite's statements run on the request thread (without the batch writer's thread), this
  // checks that the POST yields between INSERTs. On PostgreSQL every statement is an asynchronous
  // round trip anyway, and the POST can finish before any GET does (it did once in CI), so there it
  // would test timing, not the yield.
  test('reads of other requests are answered while it is being written', {
    skip: process.env.DATABASE_URL?.startsWith('postgres') && 'SQLite only: see above',
  }, async () => {
    const [note] = (await client.call('POST', '/v4/notes', { body: { text: 'read me' } })).body.created;
    const spy = withWriteBatch(() => async () => {
      throw new BatchWriterUnavailable('test: the request thread writes');
    });
    progress.getsAnsweredDuringPost = 0;
    let posting = true;
    const bulk = client
      .call('POST', '/v4/notes', { body: Array.from({ length: 1000 }, (_, n) => ({ text: `bulk ${n}` })) })
      .finally(() => (posting = false));
    const reads = Array.from({ length: 4 }, async () => {
      while (posting) {
        const reply = await client.call('GET', `/v4/notes/${note.noteId}`);
        assert.equal(reply.status, 200, reply.text);
      }
    });
    const reply = await bulk;
    await Promise.all(reads);
    spy.restore();
    assert.equal(spy.calls, 1);
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.created.length, 1000);
    assert.ok(progress.getsAnsweredDuringPost > 0, 'no GET was answered while the POST was being written');
  });
});

/** Replaces the server's Database.writeBatch for one test, counting its calls. */
function withWriteBatch(replace: (original: NonNullable<Database['writeBatch']>) => Database['writeBatch']): {
  calls: number;
  restore: () => void;
} {
  const database = server.app.database;
  const original = database.writeBatch!;
  const replacement = replace(original.bind(database))!;
  const spy = {
    calls: 0,
    restore: () => {
      database.writeBatch = original;
    },
  };
  database.writeBatch = (statements, unless) => {
    spy.calls++;
    return replacement(statements, unless);
  };
  return spy;
}

describe('on SQLite, a bulk POST of new objects through the batch writer thread', {
  skip: !onSqlite && 'SQLite only: PostgreSQL has no batch writer',
}, () => {
  test('writes them there, in one batch, and answers them as sent', async () => {
    const spy = withWriteBatch((original) => original);
    try {
      const items = Array.from({ length: INSERT_CHUNK * 2 + 1 }, (_, n) => ({
        label: `threaded ${n}`,
        ...(n === 7 && { tagId: randomUUID() }),
      }));
      const reply = await client.call('POST', '/v4/tags', { body: items });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(spy.calls, 1);
      assert.deepEqual(
        reply.body.created.map((tag: any) => tag.label),
        items.map((item) => item.label),
      );
      assert.equal(reply.body.created[7].tagId, items[7]!.tagId);
      const stored = await client.call('GET', `/v4/tags/${reply.body.created[100].tagId}`);
      assert.deepEqual(stored.body, reply.body.created[100]);
    } finally {
      spy.restore();
    }
  });

  test('its last object breaking a unique constraint is 409, and nothing is kept', async () => {
    const spy = withWriteBatch((original) => original);
    try {
      const before = await tagCount();
      const items = Array.from({ length: INSERT_CHUNK * 5 }, (_, n) => ({ label: `threaded conflict ${n}` }));
      items.push({ label: 'threaded conflict 3' });
      assertError(await client.call('POST', '/v4/tags', { body: items }), 409, 'conflict');
      assert.equal(spy.calls, 1);
      assert.equal(await tagCount(), before);
    } finally {
      spy.restore();
    }
  });

  test('an id that exists: the batch writes nothing, and the request thread answers it as updated', async () => {
    const [existing] = (await client.call('POST', '/v4/tags', { body: { label: 'exists already' } })).body.created;
    const spy = withWriteBatch((original) => original);
    try {
      const before = await tagCount();
      const items: object[] = Array.from({ length: INSERT_CHUNK * 2 }, (_, n) => ({ label: `beside an update ${n}` }));
      items.push({ tagId: existing.tagId, label: 'exists, updated' });
      const reply = await client.call('POST', '/v4/tags', { body: items });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(spy.calls, 1);
      assert.equal(reply.body.created.length, INSERT_CHUNK * 2);
      assert.deepEqual(reply.body.updated, [
        { tagId: existing.tagId, ownerId: client.account.userId, label: 'exists, updated' },
      ]);
      assert.equal(await tagCount(), before + INSERT_CHUNK * 2);
    } finally {
      spy.restore();
    }
  });

  test('reads of other requests are answered while its batch waits for the database', async () => {
    const [note] = (await client.call('POST', '/v4/notes', { body: { text: 'read me too' } })).body.created;
    // Another connection holds SQLite's write lock: the batch's BEGIN IMMEDIATE waits for it on
    // the batch writer's thread (busy_timeout), as it would for a slow commit.
    const other = new BetterSqlite3((server.config.database as { path: string }).path);
    other.exec('begin immediate');
    try {
      progress.postsInHandler = 0;
      progress.getsAnsweredDuringPost = 0;
      let posted = false;
      const bulk = client
        .call('POST', '/v4/notes', {
          body: Array.from({ length: INSERT_CHUNK * 2 }, (_, n) => ({ text: `waiting ${n}` })),
        })
        .finally(() => (posted = true));
      while (progress.postsInHandler === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      for (let n = 0; n < 5; n++) {
        const reply = await client.call('GET', `/v4/notes/${note.noteId}`);
        assert.equal(reply.status, 200, reply.text);
      }
      assert.equal(posted, false, 'the POST was answered while the database was locked');
      assert.equal(progress.getsAnsweredDuringPost, 5);
      other.exec('commit');
      const reply = await bulk;
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.created.length, INSERT_CHUNK * 2);
    } finally {
      if (other.inTransaction) other.exec('rollback');
      other.close();
    }
  });

  test('an update that leaves out a required property (which only a create needs) is answered as updated', async () => {
    const [existing] = (await client.call('POST', '/v4/tags', { body: { label: 'kept label' } })).body.created;
    const items: object[] = Array.from({ length: INSERT_CHUNK + 1 }, (_, n) => ({
      label: `beside a partial update ${n}`,
    }));
    items.push({ tagId: existing.tagId });
    const reply = await client.call('POST', '/v4/tags', { body: items });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.created.length, INSERT_CHUNK + 1);
    assert.deepEqual(reply.body.updated, [existing]);
  });

  test('with the thread unavailable, the request thread writes them and answers the same', async () => {
    const spy = withWriteBatch(() => async () => {
      throw new BatchWriterUnavailable('test: no thread');
    });
    try {
      const items = Array.from({ length: INSERT_CHUNK + 1 }, (_, n) => ({ label: `fallback ${n}` }));
      const reply = await client.call('POST', '/v4/tags', { body: items });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(spy.calls, 1);
      assert.equal(reply.body.created.length, items.length);
      const stored = await client.call('GET', `/v4/tags/${reply.body.created[INSERT_CHUNK].tagId}`);
      assert.equal(stored.body.label, `fallback ${INSERT_CHUNK}`);
    } finally {
      spy.restore();
    }
  });

  test('an id another request creates just before the batch runs: the batch writes nothing, and that one is answered as updated', async () => {
    const racedId = randomUUID();
    const spy = withWriteBatch(
      (original) => async (statements: readonly BatchStatement[], unless?: readonly BatchStatement[]) => {
        // Another request creates one of the ids first.
        const raced = await client.call('POST', '/v4/tags', { body: { tagId: racedId, label: 'created meanwhile' } });
        assert.equal(raced.status, 200, raced.text);
        return original(statements, unless);
      },
    );
    try {
      const before = await tagCount();
      const items = Array.from({ length: INSERT_CHUNK + 1 }, (_, n) => ({
        label: `raced ${n}`,
        ...(n === 5 && { tagId: racedId }),
      }));
      const reply = await client.call('POST', '/v4/tags', { body: items });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(spy.calls, 1);
      assert.equal(reply.body.created.length, INSERT_CHUNK);
      assert.deepEqual(reply.body.updated, [{ tagId: racedId, ownerId: client.account.userId, label: 'raced 5' }]);
      assert.equal(await tagCount(), before + INSERT_CHUNK + 1);
    } finally {
      spy.restore();
    }
  });
});

test('closing the server while a bulk POST is being written answers it first, with every object kept', async () => {
  const database = await freshDatabase();
  const closing = await startServer({ database, beforeListen: serve });
  let reopened: TestServer | undefined;
  try {
    const caller = await signIn(closing, 'common users:update');
    progress.postsInHandler = 0;
    const posted = caller.call('POST', '/v4/notes', {
      body: Array.from({ length: 1000 }, (_, n) => ({ text: `closing ${n}` })),
    });
    while (progress.postsInHandler === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    const closed = closing.close();
    const reply = await posted;
    await closed;
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.created.length, 1000);
    reopened = await startServer({ database });
    const { rows } = await sql<{ n: number }>`select count(*) as n from test_notes where body like 'closing %'`.execute(
      reopened.app.database.db,
    );
    assert.equal(Number(rows[0]!.n), 1000);
  } finally {
    await reopened?.close();
    await database.drop();
  }
});
