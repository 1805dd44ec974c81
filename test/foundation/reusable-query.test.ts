/**
 * reusableQuery (src/db/reusable-query.ts): the hot reads compile once per shape and then only
 * swap values, so each shape must still answer exactly what a freshly built query answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../../src/db/dialect.ts';
import { reusableQuery } from '../../src/db/reusable-query.ts';
import type { Schema } from '../../src/db/schema.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

describe('reusableQuery', () => {
  let server: TestServer;
  let db: Kysely<Schema>;
  const ids = [
    '00000000-0000-4000-8000-00000000000a',
    '00000000-0000-4000-8000-00000000000b',
    '00000000-0000-4000-8000-00000000000c',
  ];
  before(async () => {
    server = await startServer();
    db = server.app.database.db;
    await db
      .insertInto('users')
      .values(ids.map((user_id, index) => ({ user_id, public_key: `key ${index}`, created_at: Date.now() })))
      .execute();
  });
  after(() => server.close());

  const usersAmong = reusableQuery(
    (kysely: Kysely<Schema>, { among, notKey }: { among: readonly string[]; notKey: string }) =>
      kysely
        .selectFrom('users')
        .select(['user_id', 'public_key'])
        .where('user_id', 'in', among)
        .where('public_key', '!=', notKey)
        .orderBy('user_id')
        .limit(10),
  );

  test('each call answers its own values, across list lengths and repeated shapes', async () => {
    for (const [among, notKey] of [
      [[ids[0]!], 'none'],
      [[ids[1]!], 'none'],
      [[ids[1]!], 'key 1'],
      [ids, 'key 0'],
      [[ids[2]!, ids[0]!], 'none'],
      [ids, 'none'],
    ] as const) {
      const expected = await db
        .selectFrom('users')
        .select(['user_id', 'public_key'])
        .where('user_id', 'in', among)
        .where('public_key', '!=', notKey)
        .orderBy('user_id')
        .execute();
      assert.deepEqual(await usersAmong(db, { among, notKey }), expected, `${among.length} ids, not ${notKey}`);
    }
  });

  test('it runs inside a transaction, where the transaction sees its own writes', async () => {
    const extra = '00000000-0000-4000-8000-00000000000d';
    await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('users').values({ user_id: extra, public_key: 'key 3', created_at: Date.now() }).execute();
        assert.deepEqual(await usersAmong(trx, { among: [extra], notKey: 'none' }), [
          { user_id: extra, public_key: 'key 3' },
        ]);
        throw new Error('roll back');
      })
      .catch(() => {});
    assert.deepEqual(await usersAmong(db, { among: [extra], notKey: 'none' }), []);
  });

  test('a query of several forms compiles each form apart and answers each with its own values', async () => {
    type Form = { order: 'asc' | 'desc'; withKey: boolean };
    const users = reusableQuery(
      (kysely: Kysely<Schema>, { among, key }: { among: readonly string[]; key: string }, form: Form) => {
        let query = kysely.selectFrom('users').select(['user_id', 'public_key']).where('user_id', 'in', among);
        if (form.withKey) query = query.where('public_key', '=', key);
        return query.orderBy('user_id', form.order);
      },
      { formKey: (form) => `${form.order}:${form.withKey}`, mayBeUnused: ['key'] },
    );
    for (const form of [
      { order: 'asc', withKey: false },
      { order: 'desc', withKey: false },
      { order: 'asc', withKey: true },
      { order: 'desc', withKey: false },
    ] as const) {
      for (const key of ['key 1', 'key 2']) {
        let expected = db.selectFrom('users').select(['user_id', 'public_key']).where('user_id', 'in', ids);
        if (form.withKey) expected = expected.where('public_key', '=', key);
        assert.deepEqual(
          await users(db, { among: ids, key }, form),
          await expected.orderBy('user_id', form.order).execute(),
          `${form.order} ${form.withKey} ${key}`,
        );
      }
    }
  });

  test('arrays: the same rows as arrays of column values, in the order of the select list', async () => {
    const objects = await usersAmong(db, { among: ids, notKey: 'key 1' });
    const arrays = await usersAmong.arrays(server.app.database, { among: ids, notKey: 'key 1' });
    assert.equal(objects.length, 2);
    assert.deepEqual(
      arrays,
      objects.map((row) => [row.user_id, row.public_key]),
    );
    // A bigint column arrives as a number on both databases, as in object rows.
    const created = reusableQuery((kysely: Kysely<Schema>, { id }: { id: string }) =>
      kysely.selectFrom('users').select(['created_at', 'user_id']).where('user_id', '=', id),
    );
    const [[createdAt, userId]] = (await created.arrays(server.app.database, { id: ids[0]! })) as [[unknown, unknown]];
    assert.equal(typeof createdAt, 'number');
    assert.equal(userId, ids[0]);
  });

  test('a query of bounded list lengths runs as a named statement in a transaction on PostgreSQL, with each call its own values', async () => {
    const insertUsers = reusableQuery(
      (kysely: Kysely<Schema>, { values }: { values: readonly string[] }) =>
        kysely.insertInto('users').values(values.map((user_id) => ({ user_id, public_key: 'bounded', created_at: 1 }))),
      { boundedLists: true },
    );
    const made = [
      '00000000-0000-4000-8000-0000000000e1',
      '00000000-0000-4000-8000-0000000000e2',
      '00000000-0000-4000-8000-0000000000e3',
      '00000000-0000-4000-8000-0000000000e4',
    ];
    const texts = await db.transaction().execute(async (trx) => {
      await insertUsers(trx, { values: made.slice(0, 2) });
      await insertUsers(trx, { values: made.slice(2) });
      if (dialectOf(db) !== 'postgres') return undefined;
      // The session's named statements: the transaction holds one connection, which prepared it.
      return (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(trx)).rows.map(
        (row) => row.statement,
      );
    });
    // Two rows of these three columns: a text no other statement of the suite prepares.
    if (texts)
      assert.ok(
        texts.includes('insert into "users" ("user_id", "public_key", "created_at") values ($1, $2, $3), ($4, $5, $6)'),
        `named statements: ${texts.join('; ')}`,
      );
    const stored = await db
      .selectFrom('users')
      .select(['user_id', 'public_key'])
      .where('user_id', 'in', made)
      .orderBy('user_id')
      .execute();
    assert.deepEqual(
      stored,
      made.map((user_id) => ({ user_id, public_key: 'bounded' })),
    );
  });

  test('on PostgreSQL a list of one value runs as a named statement, a longer list as an unnamed one', async () => {
    const usersSince = reusableQuery(
      (kysely: Kysely<Schema>, { among, since }: { among: readonly string[]; since: number }) =>
        kysely
          .selectFrom('users')
          .select('user_id')
          .where('user_id', 'in', among)
          .where('created_at', '>=', since)
          .orderBy('user_id'),
    );
    const { one, three, texts } = await db.transaction().execute(async (trx) => {
      const one = await usersSince(trx, { among: [ids[1]!], since: 0 });
      const three = await usersSince(trx, { among: ids, since: 0 });
      if (dialectOf(db) !== 'postgres') return { one, three, texts: undefined };
      // The session's named statements: the transaction holds one connection.
      const texts = (
        await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(trx)
      ).rows.map((row) => row.statement);
      return { one, three, texts };
    });
    assert.deepEqual(one, [{ user_id: ids[1] }]);
    assert.deepEqual(
      three,
      ids.map((user_id) => ({ user_id })),
    );
    if (texts) {
      const named = texts.filter(
        (text) =>
          text.startsWith('select "user_id" from "users" where "user_id" in (') && text.includes('"created_at" >='),
      );
      assert.deepEqual(
        named,
        ['select "user_id" from "users" where "user_id" in ($1) and "created_at" >= $2 order by "user_id"'],
        `named statements: ${texts.join('; ')}`,
      );
    }
  });

  test('on PostgreSQL a form planned per run (a substring filter) is never a named statement; the other forms are', async () => {
    const usersLike = reusableQuery(
      (kysely: Kysely<Schema>, { pattern }: { pattern: string }, form: 'like' | 'equal') =>
        kysely
          .selectFrom('users')
          .select('user_id')
          .where('public_key', form === 'like' ? 'like' : '=', pattern)
          .orderBy('user_id'),
      { formKey: (form) => form, plannedPerRun: (form) => form === 'like' },
    );
    const { like, equal, texts } = await db.transaction().execute(async (trx) => {
      const like = await usersLike(trx, { pattern: 'key %' }, 'like');
      const equal = await usersLike(trx, { pattern: 'key 2' }, 'equal');
      if (dialectOf(db) !== 'postgres') return { like, equal, texts: undefined };
      const texts = (
        await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(trx)
      ).rows.map((row) => row.statement);
      return { like, equal, texts };
    });
    assert.deepEqual(
      like,
      ids.map((user_id) => ({ user_id })),
    );
    assert.deepEqual(equal, [{ user_id: ids[2] }]);
    if (texts) {
      const mine = texts.filter((text) => text.startsWith('select "user_id" from "users" where "public_key"'));
      assert.deepEqual(
        mine,
        ['select "user_id" from "users" where "public_key" = $1 order by "user_id"'],
        `named statements: ${texts.join('; ')}`,
      );
    }
  });

  test('a parameter used for anything but its value is refused when the query is first built', async () => {
    const transformed = reusableQuery((kysely: Kysely<Schema>, { id }: { id: string }) =>
      kysely.selectFrom('users').select('user_id').where('user_id', '=', `${id}-suffix`),
    );
    await assert.rejects(transformed(db, { id: ids[0]! }), /a parameter was transformed or dropped/);
  });
});
