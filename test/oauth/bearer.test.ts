/**
 * Bearer tokens on the v4 API (DESIGN "v4 login", docs/decisions/0062): where the
 * token may come from, the 401/403 answers and their WWW-Authenticate challenges, sign-out, and
 * the v4 rate limit per user and application.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify from 'fastify';
import { type BearerAuthOptions, bearerAuth } from '../../src/http/bearer-auth.ts';
import { installErrorModel } from '../../src/http/error-handler.ts';
import { newAccount, newApp, signedInTokens, tokenRequest, tokensThroughPages } from '../helpers/oauth.ts';
import { freshDatabase, type Reply, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function assertError(reply: Reply, status: number, code: string) {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.body.code, code, reply.text);
  assert.equal(typeof reply.body.message, 'string');
  assert.ok(reply.body.message.length > 0);
}

function assertInvalidToken(reply: Reply) {
  assertError(reply, 401, 'unauthorized');
  const challenge = reply.headers.get('www-authenticate') ?? '';
  assert.match(challenge, /^Bearer /);
  assert.match(challenge, /error="invalid_token"/);
}

describe('bearer tokens on GET /v4/user', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('a token in Authorization: Bearer identifies the user', async () => {
    const { account, tokens } = await signedInTokens(server);
    const reply = await server.request('GET', '/v4/user', { headers: bearer(tokens.access_token) });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.userId, account.userId);
    assert.equal(reply.body.username, account.username);
  });

  test('the Bearer scheme name is case-insensitive', async () => {
    const { account, tokens } = await signedInTokens(server);
    const reply = await server.request('GET', '/v4/user', {
      headers: { authorization: `bearer ${tokens.access_token}` },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.userId, account.userId);
  });

  test('a token in X-Service-Token identifies the user', async () => {
    const { account, tokens } = await signedInTokens(server);
    const reply = await server.request('GET', '/v4/user', { headers: { 'x-service-token': tokens.access_token } });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.userId, account.userId);
    assert.equal(reply.body.username, account.username);
  });

  test('no token is 401 with a Bearer challenge that names no error', async () => {
    const reply = await server.request('GET', '/v4/user');
    assertError(reply, 401, 'unauthorized');
    const challenge = reply.headers.get('www-authenticate');
    assert.equal(challenge, 'Bearer realm="v4"');
  });

  test('an empty X-Service-Token counts as no token', async () => {
    const reply = await server.request('GET', '/v4/user', { headers: { 'x-service-token': '' } });
    assertError(reply, 401, 'unauthorized');
    assert.equal(reply.headers.get('www-authenticate'), 'Bearer realm="v4"');
  });

  test('an unknown token is 401 invalid_token, in either header', async () => {
    assertInvalidToken(await server.request('GET', '/v4/user', { headers: bearer('not-a-real-token') }));
    assertInvalidToken(await server.request('GET', '/v4/user', { headers: { 'x-service-token': 'not-a-real-token' } }));
  });

  test('an Authorization header of another scheme is 401 invalid_token', async () => {
    const { tokens } = await signedInTokens(server);
    const basic = `Basic ${Buffer.from(`user:${tokens.access_token}`).toString('base64')}`;
    assertInvalidToken(await server.request('GET', '/v4/user', { headers: { authorization: basic } }));
  });

  test('a refresh token is not an access token', async () => {
    const { tokens } = await signedInTokens(server);
    assertInvalidToken(await server.request('GET', '/v4/user', { headers: bearer(tokens.refresh_token) }));
  });

  test('an expired access token is 401 invalid_token until refreshed', async () => {
    const { app, account, tokens } = await signedInTokens(server);
    const updated = await server.app.database.db
      .updateTable('sessions')
      .set({ access_expires_at: Date.now() - 1000 })
      .where('user_id', '=', account.userId)
      .executeTakeFirst();
    assert.equal(updated.numUpdatedRows, 1n);

    assertInvalidToken(await server.request('GET', '/v4/user', { headers: bearer(tokens.access_token) }));
    assertInvalidToken(
      await server.request('GET', '/v4/user', { headers: { 'x-service-token': tokens.access_token } }),
    );

    const refreshed = await tokenRequest(server, {
      grant_type: 'refresh_token',
      client_id: app.clientId,
      refresh_token: tokens.refresh_token,
      scope: 'common users:read',
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    const reply = await server.request('GET', '/v4/user', { headers: bearer(refreshed.body.access_token) });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.userId, account.userId);
  });

  test('a token without users:read is 403 insufficient_scope naming the missing scope', async () => {
    const { tokens } = await signedInTokens(server, 'common');
    const reply = await server.request('GET', '/v4/user', { headers: bearer(tokens.access_token) });
    assertError(reply, 403, 'forbidden');
    assert.deepEqual(reply.body.details, { missingScopes: ['users:read'] });
    const challenge = reply.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^Bearer /);
    assert.match(challenge, /error="insufficient_scope"/);
    assert.match(challenge, /scope="users:read"/);
    // The same token is valid: it can still read its own session.
    const session = await server.request('GET', '/v4/session', { headers: bearer(tokens.access_token) });
    assert.equal(session.status, 200, session.text);
    assert.deepEqual(session.body.scopes, ['common']);
    assert.equal(typeof session.body.sessionId, 'string');
  });

  test('DELETE /v4/session signs out: 204, then the access token and the refresh token are refused', async () => {
    const { app, account, tokens } = await signedInTokens(server);
    const other = await tokensThroughPages(server, app, account);

    const signOut = await server.request('DELETE', '/v4/session', { headers: bearer(tokens.access_token) });
    assert.equal(signOut.status, 204, signOut.text);
    assert.equal(signOut.text, '');

    assertInvalidToken(await server.request('GET', '/v4/user', { headers: bearer(tokens.access_token) }));
    assertInvalidToken(await server.request('DELETE', '/v4/session', { headers: bearer(tokens.access_token) }));
    const refreshed = await tokenRequest(server, {
      grant_type: 'refresh_token',
      client_id: app.clientId,
      refresh_token: tokens.refresh_token,
      scope: 'common users:read',
    });
    assert.equal(refreshed.status, 400, refreshed.text);
    assert.equal(refreshed.body.error, 'invalid_grant');

    // Only that session ended: the user's other sign-in still works.
    const still = await server.request('GET', '/v4/user', { headers: bearer(other.access_token) });
    assert.equal(still.status, 200, still.text);
    assert.equal(still.body.userId, account.userId);
  });

  test('DELETE /v4/session without a token is 401', async () => {
    const reply = await server.request('DELETE', '/v4/session');
    assertError(reply, 401, 'unauthorized');
    assert.equal(reply.headers.get('www-authenticate'), 'Bearer realm="v4"');
  });
});

describe('v4 rate limit (RATE_LIMIT_V4) per user and application', () => {
  const LIMIT = 3;
  let database: TestDatabase;
  /** Signs people in: no limit, so its OAuth endpoints are not limited either. */
  let issuer: TestServer;
  /** Shares the database, so it accepts the issuer's tokens; counts in its own memory. */
  let limited: TestServer;

  before(async () => {
    database = await freshDatabase();
    issuer = await startServer({ database });
    limited = await startServer({ database, env: { RATE_LIMIT_V4: String(LIMIT) } });
  });
  after(async () => {
    await limited?.close();
    await issuer?.close();
    await database?.drop();
  });

  const getUser = (token: string) => limited.request('GET', '/v4/user', { headers: bearer(token) });

  test('the N+1th request of a user in an application is 429 with Retry-After and X-RateLimit-*, while others go on', async () => {
    const app = await newApp(issuer, { scopes: ['common', 'users:read'] });
    const otherApp = await newApp(issuer, { scopes: ['common', 'users:read'] });
    const alice = await newAccount(issuer);
    const bob = await newAccount(issuer);
    const aliceTokens = await tokensThroughPages(issuer, app, alice);
    const aliceSecondSignIn = await tokensThroughPages(issuer, app, alice);
    const aliceInOtherApp = await tokensThroughPages(issuer, otherApp, alice);
    const bobTokens = await tokensThroughPages(issuer, app, bob);

    for (let i = 1; i <= LIMIT; i++) {
      const reply = await getUser(aliceTokens.access_token);
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.headers.get('x-ratelimit-limit'), String(LIMIT));
      assert.equal(reply.headers.get('x-ratelimit-remaining'), String(LIMIT - i));
    }

    const refused = await getUser(aliceTokens.access_token);
    assertError(refused, 429, 'tooManyRequests');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(
      Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
      `Retry-After ${refused.headers.get('retry-after')}`,
    );
    assert.equal(refused.headers.get('x-ratelimit-limit'), String(LIMIT));
    assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
    const reset = Number(refused.headers.get('x-ratelimit-reset'));
    assert.ok(
      Number.isInteger(reset) && reset >= 0 && reset <= 60,
      `X-RateLimit-Reset ${refused.headers.get('x-ratelimit-reset')}`,
    );

    // The key is the user and the application, not the token: another sign-in of the same
    // user to the same application shares the count, and X-Service-Token counts the same.
    assert.equal((await getUser(aliceSecondSignIn.access_token)).status, 429);
    assert.equal(
      (await limited.request('GET', '/v4/user', { headers: { 'x-service-token': aliceTokens.access_token } })).status,
      429,
    );

    // Another user in the same application, and the same user in another application, are not limited.
    const bobReply = await getUser(bobTokens.access_token);
    assert.equal(bobReply.status, 200, bobReply.text);
    assert.equal(bobReply.body.userId, bob.userId);
    assert.equal(bobReply.headers.get('x-ratelimit-remaining'), String(LIMIT - 1));
    const otherAppReply = await getUser(aliceInOtherApp.access_token);
    assert.equal(otherAppReply.status, 200, otherAppReply.text);
    assert.equal(otherAppReply.body.userId, alice.userId);
    assert.equal(otherAppReply.headers.get('x-ratelimit-remaining'), String(LIMIT - 1));

    // The server without a limit is unaffected.
    const unlimited = await issuer.request('GET', '/v4/user', { headers: bearer(aliceTokens.access_token) });
    assert.equal(unlimited.status, 200, unlimited.text);
    assert.equal(unlimited.headers.get('x-ratelimit-limit'), null);
  });

  test('requests without a token are limited by IP, apart from the users', async () => {
    const app = await newApp(issuer, { scopes: ['common', 'users:read'] });
    const carol = await newAccount(issuer);
    const carolTokens = await tokensThroughPages(issuer, app, carol);
    for (let i = 1; i <= LIMIT; i++) {
      const reply = await limited.request('GET', '/v4/user');
      assert.equal(reply.status, 401, reply.text);
    }
    const refused = await limited.request('GET', '/v4/user');
    assertError(refused, 429, 'tooManyRequests');
    assert.ok(refused.headers.get('retry-after'));
    const carolReply = await getUser(carolTokens.access_token);
    assert.equal(carolReply.status, 200, carolReply.text);
  });

  test('requests refused for a missing scope count toward the user and application', async () => {
    const app = await newApp(issuer, { scopes: ['common', 'users:read'] });
    const dave = await newAccount(issuer);
    const commonOnly = await tokensThroughPages(issuer, app, dave, 'common');
    for (let i = 1; i <= LIMIT; i++) assertError(await getUser(commonOnly.access_token), 403, 'forbidden');
    const refused = await getUser(commonOnly.access_token);
    assertError(refused, 429, 'tooManyRequests');
    assert.ok(refused.headers.get('retry-after'));
  });
});

describe('guessed bearer tokens count against the v4 limit of their address', () => {
  const LIMIT = 3;
  let database: TestDatabase;
  let issuer: TestServer;
  let limited: TestServer;
  before(async () => {
    database = await freshDatabase();
    issuer = await startServer({ database });
    limited = await startServer({ database, env: { RATE_LIMIT_V4: String(LIMIT), TRUST_PROXY: 'true' } });
  });
  after(async () => {
    await limited?.close();
    await issuer?.close();
    await database?.drop();
  });

  const from = (address: string, headers: Record<string, string> = {}) => ({
    headers: { 'x-forwarded-for': address, ...headers },
  });
  const invented = () => bearer(`invented-${Math.random().toString(36).slice(2)}`);

  test('each invented token is counted: after the limit they are 429, not 401', async () => {
    for (let i = 1; i <= LIMIT; i++) {
      const reply = await limited.request('GET', '/v4/user', from('203.0.113.10', invented()));
      assertInvalidToken(reply);
      assert.equal(reply.headers.get('x-ratelimit-remaining'), String(LIMIT - i), 'the refused token was counted');
    }
    assertError(await limited.request('GET', '/v4/user', from('203.0.113.10', invented())), 429, 'tooManyRequests');
    // A malformed Authorization header and X-Service-Token are refused the same way.
    assertError(
      await limited.request('GET', '/v4/user', from('203.0.113.10', { authorization: 'Basic Zm9vOmJhcg==' })),
      429,
      'tooManyRequests',
    );
    assertError(
      await limited.request('GET', '/v4/projects', from('203.0.113.10', { 'x-service-token': 'guess' })),
      429,
      'tooManyRequests',
    );
    // Another address still gets the 401.
    assertInvalidToken(await limited.request('GET', '/v4/user', from('203.0.113.11', invented())));
  });

  test('an address over its limit without tokens is refused for invented tokens too, while a real token goes on', async () => {
    for (let i = 0; i < LIMIT; i++)
      assert.equal((await limited.request('GET', '/v4/user', from('203.0.113.20'))).status, 401);
    const guessed = await limited.request(
      'POST',
      '/v4/projects',
      from('203.0.113.20', { ...invented(), 'content-type': 'application/json' }),
    );
    assertError(guessed, 429, 'tooManyRequests');
    const { tokens } = await signedInTokens(issuer);
    const real = await limited.request('GET', '/v4/user', from('203.0.113.20', bearer(tokens.access_token)));
    assert.equal(real.status, 200, 'a valid token is counted for its user and application, not the address');
  });
});

describe('the bearerAuth plugin', () => {
  test('refuses to register without a token lookup', async () => {
    const app = Fastify();
    app.register(bearerAuth, {} as BearerAuthOptions);
    await assert.rejects(async () => {
      await app.ready();
    }, /lookup option/);
    await app.close();
  });

  test('a route reading request.auth without a token answers 401 with the challenge, never a 500', async () => {
    const app = Fastify();
    installErrorModel(app);
    const lookups: string[] = [];
    await app.register(async (scope) => {
      await scope.register(bearerAuth, {
        lookup: async (token: string) => {
          lookups.push(token);
          return token === 'good'
            ? {
                userId: 'u',
                clientId: 'c',
                sessionId: 's',
                scopes: new Set(['common']),
                expiresAt: Date.now() + 60_000,
              }
            : undefined;
        },
      });
      scope.get('/whoami', async (request) => ({ userId: request.auth.userId }));
    });
    const anonymous = await app.inject({ method: 'GET', url: '/whoami' });
    assert.equal(anonymous.statusCode, 401, anonymous.body);
    assert.match(String(anonymous.headers['www-authenticate']), /^Bearer realm="v4"/);
    const good = await app.inject({ method: 'GET', url: '/whoami', headers: { authorization: 'Bearer good' } });
    assert.equal(good.statusCode, 200, good.body);
    assert.deepEqual(good.json(), { userId: 'u' });
    const unknown = await app.inject({ method: 'GET', url: '/whoami', headers: { authorization: 'Bearer guessed' } });
    assert.equal(unknown.statusCode, 401, unknown.body);
    assert.match(String(unknown.headers['www-authenticate']), /error="invalid_token"/);
    assert.deepEqual(lookups, ['good', 'guessed']);
    await app.close();
  });
});
