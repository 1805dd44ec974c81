/**
 * Migration 015 drops the index of sessions by refresh-token expiry on a database that already
 * holds sessions: they are carried over as they were (their tokens refresh, authenticate v4
 * requests, end when revoked), and expired ones are still purged.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../../src/db/dialect.ts';
import * as m015 from '../../src/db/migrations/015_rotation_indexes.ts';
import type { Schema } from '../../src/db/schema.ts';
import { createSession, REFRESH_TOKEN_TTL_MS } from '../../src/oauth/sessions.ts';
import { assertOAuthError, newAccount, newApp, tokenRequest, tokensThroughPages } from '../helpers/oauth.ts';
import { freshDatabase, startServer } from '../helpers/server.ts';

async function hasIndex(db: Kysely<Schema>, name: string): Promise<boolean> {
  const query =
    dialectOf(db) === 'postgres'
      ? sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema() and indexname = ${name}`
      : sql<{ name: string }>`select name from sqlite_master where type = 'index' and name = ${name}`;
  return (await query.execute(db)).rows.length > 0;
}

test('sessions stored before migration 015 keep working after it, and expired ones are purged', async () => {
  const database = await freshDatabase();
  try {
    // A database as it was before 015: the index back and 015 not yet recorded, with sessions in it.
    const old = await startServer({ database });
    const app = await newApp(old, { scopes: ['common', 'users:read'] });
    const account = await newAccount(old);
    let live: { access_token: string; refresh_token: string };
    try {
      const db = old.app.database.db;
      await m015.down(db);
      await sql`delete from kysely_migration where name = ${'015_rotation_indexes'}`.execute(db);
      live = await tokensThroughPages(old, app, account, 'common users:read');
      await createSession(db, { userId: account.userId, clientId: app.clientId, scope: 'common' }, Date.now() - REFRESH_TOKEN_TTL_MS - 1000);
      assert.equal(await hasIndex(db, 'sessions_refresh_expires_at'), true);
    } finally {
      await old.close();
    }

    const server = await startServer({ database });
    try {
      const db = server.app.database.db;
      assert.equal(await hasIndex(db, 'sessions_refresh_expires_at'), false);
      assert.equal(await hasIndex(db, 'rotated_refresh_tokens_expires_at'), true);

      const me = await server.request('GET', '/v4/user', { headers: { authorization: `Bearer ${live.access_token}` } });
      assert.equal(me.status, 200, me.text);
      const refreshed = await tokenRequest(server, { grant_type: 'refresh_token', client_id: app.clientId, refresh_token: live.refresh_token });
      assert.equal(refreshed.status, 200, refreshed.text);
      const reuse = await tokenRequest(server, { grant_type: 'refresh_token', client_id: app.clientId, refresh_token: live.refresh_token });
      assertOAuthError(reuse, 'invalid_grant');

      assert.equal((await server.app.purger.runOnce()).sessions, 1);
      const left = await db.selectFrom('sessions').select((eb) => eb.fn.countAll<number>().as('n')).where('user_id', '=', account.userId).executeTakeFirstOrThrow();
      assert.equal(Number(left.n), 0, 'the expired session purged, the reused one ended');
    } finally {
      await server.close();
    }
  } finally {
    await database.drop();
  }
});
