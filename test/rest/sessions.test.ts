/**
 * v4 Session class: a signed-in user's sessions (one per sign-in to an application), listed
 * without tokens; deleting one signs it out; /v4/session is the session of the token in use.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { listSecurityEvents } from '../../src/accounts/security-events.ts';
import { FormClient, tokenRequest } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { assertError, ISO_UTC, type SignedIn, signIn, UUID } from './fixtures/clients.ts';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

const SESSION_KEYS = [
  'accessTokenExpiration',
  'applicationId',
  'createdAt',
  'refreshTokenExpiration',
  'scopes',
  'sessionId',
];

async function sessions(client: SignedIn, query = '') {
  const reply = await client.call('GET', `/v4/sessions${query}`);
  assert.equal(reply.status, 200, reply.text);
  return reply;
}

async function currentSession(client: SignedIn) {
  const reply = await client.call('GET', '/v4/session');
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

function assertTokenRejected(reply: { status: number; headers: Headers; body: any; text: string }) {
  assertError(reply, 401, 'unauthorized');
  assert.match(reply.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
}

function assertNoToken(text: string, ...clients: SignedIn[]) {
  for (const client of clients) {
    assert.ok(!text.includes(client.accessToken), 'an access token appears in the answer');
    assert.ok(!text.includes(client.refreshToken), 'a refresh token appears in the answer');
  }
}

describe('listing and reading sessions', () => {
  let first: SignedIn;
  let second: SignedIn;
  let stranger: SignedIn;
  before(async () => {
    first = await signIn(server, 'common');
    second = await signIn(server, 'common users:read', first.account);
    stranger = await signIn(server, 'common');
  });

  test("lists the caller's sessions with exactly the DESIGN fields, and never a token", async () => {
    const reply = await sessions(first);
    assert.equal(reply.body.totalResults, 2);
    assert.equal(reply.body.page, 1);
    assert.equal(reply.body.pages, 1);
    const byApp = new Map(reply.body.results.map((s: any) => [s.applicationId, s]));
    assert.deepEqual([...byApp.keys()].sort(), [first.clientId, second.clientId].sort());
    for (const [client, scopes] of [
      [first, ['common']],
      [second, ['common', 'users:read']],
    ] as const) {
      const session: any = byApp.get(client.clientId);
      assert.deepEqual(Object.keys(session).sort(), SESSION_KEYS);
      assert.match(session.sessionId, UUID);
      assert.deepEqual([...session.scopes].sort(), scopes);
      for (const key of ['createdAt', 'accessTokenExpiration', 'refreshTokenExpiration'])
        assert.match(session[key], ISO_UTC, key);
      assert.ok(
        Math.abs(Date.parse(session.accessTokenExpiration) - client.tokens.access_token_expiration * 1000) < 1000,
      );
      assert.ok(
        Math.abs(Date.parse(session.refreshTokenExpiration) - client.tokens.refresh_token_expiration * 1000) < 1000,
      );
      assert.ok(Date.parse(session.createdAt) <= Date.now());
    }
    assertNoToken(reply.text, first, second);
    // The same list, seen through the other sign-in.
    assert.deepEqual((await sessions(second)).body, reply.body);
  });

  test('GET /v4/session is the session of the token in use', async () => {
    const listed = (await sessions(first)).body.results;
    const mine = await currentSession(first);
    assert.deepEqual(
      mine,
      listed.find((s: any) => s.applicationId === first.clientId),
    );
    const theirs = await currentSession(second);
    assert.equal(theirs.applicationId, second.clientId);
    assert.notEqual(theirs.sessionId, mine.sessionId);
    const raw = await first.call('GET', '/v4/session');
    assertNoToken(raw.text, first, second);
  });

  test("GET /v4/sessions/<id> answers one of the caller's sessions; an unknown id is 404", async () => {
    const mine = await currentSession(first);
    const reply = await second.call('GET', `/v4/sessions/${mine.sessionId}`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, mine);
    assertNoToken(reply.text, first, second);
    assertError(await first.call('GET', `/v4/sessions/${randomUUID()}`), 404, 'notFound');
    assertError(await first.call('GET', '/v4/sessions/not-a-uuid'), 404, 'notFound');
  });

  test('applicationId filters exactly', async () => {
    const filtered = (await sessions(first, `?applicationId=${second.clientId}`)).body;
    assert.equal(filtered.totalResults, 1);
    assert.equal(filtered.results[0].applicationId, second.clientId);
    assert.equal((await sessions(first, `?applicationId=${stranger.clientId}`)).body.totalResults, 0);
  });

  test("another user's sessions are not visible: not listed, 404 by id, and cannot be deleted", async () => {
    const strangers = (await sessions(stranger)).body;
    assert.equal(strangers.totalResults, 1);
    assert.equal(strangers.results[0].applicationId, stranger.clientId);
    const mine = await currentSession(first);
    assert.ok(!strangers.results.some((s: any) => s.sessionId === mine.sessionId));
    assertError(await stranger.call('GET', `/v4/sessions/${mine.sessionId}`), 404, 'notFound');
    assertError(await stranger.call('DELETE', `/v4/sessions/${mine.sessionId}`), 404, 'notFound');
    assertError(
      await stranger.call('DELETE', '/v4/sessions', { body: [{ sessionId: mine.sessionId }] }),
      404,
      'notFound',
    );
    assert.equal((await first.call('GET', '/v4/session')).status, 200);
    assert.equal((await sessions(first)).body.totalResults, 2);
  });

  test('a refresh keeps the session (same id, new expirations) and still shows no token', async () => {
    const before = await currentSession(second);
    const refreshed = await tokenRequest(server, {
      grant_type: 'refresh_token',
      client_id: second.clientId,
      refresh_token: second.refreshToken,
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    const after = await server.request('GET', '/v4/session', {
      headers: { authorization: `Bearer ${refreshed.body.access_token}` },
    });
    assert.equal(after.status, 200, after.text);
    assert.equal(after.body.sessionId, before.sessionId);
    assert.equal(after.body.createdAt, before.createdAt);
    assert.ok(Date.parse(after.body.accessTokenExpiration) >= Date.parse(before.accessTokenExpiration));
    assert.ok(!after.text.includes(refreshed.body.access_token) && !after.text.includes(refreshed.body.refresh_token));
    second = {
      ...second,
      accessToken: refreshed.body.access_token,
      refreshToken: refreshed.body.refresh_token,
    } as SignedIn;
  });

  test('sessions cannot be created or changed through the API (405 with Allow)', async () => {
    const mine = await currentSession(first);
    const post = await first.call('POST', '/v4/sessions', { body: { applicationId: first.clientId } });
    assertError(post, 405, 'methodNotAllowed');
    assert.match(post.headers.get('allow') ?? '', /GET/);
    assert.doesNotMatch(post.headers.get('allow') ?? '', /POST/);
    for (const method of ['PUT', 'PATCH']) {
      const reply = await first.call(method, `/v4/sessions/${mine.sessionId}`, { body: { scopes: ['common'] } });
      assertError(reply, 405, 'methodNotAllowed');
      assert.match(reply.headers.get('allow') ?? '', /DELETE/);
    }
    assert.deepEqual(await currentSession(first), mine);
  });

  test('a session whose refresh token has expired is no longer listed', async () => {
    const old = await signIn(server, 'common', stranger.account);
    const oldSession = await currentSession(old);
    assert.equal((await sessions(stranger)).body.totalResults, 2);
    await server.app.database.db
      .updateTable('sessions')
      .set({ refresh_expires_at: Date.now() - 1000 })
      .where('session_id', '=', oldSession.sessionId)
      .execute();
    const listed = (await sessions(stranger)).body;
    assert.equal(listed.totalResults, 1);
    assert.notEqual(listed.results[0].sessionId, oldSession.sessionId);
    assertError(await stranger.call('GET', `/v4/sessions/${oldSession.sessionId}`), 404, 'notFound');
  });

  test('without a token: 401 with WWW-Authenticate: Bearer', async () => {
    for (const [method, path] of [
      ['GET', '/v4/sessions'],
      ['GET', '/v4/session'],
      ['DELETE', '/v4/session'],
      ['DELETE', `/v4/sessions/${randomUUID()}`],
    ]) {
      const reply = await server.request(method!, path!);
      assertError(reply, 401, 'unauthorized');
      assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer realm="v4"/);
    }
  });
});

describe('ending sessions', () => {
  test('DELETE /v4/sessions/<id> ends that session: its access token is 401 and its refresh token invalid_grant', async () => {
    const keeper = await signIn(server, 'common');
    const ended = await signIn(server, 'common', keeper.account);
    const target = await currentSession(ended);
    const reply = await keeper.call('DELETE', `/v4/sessions/${target.sessionId}`);
    assert.equal(reply.status, 204, reply.text);
    assert.equal(reply.text, '');
    assertTokenRejected(await ended.call('GET', '/v4/sessions'));
    const refresh = await tokenRequest(server, {
      grant_type: 'refresh_token',
      client_id: ended.clientId,
      refresh_token: ended.refreshToken,
    });
    assert.equal(refresh.status, 400, refresh.text);
    assert.equal(refresh.body.error, 'invalid_grant');
    // The caller's own session goes on, and is the only one left.
    const left = (await sessions(keeper)).body;
    assert.equal(left.totalResults, 1);
    assert.equal(left.results[0].applicationId, keeper.clientId);
    assertError(await keeper.call('DELETE', `/v4/sessions/${target.sessionId}`), 404, 'notFound');
  });

  test('DELETE /v4/sessions/<id> records the session_ended event the account page records, and its tokens stop working', async () => {
    const keeper = await signIn(server, 'common');
    const viaApi = await signIn(server, 'common', keeper.account);
    const viaPage = await signIn(server, 'common', keeper.account);
    const [apiSession, pageSession] = [await currentSession(viaApi), await currentSession(viaPage)];

    const reply = await keeper.call('DELETE', `/v4/sessions/${apiSession.sessionId}`);
    assert.equal(reply.status, 204, reply.text);
    const browser = new FormClient(server);
    const { username, password } = keeper.account;
    assert.equal((await browser.submit('/account/sign-in', { username, password })).status, 303);
    const page = await browser.fetch('/account');
    assert.equal(page.status, 200, page.text);
    const ended = await browser.submitOn(page.text, { end_session: pageSession.sessionId }, /sessions$/);
    assert.equal(ended.status, 303, ended.text);

    const events = (await listSecurityEvents(server.app.database.db, { userId: keeper.account.userId })).filter(
      (event) => event.kind === 'session_ended',
    );
    assert.equal(events.length, 2, JSON.stringify(events));
    const fromApi = events.find((event) => event.details.session_id === apiSession.sessionId);
    const fromPage = events.find((event) => event.details.session_id === pageSession.sessionId);
    assert.ok(fromApi && fromPage, JSON.stringify(events));
    for (const [event, client] of [
      [fromApi, viaApi],
      [fromPage, viaPage],
    ] as const) {
      assert.equal(event.userId, keeper.account.userId);
      assert.equal(event.clientId, client.clientId);
      assert.equal(event.ip, '127.0.0.1');
    }
    // The same details, but for where it was asked.
    assert.deepEqual(Object.keys(fromApi.details).sort(), Object.keys(fromPage.details).sort());
    assert.equal(fromApi.details.page, 'api');
    assert.equal(fromPage.details.page, 'account');

    for (const client of [viaApi, viaPage]) {
      assertTokenRejected(await client.call('GET', '/v4/session'));
      const refresh = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: client.clientId,
        refresh_token: client.refreshToken,
      });
      assert.equal(refresh.body.error, 'invalid_grant', refresh.text);
    }
    assert.equal((await sessions(keeper)).body.totalResults, 1);
  });

  test('DELETE /v4/session ends the current session (204, no body) and leaves the others', async () => {
    const leaving = await signIn(server, 'common');
    const staying = await signIn(server, 'common', leaving.account);
    const reply = await leaving.call('DELETE', '/v4/session');
    assert.equal(reply.status, 204, reply.text);
    assert.equal(reply.text, '');
    assertTokenRejected(await leaving.call('GET', '/v4/session'));
    assertTokenRejected(await leaving.call('DELETE', '/v4/session'));
    const refresh = await tokenRequest(server, {
      grant_type: 'refresh_token',
      client_id: leaving.clientId,
      refresh_token: leaving.refreshToken,
    });
    assert.equal(refresh.body.error, 'invalid_grant');
    const left = (await sessions(staying)).body;
    assert.equal(left.totalResults, 1);
    assert.equal(left.results[0].applicationId, staying.clientId);
  });

  test('DELETE /v4/session works through X-Service-Token too', async () => {
    const client = await signIn(server, 'common');
    const reply = await server.request('DELETE', '/v4/session', { headers: { 'x-service-token': client.accessToken } });
    assert.equal(reply.status, 204, reply.text);
    assertTokenRejected(await client.call('GET', '/v4/sessions'));
  });

  test('bulk DELETE /v4/sessions ends every listed session; with an unknown id it ends none', async () => {
    const one = await signIn(server, 'common');
    const two = await signIn(server, 'common', one.account);
    const three = await signIn(server, 'common', one.account);
    const [a, b] = [await currentSession(two), await currentSession(three)];
    assertError(
      await one.call('DELETE', '/v4/sessions', { body: [{ sessionId: a.sessionId }, { sessionId: randomUUID() }] }),
      404,
      'notFound',
    );
    assert.equal((await sessions(one)).body.totalResults, 3);
    assert.equal((await two.call('GET', '/v4/session')).status, 200);
    const reply = await one.call('DELETE', '/v4/sessions', { body: [a, { sessionId: b.sessionId }] });
    assert.equal(reply.status, 204, reply.text);
    assertTokenRejected(await two.call('GET', '/v4/session'));
    assertTokenRejected(await three.call('GET', '/v4/session'));
    assert.equal((await sessions(one)).body.totalResults, 1);
  });
});
