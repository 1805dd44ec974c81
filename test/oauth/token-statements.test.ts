/**
 * The token endpoint's statements are kept prepared on PostgreSQL (named statements, see
 * src/db/connection.ts). A migration run by another instance may change a table they read with
 * `*` while this one serves: the grants must go on answering, not fail with PostgreSQL's "cached
 * plan must not change result type". Runs on SQLite too, where better-sqlite3 prepares anew itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { signedInTokens, tokenRequest } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

describe('token grants across a change of the applications table', () => {
  let server: TestServer;
  before(async () => (server = await startServer()));
  after(() => server.close());

  test('refreshes keep answering 200 while a column is added and dropped', async () => {
    const { app, tokens } = await signedInTokens(server);
    let refreshToken = tokens.refresh_token;
    const refresh = async (when: string) => {
      const reply = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: refreshToken,
      });
      assert.equal(reply.status, 200, `${when}: ${reply.text}`);
      refreshToken = (reply.body as { refresh_token: string }).refresh_token;
    };
    for (let i = 0; i < 3; i++) await refresh('before');
    await sql`alter table applications add column note text`.execute(server.app.database.db);
    for (let i = 0; i < 3; i++) await refresh('after adding a column');
    await sql`alter table applications drop column note`.execute(server.app.database.db);
    for (let i = 0; i < 3; i++) await refresh('after dropping it');
  });

  // Several at once, so that more than one pooled connection has prepared the statements.
  test('concurrent grants on several connections keep answering after the change', async () => {
    const sessions = await Promise.all([1, 2, 3, 4].map(() => signedInTokens(server)));
    const refreshAll = () =>
      Promise.all(
        sessions.map(async (session) => {
          const reply = await tokenRequest(server, {
            grant_type: 'refresh_token',
            client_id: session.app.clientId,
            refresh_token: session.tokens.refresh_token,
          });
          assert.equal(reply.status, 200, reply.text);
          session.tokens = reply.body as typeof session.tokens;
        }),
      );
    await refreshAll();
    await sql`alter table applications add column note text`.execute(server.app.database.db);
    await refreshAll();
    await refreshAll();
  });
});
