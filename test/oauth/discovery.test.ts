/**
 * GET /.well-known/oauth-authorization-server (RFC 8414, DESIGN "Standard OAuth surface"): every
 * field DESIGN lists, derived from BASE_URL, and each advertised capability checked against what
 * the endpoints really accept, so the document cannot claim what the server does not do.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SCOPES } from '../../src/oauth/scopes.ts';
import { assertOAuthError, authorize, newAccount, newApp, pkcePair, tokenRequest } from '../helpers/oauth.ts';
import { startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';

const PATH = '/.well-known/oauth-authorization-server';
const BASE = `https://${TEST_HOST}`;

let server: TestServer;
let metadata: Record<string, any>;

before(async () => {
  server = await startServer();
  const reply = await server.request('GET', PATH);
  assert.equal(reply.status, 200, reply.text);
  metadata = reply.body;
});
after(() => server.close());

describe('the metadata document', () => {
  test('is JSON with every field DESIGN lists, the endpoints under BASE_URL', async () => {
    const reply = await server.request('GET', PATH);
    assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(metadata, {
      issuer: BASE,
      authorization_endpoint: `${BASE}/v4/login`,
      token_endpoint: `${BASE}/v4/login`,
      device_authorization_endpoint: `${BASE}/v4/device`,
      revocation_endpoint: `${BASE}/v4/revoke`,
      introspection_endpoint: `${BASE}/v4/introspect`,
      jwks_uri: `${BASE}/v4/jwks`,
      scopes_supported: Object.keys(SCOPES),
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
      revocation_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
      introspection_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
      authorization_response_iss_parameter_supported: true,
      service_documentation: `${BASE}/v4/docs`,
    });
  });

  test('lists every scope of the scope table, common included', () => {
    assert.ok(metadata.scopes_supported.includes('common'));
    assert.ok(metadata.scopes_supported.includes('users.private_key:read'));
    assert.equal(metadata.scopes_supported.length, Object.keys(SCOPES).length);
  });

  test('may be cached by clients; HEAD answers the headers without a body', async () => {
    const reply = await server.request('GET', PATH);
    assert.match(reply.headers.get('cache-control') ?? '', /max-age=\d+/);
    const head = await server.request('HEAD', PATH);
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
  });

  test('derives from BASE_URL: another BASE_URL (trailing slash and all) gives another issuer and endpoints', async () => {
    const other = await startServer({ env: { BASE_URL: 'https://auth.example.org:8443/' } });
    try {
      const reply = await other.request('GET', PATH);
      assert.equal(reply.body.issuer, 'https://auth.example.org:8443');
      assert.equal(reply.body.token_endpoint, 'https://auth.example.org:8443/v4/login');
      assert.equal(reply.body.service_documentation, 'https://auth.example.org:8443/v4/docs');
    } finally {
      await other.close();
    }
  });

  test('the service documentation it names is served', async () => {
    const docs = await server.request('GET', new URL(metadata.service_documentation).pathname);
    assert.equal(docs.status, 200);
  });
});

describe('every advertised capability is real', () => {
  test('an application may be registered for every advertised scope and is granted all of them', async () => {
    const app = await newApp(server, { scopes: metadata.scopes_supported });
    const account = await newAccount(server);
    const { verifier, challenge } = pkcePair();
    const back = await authorize(server, {
      clientId: app.clientId,
      challenge,
      username: account.username,
      password: account.password,
      scope: metadata.scopes_supported.join(' '),
    });
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      code: back.searchParams.get('code')!,
      redirect_uri: back.origin + back.pathname,
      code_verifier: verifier,
    });
    assert.equal(tokens.status, 200, tokens.text);
    assert.deepEqual(tokens.body.scope.split(' ').sort(), [...metadata.scopes_supported].sort());
  });

  test('every advertised grant type is understood by the token endpoint (never unsupported_grant_type)', async () => {
    const app = await newApp(server);
    for (const grantType of metadata.grant_types_supported) {
      const reply = await tokenRequest(server, { grant_type: grantType, client_id: app.clientId });
      assert.equal(reply.status, 400, `${grantType}: ${reply.text}`);
      assert.notEqual(reply.body.error, 'unsupported_grant_type', grantType);
    }
    assertOAuthError(
      await tokenRequest(server, { grant_type: 'client_credentials', client_id: app.clientId }),
      'unsupported_grant_type',
    );
    assertOAuthError(
      await tokenRequest(server, { grant_type: 'password', client_id: app.clientId }),
      'unsupported_grant_type',
    );
  });

  test('a grant_type naming an Object.prototype key is unsupported_grant_type, not a server error', async () => {
    const app = await newApp(server);
    for (const grantType of ['toString', '__proto__', 'constructor', 'hasOwnProperty']) {
      assertOAuthError(
        await tokenRequest(server, { grant_type: grantType, client_id: app.clientId }),
        'unsupported_grant_type',
      );
    }
  });

  test('only the advertised response type and challenge method are accepted at the authorization endpoint', async () => {
    const app = await newApp(server);
    const query = (changes: Record<string, string>) =>
      new URLSearchParams({
        client_id: app.clientId,
        redirect_uri: 'http://127.0.0.1:9/callback',
        response_type: 'code',
        scope: 'common',
        state: 's',
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
        ...changes,
      });
    const ok = await server.request('GET', `/v4/login?${query({})}`);
    assert.equal(ok.status, 302);
    assert.match(ok.headers.get('location')!, /\/login\//);
    const token = new URL(
      (await server.request('GET', `/v4/login?${query({ response_type: 'token' })}`)).headers.get('location')!,
    );
    assert.equal(token.searchParams.get('error'), 'unsupported_response_type');
    const plain = new URL(
      (await server.request('GET', `/v4/login?${query({ code_challenge_method: 'plain' })}`)).headers.get('location')!,
    );
    assert.equal(plain.searchParams.get('error'), 'invalid_request');
  });

  test('the revocation and introspection endpoints it names answer POST', async () => {
    const app = await newApp(server, { confidential: true });
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const body = new URLSearchParams({
      token: 'x',
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    }).toString();
    const revoked = await server.request('POST', new URL(metadata.revocation_endpoint).pathname, {
      body,
      headers: form,
    });
    assert.equal(revoked.status, 200, revoked.text);
    const introspected = await server.request('POST', new URL(metadata.introspection_endpoint).pathname, {
      body,
      headers: form,
    });
    assert.deepEqual(introspected.body, { active: false });
  });
});
