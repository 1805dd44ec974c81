/**
 * Migration 015 (fewer pages per refresh rotation) on a database that already holds sessions and
 * rotated refresh tokens: both are carried over (the tokens authenticate v4 requests, a rotated one
 * is still recognised as reused), and expired rows are still purged.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../../src/db/dialect.ts';
import * as m015 from '../../src/db/migrations/015_rotation_indexes.ts';
import type { Schema } from '../../src/db/schema.ts';
import { createSession, REFRESH_TOKEN_TTL_MS } from '../../src/oauth/sessions.ts';
import { assertOAuthError, newAccount, newApp, tokenRequest, tokensThroughPages } from '../helpers/oauth.ts';
import { freshDatabase, startServer } from '../helpers/server.ts';

async function hasIndex(db: Kysely<Schema>, name: string): Promise<boolean> {
  const query =
    dialectOf(db) === 'postgres'
      ? sql<{
          name: string;
        }>`select indexname as name from pg_indexes where schemaname = current_schema() and indexname = ${name}`
      : sql<{ name: string }>`select name from sqlite_master where type = 'index' and name = ${name}`;
  return (await query.execute(db)).rows.length > 0;
}

test('sessions and rotated tokens stored before migration 015 keep working after it, and expired ones are purged', async () => {
  const database = await freshDatabase();
  try {
    // A database as it was before 015 (its indexes undone) holding a session
    // refreshed once, so a rotated token too, and an expired session.
    const old = await startServer({ database });
    const app = await newApp(old, { scopes: ['common', 'users:read'] });
    const account = await newAccount(old);
    let first: { refresh_token: string };
    let current: { access_token: string; refresh_token: string };
    try {
      const db = old.app.database.db;
      // 015 alone is undone (what it changes: indexes) and run again below once the rows are
      // stored, so the later migrations, which the running code needs, stay in place.
      await m015.down(db);
      assert.equal(await hasIndex(db, 'rotated_refresh_tokens_session'), true);
      first = await tokensThroughPages(old, app, account, 'common users:read');
      const refreshed = await tokenRequest(old, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: first.refresh_token,
      });
      assert.equal(refreshed.status, 200, refreshed.text);
      current = refreshed.body;
      await createSession(
        db,
        { userId: account.userId, clientId: app.clientId, scope: 'common' },
        Date.now() - REFRESH_TOKEN_TTL_MS - 1000,
      );
      await m015.up(db);
    } finally {
      await old.close();
    }

    const server = await startServer({ database });
    try {
      const db = server.app.database.db;
      assert.equal(await hasIndex(db, 'sessions_refresh_expires_at'), false);
      assert.equal(await hasIndex(db, 'rotated_refresh_tokens_session'), false);
      assert.equal(await hasIndex(db, 'rotated_refresh_tokens_expires_at'), true);
      assert.equal(
        (await db.selectFrom('rotated_refresh_tokens').select('session_id').execute()).length,
        1,
        'the rotated token carried over',
      );

      const me = await server.request('GET', '/v4/user', {
        headers: { authorization: `Bearer ${current.access_token}` },
      });
      assert.equal(me.status, 200, me.text);
      // The token rotated away before the migration is still recognised: its reuse ends the session.
      const reuse = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: first.refresh_token,
      });
      assertOAuthError(reuse, 'invalid_grant');
      assert.match(reuse.body.error_description, /already used/);
      const ended = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: current.refresh_token,
      });
      assertOAuthError(ended, 'invalid_grant');
      // Its record outlives the session (no cascade any more) but no longer counts: the token is unknown.
      assert.equal((await db.selectFrom('rotated_refresh_tokens').select('session_id').execute()).length, 1);
      const again = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: first.refresh_token,
      });
      assertOAuthError(again, 'invalid_grant');
      assert.match(again.body.error_description, /Unknown or revoked/);

      const purged = await server.app.purger.runOnce();
      assert.equal(purged.sessions, 1, 'the expired session');
      assert.equal(
        (await server.app.purger.runOnce(Date.now() + REFRESH_TOKEN_TTL_MS + 1000)).rotated_refresh_tokens,
        1,
        'the rotated token, once expired',
      );
    } finally {
      await server.close();
    }
  } finally {
    await database.drop();
  }
});
