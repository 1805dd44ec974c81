/**
 * POST /v4/introspect (RFC 7662, DESIGN "Standard OAuth surface"): confidential clients only (a
 * public client is invalid_client 401). A live access or refresh token issued to the caller is
 * {"active":true,"scope","client_id","username","sub","token_type":"Bearer","exp","iat"};
 * anything else, including another client's token, is exactly {"active":false}.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashSecret } from '../../src/secrets/random-secrets.ts';
import { assertOAuthError, newAccount, newApp, tokenRequest, tokensThroughPages } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

type App = Awaited<ReturnType<typeof newApp>>;

let server: TestServer;
let app: App;
let account: Awaited<ReturnType<typeof newAccount>>;

before(async () => {
  server = await startServer();
  app = await newApp(server, { confidential: true });
  account = await newAccount(server);
});
after(() => server.close());

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const basic = (client: App, secret = client.clientSecret!) =>
  `Basic ${Buffer.from(`${client.clientId}:${encodeURIComponent(secret)}`).toString('base64')}`;

function introspect(params: Record<string, string>, headers: Record<string, string> = {}) {
  return server.request('POST', '/v4/introspect', {
    body: new URLSearchParams(params).toString(),
    headers: { ...FORM, ...headers },
  });
}

/** Introspects `token` as `client` (secret in the body) and answers the body after checking the envelope. */
async function introspected(token: string, client: App = app) {
  const reply = await introspect({ token, client_id: client.clientId, client_secret: client.clientSecret! });
  assert.equal(reply.status, 200, reply.text);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(reply.headers.get('cache-control'), 'no-store');
  return reply.body;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('an active token of the calling client', () => {
  test('an access token: every DESIGN field, exp and iat integer seconds an hour apart', async () => {
    const before = nowSeconds();
    const tokens = await tokensThroughPages(server, app, account);
    const body = await introspected(tokens.access_token);
    assert.deepEqual(Object.keys(body).sort(), [
      'active',
      'client_id',
      'exp',
      'iat',
      'scope',
      'sub',
      'token_type',
      'username',
    ]);
    assert.equal(body.active, true);
    assert.equal(body.scope, 'common users:read');
    assert.equal(body.client_id, app.clientId);
    assert.equal(body.username, account.username);
    assert.equal(body.sub, account.userId);
    assert.equal(body.token_type, 'Bearer');
    assert.ok(Number.isInteger(body.exp) && Number.isInteger(body.iat), `${body.exp} ${body.iat}`);
    assert.equal(body.exp, tokens.access_token_expiration);
    assert.equal(body.exp - body.iat, 3600);
    assert.ok(body.iat >= before && body.iat <= nowSeconds(), `iat ${body.iat}`);
  });

  test('a refresh token reports the refresh expiry (30 days after issue)', async () => {
    const tokens = await tokensThroughPages(server, app, account);
    const body = await introspected(tokens.refresh_token);
    assert.equal(body.active, true);
    assert.equal(body.sub, account.userId);
    assert.equal(body.exp, tokens.refresh_token_expiration);
    assert.equal(body.exp - body.iat, 30 * 24 * 3600);
  });

  test('HTTP Basic works as well as the body; token_type_hint is only a hint', async () => {
    const tokens = await tokensThroughPages(server, app, account);
    const reply = await introspect(
      { token: tokens.refresh_token, token_type_hint: 'access_token' },
      { authorization: basic(app) },
    );
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.active, true);
    assert.equal(reply.body.exp, tokens.refresh_token_expiration);
  });

  test('after a refresh the old tokens are inactive and the new ones active', async () => {
    const tokens = await tokensThroughPages(server, app, account);
    const refreshed = await tokenRequest(server, {
      grant_type: 'refresh_token',
      client_id: app.clientId,
      client_secret: app.clientSecret!,
      refresh_token: tokens.refresh_token,
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.deepEqual(await introspected(tokens.access_token), { active: false });
    assert.deepEqual(await introspected(tokens.refresh_token), { active: false });
    assert.equal((await introspected(refreshed.body.access_token)).active, true);
    assert.equal((await introspected(refreshed.body.refresh_token)).active, true);
  });
});

describe('inactive: exactly {"active":false}', () => {
  test('unknown tokens, and odd ones (Object.prototype names, very long, empty-looking)', async () => {
    for (const token of ['nope', '__proto__', 'constructor', 'x'.repeat(100_000), ' ']) {
      assert.deepEqual(await introspected(token), { active: false }, JSON.stringify(token.slice(0, 20)));
    }
  });

  test('a token holding a NUL byte is refused as malformed (400 invalid_request), as everywhere', async () => {
    const reply = await introspect({ token: 'a\u0000b' }, { authorization: basic(app) });
    assert.equal(reply.status, 400);
    assert.equal(reply.body.error, 'invalid_request');
  });

  test('expired access and refresh tokens', async () => {
    const tokens = await tokensThroughPages(server, app, account);
    const db = server.app.database.db;
    const where = hashSecret(tokens.access_token);
    await db
      .updateTable('sessions')
      .set({ access_expires_at: Date.now() - 1 })
      .where('access_token_hash', '=', where)
      .execute();
    assert.deepEqual(await introspected(tokens.access_token), { active: false });
    assert.equal((await introspected(tokens.refresh_token)).active, true);
    await db
      .updateTable('sessions')
      .set({ refresh_expires_at: Date.now() - 1 })
      .where('access_token_hash', '=', where)
      .execute();
    assert.deepEqual(await introspected(tokens.refresh_token), { active: false });
  });

  test('revoked tokens, by revocation or by signing out', async () => {
    const tokens = await tokensThroughPages(server, app, account);
    const revoked = await server.request('POST', '/v4/revoke', {
      body: new URLSearchParams({
        token: tokens.access_token,
        client_id: app.clientId,
        client_secret: app.clientSecret!,
      }).toString(),
      headers: FORM,
    });
    assert.equal(revoked.status, 200);
    assert.deepEqual(await introspected(tokens.access_token), { active: false });
    assert.deepEqual(await introspected(tokens.refresh_token), { active: false });

    const other = await tokensThroughPages(server, app, account);
    const signOut = await server.request('DELETE', '/v4/session', {
      headers: { authorization: `Bearer ${other.access_token}` },
    });
    assert.ok(signOut.status < 300, signOut.text);
    assert.deepEqual(await introspected(other.refresh_token), { active: false });
  });

  test('another client’s token is inactive to the caller, and stays valid', async () => {
    const otherApp = await newApp(server, { confidential: true });
    const tokens = await tokensThroughPages(server, otherApp, account);
    assert.deepEqual(await introspected(tokens.access_token), { active: false });
    assert.deepEqual(await introspected(tokens.refresh_token), { active: false });
    assert.equal((await introspected(tokens.access_token, otherApp)).active, true);
    assert.equal(
      (await server.request('GET', '/v4/user', { headers: { authorization: `Bearer ${tokens.access_token}` } })).status,
      200,
    );
  });
});

describe('client authentication', () => {
  test('a public client is invalid_client 401, even about its own tokens', async () => {
    const publicApp = await newApp(server);
    const tokens = await tokensThroughPages(server, publicApp, account);
    const reply = await introspect({ token: tokens.access_token, client_id: publicApp.clientId });
    assertOAuthError(reply, 'invalid_client', 401);
    assert.equal(reply.headers.get('www-authenticate'), null);
    // Basic with an empty secret is still a public client; the Basic challenge comes with the 401.
    const viaBasic = await introspect(
      { token: tokens.access_token },
      { authorization: `Basic ${Buffer.from(`${publicApp.clientId}:`).toString('base64')}` },
    );
    assertOAuthError(viaBasic, 'invalid_client', 401);
    assert.match(viaBasic.headers.get('www-authenticate') ?? '', /^Basic /);
  });

  test('a wrong secret (body or Basic), no secret, an unknown client: invalid_client 401, nothing disclosed', async () => {
    const tokens = await tokensThroughPages(server, app, account);
    for (const reply of [
      await introspect({ token: tokens.access_token, client_id: app.clientId, client_secret: 'wrong' }),
      await introspect({ token: tokens.access_token }, { authorization: basic(app, 'wrong') }),
      await introspect({ token: tokens.access_token, client_id: app.clientId }),
      await introspect({
        token: tokens.access_token,
        client_id: '00000000-0000-4000-8000-000000000000',
        client_secret: 'x',
      }),
    ]) {
      assertOAuthError(reply, 'invalid_client', 401);
      assert.equal(reply.body.active, undefined);
    }
  });

  test('a missing token or client_id, or a repeated parameter, is invalid_request', async () => {
    assertOAuthError(
      await introspect({ client_id: app.clientId, client_secret: app.clientSecret! }),
      'invalid_request',
    );
    assertOAuthError(await introspect({ token: 'x' }), 'invalid_request');
    const repeated = await server.request('POST', '/v4/introspect', {
      body: `client_id=${app.clientId}&client_secret=${encodeURIComponent(app.clientSecret!)}&token=a&token=b`,
      headers: FORM,
    });
    assertOAuthError(repeated, 'invalid_request');
  });
});
