/**
 * POST /v4/revoke (RFC 7009, DESIGN "Standard OAuth surface"): client authentication as at the
 * token endpoint; either token of a session ends the whole session at once, on every instance;
 * 200 with an empty body for unknown, expired and already revoked tokens and for another
 * client's token, which stays valid; invalid_client 401 when client authentication fails.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashSecret } from '../../src/secrets/random-secrets.ts';
import { assertOAuthError, newAccount, newApp, tokenRequest, tokensThroughPages } from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

type App = Awaited<ReturnType<typeof newApp>>;

let server: TestServer;
let publicApp: App;
let confidentialApp: App;
let account: Awaited<ReturnType<typeof newAccount>>;

before(async () => {
  server = await startServer();
  publicApp = await newApp(server);
  confidentialApp = await newApp(server, { confidential: true });
  account = await newAccount(server);
});
after(() => server.close());

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const basic = (app: App, secret = app.clientSecret!) =>
  `Basic ${Buffer.from(`${encodeURIComponent(app.clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;

function revoke(params: Record<string, string>, headers: Record<string, string> = {}, on: TestServer = server) {
  return on.request('POST', '/v4/revoke', {
    body: new URLSearchParams(params).toString(),
    headers: { ...FORM, ...headers },
  });
}

/** What the resource server says about an access token: 200 while valid, 401 once not. */
async function userStatus(accessToken: string, on: TestServer = server) {
  return (await on.request('GET', '/v4/user', { headers: { authorization: `Bearer ${accessToken}` } })).status;
}

const refresh = (app: App, refreshToken: string) =>
  tokenRequest(server, {
    grant_type: 'refresh_token',
    client_id: app.clientId,
    refresh_token: refreshToken,
    ...(app.clientSecret ? { client_secret: app.clientSecret } : {}),
  });

/** A successful revocation answer: 200, empty body, not cached. */
function assertRevokedAnswer(reply: Awaited<ReturnType<typeof revoke>>) {
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.text, '');
  assert.equal(reply.headers.get('cache-control'), 'no-store');
}

describe('revoking ends the whole session', () => {
  test('the access token (public client): both tokens stop working at once', async () => {
    const tokens = await tokensThroughPages(server, publicApp, account);
    assert.equal(await userStatus(tokens.access_token), 200);
    assertRevokedAnswer(await revoke({ token: tokens.access_token, client_id: publicApp.clientId }));
    assert.equal(await userStatus(tokens.access_token), 401);
    assertOAuthError(await refresh(publicApp, tokens.refresh_token), 'invalid_grant');
  });

  test('the refresh token (confidential client, secret in the body): the access token stops working too', async () => {
    const tokens = await tokensThroughPages(server, confidentialApp, account);
    assertRevokedAnswer(
      await revoke({
        token: tokens.refresh_token,
        token_type_hint: 'refresh_token',
        client_id: confidentialApp.clientId,
        client_secret: confidentialApp.clientSecret!,
      }),
    );
    assert.equal(await userStatus(tokens.access_token), 401);
    assertOAuthError(await refresh(confidentialApp, tokens.refresh_token), 'invalid_grant');
  });

  test('confidential client with HTTP Basic; a wrong or unknown token_type_hint does not stop the lookup', async () => {
    const first = await tokensThroughPages(server, confidentialApp, account);
    assertRevokedAnswer(
      await revoke(
        { token: first.access_token, token_type_hint: 'refresh_token' },
        { authorization: basic(confidentialApp) },
      ),
    );
    assert.equal(await userStatus(first.access_token), 401);
    const second = await tokensThroughPages(server, confidentialApp, account);
    assertRevokedAnswer(
      await revoke(
        { token: second.refresh_token, token_type_hint: 'something_else' },
        { authorization: basic(confidentialApp) },
      ),
    );
    assert.equal(await userStatus(second.access_token), 401);
  });

  test('only the session of that token ends: the same user’s other sessions stay', async () => {
    const ended = await tokensThroughPages(server, publicApp, account);
    const kept = await tokensThroughPages(server, publicApp, account);
    assertRevokedAnswer(await revoke({ token: ended.access_token, client_id: publicApp.clientId }));
    assert.equal(await userStatus(kept.access_token), 200);
    assert.equal((await refresh(publicApp, kept.refresh_token)).status, 200);
  });

  test('tokens issued by a refresh are revoked like the first ones', async () => {
    const tokens = await tokensThroughPages(server, publicApp, account);
    const refreshed = await refresh(publicApp, tokens.refresh_token);
    assert.equal(refreshed.status, 200, refreshed.text);
    assertRevokedAnswer(await revoke({ token: refreshed.body.refresh_token, client_id: publicApp.clientId }));
    assert.equal(await userStatus(refreshed.body.access_token), 401);
  });

  test('a refresh token already rotated away still ends the session (a sign-out racing a refresh)', async () => {
    const tokens = await tokensThroughPages(server, publicApp, account);
    const refreshed = await refresh(publicApp, tokens.refresh_token);
    assert.equal(refreshed.status, 200, refreshed.text);
    assertRevokedAnswer(await revoke({ token: tokens.refresh_token, client_id: publicApp.clientId }));
    assert.equal(await userStatus(refreshed.body.access_token), 401);
    assertOAuthError(await refresh(publicApp, refreshed.body.refresh_token), 'invalid_grant');
  });

  test('JSON bodies are accepted as at the token endpoint', async () => {
    const tokens = await tokensThroughPages(server, publicApp, account);
    const reply = await server.request('POST', '/v4/revoke', {
      body: { token: tokens.access_token, client_id: publicApp.clientId },
    });
    assertRevokedAnswer(reply);
    assert.equal(await userStatus(tokens.access_token), 401);
  });

  test('simultaneous revocations of one token all answer 200', async () => {
    const tokens = await tokensThroughPages(server, publicApp, account);
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        revoke({ token: i % 2 ? tokens.access_token : tokens.refresh_token, client_id: publicApp.clientId }),
      ),
    );
    for (const reply of replies) assertRevokedAnswer(reply);
    assert.equal(await userStatus(tokens.access_token), 401);
  });
});

describe('tokens that cannot be revoked: 200, nothing changes', () => {
  test('an unknown token, and odd ones (Object.prototype names, very long)', async () => {
    for (const token of ['not-a-token', '__proto__', 'toString', 'x'.repeat(100_000), 'é✓']) {
      assertRevokedAnswer(await revoke({ token, client_id: publicApp.clientId }));
    }
  });

  test('a token holding a NUL byte is refused as malformed (400 invalid_request), as everywhere', async () => {
    const reply = await revoke({ token: 'a\u0000b', client_id: publicApp.clientId });
    assert.equal(reply.status, 400);
    assert.equal(reply.body.error, 'invalid_request');
  });

  test('an already revoked token', async () => {
    const tokens = await tokensThroughPages(server, publicApp, account);
    assertRevokedAnswer(await revoke({ token: tokens.access_token, client_id: publicApp.clientId }));
    assertRevokedAnswer(await revoke({ token: tokens.access_token, client_id: publicApp.clientId }));
    assertRevokedAnswer(await revoke({ token: tokens.refresh_token, client_id: publicApp.clientId }));
  });

  test('another client’s token: 200, and that token stays valid', async () => {
    const other = await newApp(server);
    const tokens = await tokensThroughPages(server, other, account);
    assertRevokedAnswer(await revoke({ token: tokens.access_token, client_id: publicApp.clientId }));
    assertRevokedAnswer(
      await revoke({
        token: tokens.refresh_token,
        client_id: confidentialApp.clientId,
        client_secret: confidentialApp.clientSecret!,
      }),
    );
    assert.equal(await userStatus(tokens.access_token), 200);
    assert.equal((await refresh(other, tokens.refresh_token)).status, 200);
  });

  test('an expired access token ends nothing; an expired refresh token neither', async () => {
    const tokens = await tokensThroughPages(server, publicApp, account);
    const db = server.app.database.db;
    const session = await db
      .selectFrom('sessions')
      .select('session_id')
      .where('access_token_hash', '=', hashSecret(tokens.access_token))
      .executeTakeFirst();
    await db
      .updateTable('sessions')
      .set({ access_expires_at: Date.now() - 1000 })
      .where('session_id', '=', session!.session_id)
      .execute();
    assertRevokedAnswer(await revoke({ token: tokens.access_token, client_id: publicApp.clientId }));
    // The session lives on: its refresh token still works.
    const refreshed = await refresh(publicApp, tokens.refresh_token);
    assert.equal(refreshed.status, 200, refreshed.text);

    await db
      .updateTable('sessions')
      .set({ refresh_expires_at: Date.now() - 1000 })
      .where('session_id', '=', session!.session_id)
      .execute();
    assertRevokedAnswer(await revoke({ token: refreshed.body.refresh_token, client_id: publicApp.clientId }));
    assert.equal(
      await userStatus(refreshed.body.access_token),
      200,
      'the unexpired access token of that session was not touched',
    );
  });
});

describe('client authentication as at the token endpoint', () => {
  test('a wrong secret is invalid_client 401, and the token stays valid', async () => {
    const tokens = await tokensThroughPages(server, confidentialApp, account);
    assertOAuthError(
      await revoke({ token: tokens.access_token, client_id: confidentialApp.clientId, client_secret: 'wrong' }),
      'invalid_client',
      401,
    );
    const viaBasic = await revoke({ token: tokens.access_token }, { authorization: basic(confidentialApp, 'wrong') });
    assertOAuthError(viaBasic, 'invalid_client', 401);
    assert.match(viaBasic.headers.get('www-authenticate') ?? '', /^Basic /);
    assert.equal(await userStatus(tokens.access_token), 200);
  });

  test('a confidential client without its secret, a public client with one, an unknown client: invalid_client 401', async () => {
    const tokens = await tokensThroughPages(server, confidentialApp, account);
    assertOAuthError(
      await revoke({ token: tokens.access_token, client_id: confidentialApp.clientId }),
      'invalid_client',
      401,
    );
    assertOAuthError(
      await revoke({ token: tokens.access_token, client_id: publicApp.clientId, client_secret: 'x' }),
      'invalid_client',
      401,
    );
    assertOAuthError(
      await revoke({ token: tokens.access_token, client_id: '00000000-0000-4000-8000-000000000000' }),
      'invalid_client',
      401,
    );
    assert.equal(await userStatus(tokens.access_token), 200);
  });

  test('missing client_id or token, or a repeated parameter, is invalid_request', async () => {
    assertOAuthError(await revoke({ token: 'x' }), 'invalid_request');
    assertOAuthError(await revoke({ client_id: publicApp.clientId }), 'invalid_request');
    assertOAuthError(await revoke({ client_id: publicApp.clientId, token: '' }), 'invalid_request');
    const repeated = await server.request('POST', '/v4/revoke', {
      body: `client_id=${publicApp.clientId}&token=a&token=b`,
      headers: FORM,
    });
    assertOAuthError(repeated, 'invalid_request');
  });

  test('a body that is not a form or JSON object is a 4xx OAuth error', async () => {
    const array = await server.request('POST', '/v4/revoke', {
      body: '[1,2]',
      headers: { 'content-type': 'application/json' },
    });
    assertOAuthError(array, 'invalid_request');
    const xml = await server.request('POST', '/v4/revoke', {
      body: '<token/>',
      headers: { 'content-type': 'application/xml' },
    });
    assert.equal(xml.status, 415, xml.text);
    assert.equal(xml.body.error, 'invalid_request');
  });
});

describe('on several instances', () => {
  let database: TestDatabase;
  let first: TestServer;
  let second: TestServer;
  before(async () => {
    database = await freshDatabase();
    first = await startServer({ database });
    second = await startServer({ database });
  });
  after(async () => {
    await first.close();
    await second.close();
    await database.drop();
  });

  test('a revocation on one instance ends the session on the other at once', async () => {
    const app = await newApp(first);
    const user = await newAccount(first);
    const tokens = await tokensThroughPages(first, app, user);
    assert.equal(await userStatus(tokens.access_token, second), 200);
    assertRevokedAnswer(await revoke({ token: tokens.refresh_token, client_id: app.clientId }, {}, first));
    assert.equal(await userStatus(tokens.access_token, second), 401);
    assert.equal(await userStatus(tokens.access_token, first), 401);
  });
});

describe('rate limit', () => {
  test('revocation and introspection count against the same v4 OAuth limit as the token endpoint', async () => {
    const limited = await startServer({ env: { RATE_LIMIT_V4: '3' } });
    try {
      const app = await newApp(limited);
      assert.equal(
        (await tokenRequest(limited, { grant_type: 'refresh_token', client_id: app.clientId, refresh_token: 'x' }))
          .status,
        400,
      );
      assert.equal((await revoke({ token: 'x', client_id: app.clientId }, {}, limited)).status, 200);
      const introspect = () =>
        limited.request('POST', '/v4/introspect', { body: `token=x&client_id=${app.clientId}`, headers: FORM });
      assert.equal((await introspect()).status, 401);
      const refused = await revoke({ token: 'x', client_id: app.clientId }, {}, limited);
      assert.equal(refused.status, 429, refused.text);
      assert.equal(typeof refused.body.error, 'string');
      assert.equal((await introspect()).status, 429);
    } finally {
      await limited.close();
    }
  });
});
