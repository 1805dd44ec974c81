/**
 * Native applications (RFC 8252 §7.3, DESIGN "v4 login"): a registered loopback IP literal
 * redirect URI (127.0.0.1 or [::1]) matches any port at the authorization request, so a desktop
 * app can listen on an ephemeral port; everything else about the URI must still match exactly,
 * `localhost` gets no such exception, and the token request must repeat exactly the URI (port
 * included) that the authorization used.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertOAuthError, authorize, newAccount, newApp, pkcePair, tokenRequest } from '../helpers/oauth.ts';
import { startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';

const V4 = '127.0.0.1';
const REGISTERED = [
  'http://127.0.0.1/callback',
  'http://[::1]:8080/cb?app=desk',
  'http://localhost:7777/cb',
  'https://app.example/cb',
];

let server: TestServer;
let app: { clientId: string };
let account: Awaited<ReturnType<typeof newAccount>>;

before(async () => {
  server = await startServer();
  app = await newApp(server, { redirectUris: REGISTERED });
  account = await newAccount(server);
});
after(() => server.close());

function authorizationRequest(redirectUri: string, changes: Record<string, string> = {}) {
  const query = new URLSearchParams({
    client_id: app.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'common',
    state: 'native',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    ...changes,
  });
  return server.request('GET', `/v4/login?${query}`);
}

/** The request was accepted: it goes on to the login page. */
async function assertAccepted(redirectUri: string) {
  const reply = await authorizationRequest(redirectUri);
  assert.equal(reply.status, 302, `${redirectUri}: ${reply.text}`);
  assert.equal(new URL(reply.headers.get('location')!).origin, `https://${TEST_HOST}`, redirectUri);
}

/** The request was refused without sending the browser anywhere. */
async function assertRefused(redirectUri: string) {
  const reply = await authorizationRequest(redirectUri);
  assertOAuthError(reply, 'invalid_request');
  assert.equal(reply.headers.get('location'), null, redirectUri);
}

describe('loopback IP redirect URIs at the authorization request', () => {
  test('127.0.0.1 registered without a port matches any port, and no port', async () => {
    for (const port of ['1', '80', '54321', '65535']) await assertAccepted(`http://${V4}:${port}/callback`);
    await assertAccepted(`http://${V4}/callback`);
  });

  test('[::1] registered with a port matches any other port, the query included exactly', async () => {
    await assertAccepted('http://[::1]:8080/cb?app=desk');
    await assertAccepted('http://[::1]:49152/cb?app=desk');
    await assertAccepted('http://[::1]/cb?app=desk');
  });

  test('everything but the port must still match exactly', async () => {
    for (const uri of [
      `http://${V4}:5000/callback/`,
      `http://${V4}:5000/Callback`,
      `http://${V4}:5000/callbackx`,
      `http://${V4}:5000/callback?x=1`,
      `http://${V4}:5000/callback#f`,
      `https://${V4}:5000/callback`,
      `http://${V4}:5000`,
      'http://[::1]:5000/cb',
      'http://[::1]:5000/cb?app=desk&more=1',
      'http://127.0.0.2:5000/callback',
      'http://[::1]:5000/callback',
      `http://${V4}:5000/callback`.replace(V4, '[::1]'),
    ]) {
      await assertRefused(uri);
    }
  });

  test('a port that is not a port, or a host hidden behind one, is refused', async () => {
    for (const uri of [
      `http://${V4}:0/callback`,
      `http://${V4}:65536/callback`,
      `http://${V4}:99999/callback`,
      `http://${V4}:123456/callback`,
      `http://${V4}:/callback`,
      `http://${V4}:80a/callback`,
      `http://${V4}:5000@evil.example/callback`,
      `http://${V4}@evil.example/callback`,
      `http://${V4}.evil.example/callback`,
      `http://${V4}:5000\\@evil.example/callback`,
    ]) {
      await assertRefused(uri);
    }
  });

  test('localhost gets no exception: only the registered port matches', async () => {
    await assertAccepted('http://localhost:7777/cb');
    await assertRefused('http://localhost:7778/cb');
    await assertRefused('http://localhost/cb');
  });

  test('an https redirect URI matches exactly, port included', async () => {
    await assertAccepted('https://app.example/cb');
    await assertRefused('https://app.example:8443/cb');
  });

  test('an error after the redirect URI is established goes to the port the request named, with iss', async () => {
    const reply = await authorizationRequest(`http://${V4}:43210/callback`, { response_type: 'token' });
    assert.equal(reply.status, 302, reply.text);
    const back = new URL(reply.headers.get('location')!);
    assert.equal(back.origin + back.pathname, `http://${V4}:43210/callback`);
    assert.equal(back.searchParams.get('error'), 'unsupported_response_type');
    assert.equal(back.searchParams.get('iss'), `https://${TEST_HOST}`);
  });
});

describe('the token request repeats exactly the redirect URI of the authorization', () => {
  async function codeFor(redirectUri: string) {
    const { verifier, challenge } = pkcePair();
    const back = await authorize(server, {
      clientId: app.clientId,
      challenge,
      username: account.username,
      password: account.password,
      redirectUri,
    });
    // The browser is sent to the URI the request named (its port), with the response parameters added.
    const returned = new URL(back);
    for (const name of ['code', 'state', 'iss']) returned.searchParams.delete(name);
    assert.equal(returned.href, new URL(redirectUri).href);
    return { code: back.searchParams.get('code')!, verifier, back };
  }

  const exchange = (code: string, verifier: string, redirectUri: string) =>
    tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });

  test('the browser comes back to the ephemeral port; the same URI gets the tokens', async () => {
    const used = `http://${V4}:51234/callback`;
    const { code, verifier, back } = await codeFor(used);
    assert.equal(back.port, '51234');
    const reply = await exchange(code, verifier, used);
    assert.equal(reply.status, 200, reply.text);
    assert.equal(typeof reply.body.access_token, 'string');
  });

  test('the registered URI, or another port, at the token request is invalid_grant (and does not burn the code)', async () => {
    const used = 'http://[::1]:40001/cb?app=desk';
    const { code, verifier, back } = await codeFor(used);
    assert.equal(back.searchParams.get('app'), 'desk');
    assertOAuthError(await exchange(code, verifier, 'http://[::1]:8080/cb?app=desk'), 'invalid_grant');
    assertOAuthError(await exchange(code, verifier, 'http://[::1]:40002/cb?app=desk'), 'invalid_grant');
    assertOAuthError(await exchange(code, verifier, 'http://[::1]/cb?app=desk'), 'invalid_grant');
    const reply = await exchange(code, verifier, used);
    assert.equal(reply.status, 200, reply.text);
  });
});
