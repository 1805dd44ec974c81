/**
 * An independent, standard OAuth client (oauth4webapi) against the real server: the
 * authorization code flow with PKCE (public and confidential clients), refresh with rotation,
 * the device flow (RFC 8628, with PKCE) and error responses. The only client-side settings are
 * documented oauth4webapi options: allowInsecureRequests (the test server is plain http on
 * loopback) and additionalParameters (PKCE on the device flow).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import * as oauth from 'oauth4webapi';
import { FormClient, newAccount, newApp, REDIRECT_URI } from '../helpers/oauth.ts';
import { startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';

const ISSUER = `https://${TEST_HOST}`;
const SCOPE = 'common users:read';
/** The test server speaks plain http on loopback; oauth4webapi's documented opt-out. */
const insecure = { [oauth.allowInsecureRequests]: true } as const;

type Account = Awaited<ReturnType<typeof newAccount>>;
type ClientAuthName = 'none' | 'client_secret_post' | 'client_secret_basic';

let server: TestServer;
let as: oauth.AuthorizationServer;

before(async () => {
  server = await startServer();
  as = {
    issuer: ISSUER,
    authorization_endpoint: `${server.url}/v4/login`,
    token_endpoint: `${server.url}/v4/login`,
    device_authorization_endpoint: `${server.url}/v4/device`,
  };
});
after(() => server.close());

/** A registered application, as oauth4webapi's Client plus its ClientAuth. */
async function registerClient(method: ClientAuthName) {
  const registered = await newApp(server, { scopes: SCOPE.split(' '), confidential: method !== 'none' });
  const client: oauth.Client = { client_id: registered.clientId, token_endpoint_auth_method: method };
  const clientAuth =
    method === 'none'
      ? oauth.None()
      : method === 'client_secret_post'
        ? oauth.ClientSecretPost(registered.clientSecret!)
        : oauth.ClientSecretBasic(registered.clientSecret!);
  return { client, clientAuth, secret: registered.clientSecret };
}

/**
 * A URL the server built from BASE_URL (https://api.test.example/…), as a path on the test
 * server: what a browser would open if that host pointed at it.
 */
function onTestServer(url: string): string {
  const parsed = new URL(url);
  assert.equal(parsed.origin, ISSUER, `${url} is not under BASE_URL`);
  return parsed.pathname + parsed.search;
}

/** Signs in (when the page asks) and decides on the consent page of a login interaction. */
async function signInAndDecide(browser: FormClient, page: string, account: Account, decision: 'approve' | 'deny') {
  let current = await browser.fetch(page);
  assert.equal(current.status, 200, current.text);
  if (current.text.includes('name="password"')) {
    const signedIn = await browser.submitOn(current.text, { username: account.username, password: account.password });
    assert.equal(signedIn.status, 303, signedIn.text);
    current = await browser.fetch(page);
  }
  assert.match(current.text, /name="decision"/, current.text);
  return browser.submitOn(current.text, { decision }, /consent$/);
}

/**
 * The front channel: the browser opens the authorization URL, follows the redirect to the login
 * page, signs in, decides, and answers the URL it is sent back to (redirect_uri?code=…&state=…).
 */
async function browserAuthorization(
  authorizationUrl: URL,
  account: Account,
  decision: 'approve' | 'deny' = 'approve',
): Promise<URL> {
  const browser = new FormClient(server);
  const start = await browser.fetch(authorizationUrl.href);
  assert.equal(start.status, 302, start.text);
  const decided = await signInAndDecide(browser, onTestServer(start.location!), account, decision);
  assert.ok(decided.status === 302 || decided.status === 303, `${decided.status} ${decided.text}`);
  return new URL(decided.location!);
}

/** The authorization request exactly as a client builds it (RFC 6749 §4.1.1, RFC 7636 §4.3). */
async function authorizationRequest(client: oauth.Client) {
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set('client_id', client.client_id);
  url.searchParams.set('redirect_uri', REDIRECT_URI);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', SCOPE);
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
  url.searchParams.set('code_challenge_method', 'S256');
  return { url, state, codeVerifier };
}

/** The whole authorization code flow with the standard client; answers the token response. */
async function codeFlow(client: oauth.Client, clientAuth: oauth.ClientAuth, account: Account) {
  const { url, state, codeVerifier } = await authorizationRequest(client);
  const callback = await browserAuthorization(url, account);
  assert.equal(callback.origin + callback.pathname, REDIRECT_URI);
  const params = oauth.validateAuthResponse(as, client, callback, state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    clientAuth,
    params,
    REDIRECT_URI,
    codeVerifier,
    insecure,
  );
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
  return { tokens, params, codeVerifier };
}

/** GET /v4/user with the token, as oauth4webapi sends a protected resource request: who the token is for. */
async function whoAmI(accessToken: string) {
  const response = await oauth.protectedResourceRequest(
    accessToken,
    'GET',
    new URL(`${server.url}/v4/user`),
    undefined,
    undefined,
    insecure,
  );
  assert.equal(response.status, 200);
  const user = (await response.json()) as { userId: string; username: string };
  return { userId: user.userId, username: user.username };
}

/** The resource server rejects the token with the RFC 6750 challenge, which oauth4webapi surfaces. */
async function assertTokenRejected(accessToken: string) {
  await assert.rejects(
    oauth.protectedResourceRequest(
      accessToken,
      'GET',
      new URL(`${server.url}/v4/user`),
      undefined,
      undefined,
      insecure,
    ),
    (error: unknown) => {
      assert.ok(error instanceof oauth.WWWAuthenticateChallengeError, String(error));
      assert.equal(error.status, 401);
      assert.equal(error.cause[0]?.scheme, 'bearer');
      assert.equal(error.cause[0]?.parameters.error, 'invalid_token');
      return true;
    },
  );
}

/** An OAuth error body (RFC 6749 §5.2) that oauth4webapi turns into ResponseBodyError. */
async function assertOAuthError(promise: Promise<unknown>, error: string, status = 400) {
  await assert.rejects(promise, (thrown: unknown) => {
    assert.ok(thrown instanceof oauth.ResponseBodyError, String(thrown));
    assert.equal(thrown.error, error);
    assert.equal(thrown.status, status);
    assert.equal(typeof thrown.error_description, 'string');
    return true;
  });
}

function assertTokenResponse(tokens: oauth.TokenEndpointResponse) {
  assert.equal(tokens.token_type, 'bearer');
  assert.equal(typeof tokens.access_token, 'string');
  assert.equal(typeof tokens.refresh_token, 'string');
  assert.equal(tokens.expires_in, 3600);
  assert.equal(tokens.scope, SCOPE);
  assert.equal(tokens.id_token, undefined);
}

describe('authorization code flow with PKCE', () => {
  for (const method of ['none', 'client_secret_post', 'client_secret_basic'] as const) {
    test(`${method}: code, token, refresh twice with rotation`, async () => {
      const { client, clientAuth } = await registerClient(method);
      const account = await newAccount(server);

      const { tokens } = await codeFlow(client, clientAuth, account);
      assertTokenResponse(tokens);
      assert.deepEqual(await whoAmI(tokens.access_token), { userId: account.userId, username: account.username });

      const firstRefresh = await oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
      );
      assertTokenResponse(firstRefresh);
      assert.notEqual(firstRefresh.access_token, tokens.access_token);
      assert.notEqual(firstRefresh.refresh_token, tokens.refresh_token);
      assert.equal((await whoAmI(firstRefresh.access_token)).userId, account.userId);
      await assertTokenRejected(tokens.access_token);

      // The rotated refresh token works for a second refresh.
      const secondRefresh = await oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, clientAuth, firstRefresh.refresh_token!, insecure),
      );
      assertTokenResponse(secondRefresh);
      assert.notEqual(secondRefresh.refresh_token, firstRefresh.refresh_token);
      assert.equal((await whoAmI(secondRefresh.access_token)).userId, account.userId);
    });
  }

  test('every authorization response carries iss (RFC 9207), which validateAuthResponse checks when the metadata says so', async () => {
    const { client } = await registerClient('none');
    const account = await newAccount(server);
    const { url, state } = await authorizationRequest(client);
    const callback = await browserAuthorization(url, account);
    assert.equal(callback.searchParams.get('iss'), ISSUER);
    const strict = { ...as, authorization_response_iss_parameter_supported: true };
    assert.equal(
      oauth.validateAuthResponse(strict, client, callback, state).get('code'),
      callback.searchParams.get('code'),
    );
    // A response from another issuer (a mix-up attack) is caught by the client.
    const mixedUp = new URL(callback);
    mixedUp.searchParams.set('iss', 'https://other-issuer.example');
    assert.throws(
      () => oauth.validateAuthResponse(strict, client, mixedUp, state),
      (error: unknown) => error instanceof oauth.OperationProcessingError && /"iss"/.test(error.message),
    );
    // A state that does not match is caught by the client.
    assert.throws(
      () => oauth.validateAuthResponse(strict, client, callback, oauth.generateRandomState()),
      oauth.OperationProcessingError,
    );
  });

  test('a denied consent comes back as an AuthorizationResponseError access_denied', async () => {
    const { client } = await registerClient('none');
    const account = await newAccount(server);
    const { url, state } = await authorizationRequest(client);
    const callback = await browserAuthorization(url, account, 'deny');
    assert.equal(callback.searchParams.get('iss'), ISSUER);
    assert.throws(
      () => oauth.validateAuthResponse(as, client, callback, state),
      (error: unknown) => error instanceof oauth.AuthorizationResponseError && error.error === 'access_denied',
    );
  });
});

describe('errors surface as ResponseBodyError', () => {
  test('a replayed code is invalid_grant and revokes the tokens issued for it', async () => {
    const { client, clientAuth } = await registerClient('none');
    const account = await newAccount(server);
    const { tokens, params, codeVerifier } = await codeFlow(client, clientAuth, account);
    await assertOAuthError(
      oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT_URI, codeVerifier, insecure),
      ),
      'invalid_grant',
    );
    await assertTokenRejected(tokens.access_token);
  });

  test('a wrong code_verifier is invalid_grant', async () => {
    const { client, clientAuth } = await registerClient('none');
    const account = await newAccount(server);
    const { url, state } = await authorizationRequest(client);
    const params = oauth.validateAuthResponse(as, client, await browserAuthorization(url, account), state);
    await assertOAuthError(
      oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(
          as,
          client,
          clientAuth,
          params,
          REDIRECT_URI,
          oauth.generateRandomCodeVerifier(),
          insecure,
        ),
      ),
      'invalid_grant',
    );
  });

  test('reusing a rotated refresh token is invalid_grant and ends the session', async () => {
    const { client, clientAuth } = await registerClient('none');
    const account = await newAccount(server);
    const { tokens } = await codeFlow(client, clientAuth, account);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
    );
    await assertOAuthError(
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
      ),
      'invalid_grant',
    );
    await assertTokenRejected(refreshed.access_token);
  });

  test('a wrong client_secret is invalid_client (401); with Basic, the challenge surfaces first', async () => {
    const post = await registerClient('client_secret_post');
    await assertOAuthError(
      oauth.processRefreshTokenResponse(
        as,
        post.client,
        await oauth.refreshTokenGrantRequest(
          as,
          post.client,
          oauth.ClientSecretPost('not-the-secret'),
          'whatever',
          insecure,
        ),
      ),
      'invalid_client',
      401,
    );
    // RFC 6749 §5.2: a client that used Basic gets a WWW-Authenticate challenge with the 401.
    const basic = await registerClient('client_secret_basic');
    await assert.rejects(
      oauth.processRefreshTokenResponse(
        as,
        basic.client,
        await oauth.refreshTokenGrantRequest(
          as,
          basic.client,
          oauth.ClientSecretBasic('not-the-secret'),
          'whatever',
          insecure,
        ),
      ),
      (error: unknown) => {
        assert.ok(error instanceof oauth.WWWAuthenticateChallengeError, String(error));
        assert.equal(error.status, 401);
        assert.equal(error.cause[0]?.scheme, 'basic');
        return true;
      },
    );
  });
});

describe('device authorization flow (RFC 8628, with PKCE)', () => {
  /**
   * The device authorization request (PKCE as additional parameters) and its response, checked
   * by oauth4webapi's processDeviceAuthorizationResponse.
   *
   * KNOWN DEVIATION, kept on purpose: the interface spec (service-interface.md, "Device login
   * response (status 201)" and POST /v4/device) requires 201, while RFC 8628 §3.2 says 200 and
   * oauth4webapi rejects any other status (OAUTH_RESPONSE_IS_NOT_CONFORM). The test pins both
   * facts, then hands oauth4webapi the same body and headers with status 200 so that every other
   * check of the response is still the library's. If the server ever answers 200, drop the
   * re-wrap and call processDeviceAuthorizationResponse on the response directly.
   */
  async function startDeviceLogin(client: oauth.Client, clientAuth: oauth.ClientAuth) {
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const response = await oauth.deviceAuthorizationRequest(
      as,
      client,
      clientAuth,
      {
        scope: SCOPE,
        code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
      },
      insecure,
    );
    assert.equal(response.status, 201, 'the interface spec says 201');
    const body = await response.clone().text();
    await assert.rejects(
      oauth.processDeviceAuthorizationResponse(as, client, response),
      (error: unknown) =>
        error instanceof oauth.OperationProcessingError && error.code === oauth.RESPONSE_IS_NOT_CONFORM,
    );
    const device = await oauth.processDeviceAuthorizationResponse(
      as,
      client,
      new Response(body, { status: 200, headers: response.headers }),
    );
    assert.match(device.device_code, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.match(device.user_code, /^[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}$/);
    assert.equal(device.verification_uri, `${ISSUER}/device`);
    assert.equal(device.verification_uri_complete, `${ISSUER}/device?user_code=${device.user_code}`);
    assert.equal(device.interval, 5);
    assert.equal(device.expires_in, 600);
    return { device, codeVerifier };
  }

  /** One poll of the token endpoint with the device code grant. */
  async function poll(client: oauth.Client, clientAuth: oauth.ClientAuth, deviceCode: string, codeVerifier: string) {
    const response = await oauth.deviceCodeGrantRequest(as, client, clientAuth, deviceCode, {
      ...insecure,
      additionalParameters: { code_verifier: codeVerifier },
    });
    return oauth.processDeviceCodeResponse(as, client, response);
  }

  /** The person: opens verification_uri, types the user code, signs in and decides. */
  async function decideOnDevicePage(
    device: oauth.DeviceAuthorizationResponse,
    account: Account,
    decision: 'approve' | 'deny',
  ) {
    const browser = new FormClient(server);
    const entered = await browser.submit(onTestServer(device.verification_uri), {
      user_code: device.user_code.toLowerCase(),
    });
    assert.equal(entered.status, 303, entered.text);
    const decided = await signInAndDecide(browser, entered.location!, account, decision);
    assert.equal(decided.status, 200, decided.text);
    return decided.text;
  }

  test('public client: pending, approval, tokens after the interval; the tokens refresh', async () => {
    const { client, clientAuth } = await registerClient('none');
    const account = await newAccount(server);
    const { device, codeVerifier } = await startDeviceLogin(client, clientAuth);

    const firstPollAt = Date.now();
    await assertOAuthError(poll(client, clientAuth, device.device_code, codeVerifier), 'authorization_pending');

    assert.match(await decideOnDevicePage(device, account, 'approve'), /Device connected/);

    // Respect the interval since the first poll (sooner would be slow_down).
    await sleep(Math.max(0, firstPollAt + device.interval! * 1000 + 250 - Date.now()));
    const tokens = await poll(client, clientAuth, device.device_code, codeVerifier);
    assertTokenResponse(tokens);
    assert.deepEqual(await whoAmI(tokens.access_token), { userId: account.userId, username: account.username });

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
    );
    assertTokenResponse(refreshed);
    assert.equal((await whoAmI(refreshed.access_token)).userId, account.userId);

    // The device code is single use.
    await assertOAuthError(poll(client, clientAuth, device.device_code, codeVerifier), 'invalid_grant');
  });

  test('confidential client (client_secret_basic): approval first, then one poll', async () => {
    const { client, clientAuth } = await registerClient('client_secret_basic');
    const account = await newAccount(server);
    const { device, codeVerifier } = await startDeviceLogin(client, clientAuth);
    await decideOnDevicePage(device, account, 'approve');
    const tokens = await poll(client, clientAuth, device.device_code, codeVerifier);
    assertTokenResponse(tokens);
    assert.equal((await whoAmI(tokens.access_token)).userId, account.userId);
  });

  test('polling sooner than the interval is slow_down', async () => {
    const { client, clientAuth } = await registerClient('none');
    const { device, codeVerifier } = await startDeviceLogin(client, clientAuth);
    await assertOAuthError(poll(client, clientAuth, device.device_code, codeVerifier), 'authorization_pending');
    await assertOAuthError(poll(client, clientAuth, device.device_code, codeVerifier), 'slow_down');
  });

  test('a wrong code_verifier is invalid_grant; a denial is access_denied', async () => {
    const { client, clientAuth } = await registerClient('none');
    const account = await newAccount(server);
    const { device, codeVerifier } = await startDeviceLogin(client, clientAuth);
    await decideOnDevicePage(device, account, 'deny');
    await assertOAuthError(
      poll(client, clientAuth, device.device_code, oauth.generateRandomCodeVerifier()),
      'invalid_grant',
    );
    await assertOAuthError(poll(client, clientAuth, device.device_code, codeVerifier), 'access_denied');
  });
});
