/**
 * The operator console's gate (DESIGN "Operating a public service"): /admin is a 404 page to
 * anyone who is not a signed-in operator, whatever the method or body; an operator without
 * two-step or a passkey is told to set one up; an operator with two-step sees the console.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { makeOperator } from '../../src/accounts/lifecycle.ts';
import { totpCode } from '../../src/accounts/totp.ts';
import { FormClient, newAccount } from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

const SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';

describe('operator console gate', () => {
  let database: TestDatabase;
  let server: TestServer;
  before(async () => {
    database = await freshDatabase();
    server = await startServer({ database });
  });
  after(async () => {
    await server?.close();
    await database?.drop();
  });
  const operator = async (userId: string) =>
    makeOperator(
      {
        db: server.app.database.db,
        applicationSessions: server.app.applicationSessions,
        erasers: server.app.accountErasers,
        via: 'cli',
        actorId: null,
      },
      userId,
    );
  const signIn = async (account: { username: string; password: string }, totp = false) => {
    const client = new FormClient(server);
    const first = await client.submit('/account/sign-in', { username: account.username, password: account.password });
    assert.equal(first.status, 303, first.text);
    if (totp) {
      const code = await client.submit(first.location!, { code: totpCode(SECRET, Date.now()) });
      assert.equal(code.status, 303, code.text);
    }
    return client;
  };

  test('anyone but a signed-in operator gets the 404 page at every /admin address and method', async () => {
    const stranger = new FormClient(server);
    const person = await signIn(await newAccount(server));
    for (const client of [stranger, person]) {
      for (const path of ['/admin', '/admin/users', '/admin/nope', '/admin/users/x/y']) {
        const page = await client.fetch(path);
        assert.equal(page.status, 404, path);
        assert.match(page.text, /Page not found/);
        assert.match(page.headers.get('content-type') ?? '', /text\/html/);
      }
      const post = await client.fetch('/admin/users', { form: { lock_account: 'x', reason: 'r' } });
      assert.equal(post.status, 404);
      assert.match(post.text, /Page not found/);
    }
    // A stranger's console answer is the same as an unknown page's.
    const unknown = await stranger.fetch('/account/nope');
    assert.equal(
      (await stranger.fetch('/admin')).text.replace(/value="[^"]*"/g, ''),
      unknown.text.replace(/value="[^"]*"/g, ''),
    );
  });

  test('an operator without two-step or a passkey is told to set one up', async () => {
    const account = await newAccount(server);
    await operator(account.userId);
    const client = await signIn(account);
    const page = await client.fetch('/admin');
    assert.equal(page.status, 403);
    assert.match(page.text, /needs two-step verification or a passkey/);
  });

  test('an operator with two-step sees the console; a locked or demoted one does not', async () => {
    const account = await newAccount(server, { totpSecret: SECRET });
    await operator(account.userId);
    const client = await signIn(account, true);
    const page = await client.fetch('/admin');
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /Operator console/);
    assert.match(page.text, new RegExp(account.username));
    const unknown = await client.fetch('/admin/nope');
    assert.equal(unknown.status, 404);
    await server.app.database.db
      .updateTable('users')
      .set({ operator: 0 })
      .where('user_id', '=', account.userId)
      .execute();
    assert.equal((await client.fetch('/admin')).status, 404);
  });
});
