/**
 * Two independent standard client libraries configured by the discovery document alone (RFC 8414):
 * oauth4webapi and openid-client 6. Each runs a complete authorization code flow with PKCE, with
 * the RFC 9207 iss check on (the metadata advertises it, so a missing or wrong iss fails), a
 * refresh, an introspection and a revocation. The only other settings are the libraries' documented
 * opt-ins for a plain-http issuer on loopback.
 *
 * The server's BASE_URL is its own address here, so every URL the clients read is one they can reach.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import * as openid from 'openid-client';
import { FormClient, newAccount, newApp } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const SCOPE = 'common users:read';
/** A desktop app registers the loopback IP without a port and listens wherever the system lets it. */
const REGISTERED_REDIRECT = 'http://127.0.0.1/callback';
const insecure = { [oauth.allowInsecureRequests]: true } as const;

type Account = Awaited<ReturnType<typeof newAccount>>;

let server: TestServer;
let account: Account;

before(async () => {
  server = await startServer({ baseUrlIsOwnAddress: true });
  account = await newAccount(server);
});
after(() => server.close());

/**
 * A native app's redirect listener on an ephemeral loopback port: answers the browser and hands
 * over the URL it was called with.
 */
async function redirectListener(): Promise<{
  redirectUri: string;
  received: Promise<URL>;
  close: () => Promise<void>;
}> {
  let deliver!: (url: URL) => void;
  const received = new Promise<URL>((resolve) => (deliver = resolve));
  const listener: Server = createServer((request, response) => {
    deliver(new URL(request.url!, `http://127.0.0.1:${(listener.address() as { port: number }).port}`));
    response.end('You can close this window.');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as { port: number };
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    received,
    close: () => new Promise((resolve) => listener.close(() => resolve())),
  };
}

/**
 * The browser: opens the authorization URL, signs in and approves on the service's pages, then
 * follows the redirect to the app's listener. Answers the URL the app received.
 */
async function browserSignIn(
  authorizationUrl: URL,
  listener: Awaited<ReturnType<typeof redirectListener>>,
): Promise<URL> {
  const browser = new FormClient(server);
  const start = await browser.fetch(authorizationUrl.href);
  assert.equal(start.status, 302, start.text);
  const page = start.location!;
  const signIn = await browser.fetch(page);
  const signedIn = await browser.submitOn(signIn.text, { username: account.username, password: account.password });
  assert.equal(signedIn.status, 303, signedIn.text);
  const consent = await browser.fetch(page);
  const decided = await browser.submitOn(consent.text, { decision: 'approve' }, /consent$/);
  assert.equal(decided.status, 303, decided.text);
  assert.ok(decided.location!.startsWith(listener.redirectUri), decided.location!);
  await fetch(decided.location!);
  return listener.received;
}

async function registerApp(confidential: boolean) {
  return newApp(server, { scopes: SCOPE.split(' '), confidential, redirectUris: [REGISTERED_REDIRECT] });
}

describe('oauth4webapi, configured from the discovery document', () => {
  let as: oauth.AuthorizationServer;
  before(async () => {
    const issuer = new URL(server.url);
    as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
    assert.equal(as.authorization_response_iss_parameter_supported, true);
  });

  /** The authorization request as the library's user builds it from the metadata. */
  async function signIn(client: oauth.Client, clientAuth: oauth.ClientAuth) {
    const listener = await redirectListener();
    try {
      const codeVerifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const url = new URL(as.authorization_endpoint!);
      url.search = new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: listener.redirectUri,
        response_type: 'code',
        scope: SCOPE,
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
      }).toString();
      const callback = await browserSignIn(url, listener);
      // With authorization_response_iss_parameter_supported, a response without iss, or with another one, is refused.
      const withoutIss = new URL(callback);
      withoutIss.searchParams.delete('iss');
      assert.throws(() => oauth.validateAuthResponse(as, client, withoutIss, state), oauth.OperationProcessingError);
      const wrongIss = new URL(callback);
      wrongIss.searchParams.set('iss', 'https://attacker.example');
      assert.throws(() => oauth.validateAuthResponse(as, client, wrongIss, state), oauth.OperationProcessingError);
      const params = oauth.validateAuthResponse(as, client, callback, state);
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        clientAuth,
        params,
        listener.redirectUri,
        codeVerifier,
        insecure,
      );
      return await oauth.processAuthorizationCodeResponse(as, client, response);
    } finally {
      await listener.close();
    }
  }

  async function userStatus(accessToken: string) {
    const response = await oauth
      .protectedResourceRequest(accessToken, 'GET', new URL(`${as.issuer}/v4/user`), undefined, undefined, insecure)
      .catch((error: unknown) =>
        error instanceof oauth.WWWAuthenticateChallengeError ? error.response : Promise.reject(error),
      );
    return response.status;
  }

  const introspect = async (client: oauth.Client, clientAuth: oauth.ClientAuth, token: string) =>
    oauth.processIntrospectionResponse(
      as,
      client,
      await oauth.introspectionRequest(as, client, clientAuth, token, insecure),
    );

  const revoke = async (client: oauth.Client, clientAuth: oauth.ClientAuth, token: string) =>
    oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, token, insecure));

  test('confidential client (client_secret_basic): code flow, refresh, introspection, revocation', async () => {
    const app = await registerApp(true);
    const client: oauth.Client = { client_id: app.clientId };
    const clientAuth = oauth.ClientSecretBasic(app.clientSecret!);

    const tokens = await signIn(client, clientAuth);
    assert.equal(tokens.scope, SCOPE);
    assert.equal(await userStatus(tokens.access_token), 200);

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
    );
    assert.notEqual(refreshed.access_token, tokens.access_token);
    assert.equal(await userStatus(tokens.access_token), 401);

    const active = await introspect(client, clientAuth, refreshed.access_token);
    assert.equal(active.active, true);
    assert.equal(active.client_id, app.clientId);
    assert.equal(active.sub, account.userId);
    assert.equal(active.username, account.username);
    assert.equal(active.scope, SCOPE);
    assert.equal(active.token_type, 'Bearer');
    assert.equal(active.exp! - active.iat!, refreshed.expires_in);
    assert.equal((await introspect(client, clientAuth, refreshed.refresh_token!)).active, true);
    assert.equal((await introspect(client, clientAuth, tokens.access_token)).active, false);

    await revoke(client, clientAuth, refreshed.refresh_token!);
    assert.equal(await userStatus(refreshed.access_token), 401);
    assert.equal((await introspect(client, clientAuth, refreshed.access_token)).active, false);
    await assert.rejects(
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshed.refresh_token!, insecure),
      ),
      (error: unknown) => error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant',
    );
  });

  test('confidential client (client_secret_post): a wrong secret is invalid_client at both endpoints', async () => {
    const app = await registerApp(true);
    const client: oauth.Client = { client_id: app.clientId };
    const tokens = await signIn(client, oauth.ClientSecretPost(app.clientSecret!));
    const wrong = oauth.ClientSecretPost('not-the-secret');
    const isInvalidClient = (error: unknown) =>
      error instanceof oauth.ResponseBodyError && error.error === 'invalid_client' && error.status === 401;
    await assert.rejects(introspect(client, wrong, tokens.access_token), isInvalidClient);
    await assert.rejects(revoke(client, wrong, tokens.access_token), isInvalidClient);
    assert.equal(await userStatus(tokens.access_token), 200);
  });

  test('public client: code flow, refresh, revocation of the access token; introspection is refused', async () => {
    const app = await registerApp(false);
    const client: oauth.Client = { client_id: app.clientId, token_endpoint_auth_method: 'none' };
    const clientAuth = oauth.None();
    const tokens = await signIn(client, clientAuth);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
    );
    assert.equal(await userStatus(refreshed.access_token), 200);
    await assert.rejects(
      introspect(client, clientAuth, refreshed.access_token),
      (error: unknown) =>
        error instanceof oauth.ResponseBodyError && error.error === 'invalid_client' && error.status === 401,
    );
    await revoke(client, clientAuth, refreshed.access_token);
    assert.equal(await userStatus(refreshed.access_token), 401);
    await assert.rejects(
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshed.refresh_token!, insecure),
      ),
      (error: unknown) => error instanceof oauth.ResponseBodyError && error.error === 'invalid_grant',
    );
  });
});

describe('openid-client 6, configured from the discovery document', () => {
  /** openid-client's documented opt-in for a plain-http issuer; the issuer is discovered with RFC 8414's well-known path. */
  const discover = (clientId: string, secret: string | undefined, auth: openid.ClientAuth) =>
    openid.discovery(
      new URL(server.url),
      clientId,
      secret === undefined ? undefined : { client_secret: secret },
      auth,
      {
        execute: [openid.allowInsecureRequests],
        algorithm: 'oauth2',
      },
    );

  async function signIn(config: openid.Configuration) {
    const listener = await redirectListener();
    try {
      const verifier = openid.randomPKCECodeVerifier();
      const state = openid.randomState();
      const url = openid.buildAuthorizationUrl(config, {
        redirect_uri: listener.redirectUri,
        scope: SCOPE,
        state,
        code_challenge: await openid.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      const callback = await browserSignIn(url, listener);
      assert.equal(callback.searchParams.get('iss'), config.serverMetadata().issuer);
      // The iss check is on: the same response with another iss is refused before any token request.
      const forged = new URL(callback);
      forged.searchParams.set('iss', 'https://attacker.example');
      await assert.rejects(
        openid.authorizationCodeGrant(config, forged, { pkceCodeVerifier: verifier, expectedState: state }),
      );
      return await openid.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
    } finally {
      await listener.close();
    }
  }

  async function userStatus(config: openid.Configuration, accessToken: string) {
    try {
      return (
        await openid.fetchProtectedResource(
          config,
          accessToken,
          new URL(`${config.serverMetadata().issuer}/v4/user`),
          'GET',
        )
      ).status;
    } catch (error) {
      if (error instanceof openid.WWWAuthenticateChallengeError) return error.response.status;
      throw error;
    }
  }

  test('the discovered metadata names every endpoint and the iss support', async () => {
    const app = await registerApp(false);
    const config = await discover(app.clientId, undefined, openid.None());
    const metadata = config.serverMetadata();
    assert.equal(metadata.issuer, server.url);
    assert.equal(metadata.authorization_response_iss_parameter_supported, true);
    for (const endpoint of [
      'authorization_endpoint',
      'token_endpoint',
      'revocation_endpoint',
      'introspection_endpoint',
      'device_authorization_endpoint',
    ] as const) {
      assert.ok(metadata[endpoint]?.startsWith(`${server.url}/v4/`), endpoint);
    }
  });

  test('confidential client (client_secret_basic): code flow, refresh, introspection, revocation', async () => {
    const app = await registerApp(true);
    const config = await discover(app.clientId, app.clientSecret!, openid.ClientSecretBasic(app.clientSecret!));

    const tokens = await signIn(config);
    assert.equal(tokens.scope, SCOPE);
    assert.equal(tokens.expires_in, 3600);
    assert.equal(await userStatus(config, tokens.access_token), 200);

    const refreshed = await openid.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal(await userStatus(config, tokens.access_token), 401);
    assert.equal(await userStatus(config, refreshed.access_token), 200);

    const active = await openid.tokenIntrospection(config, refreshed.access_token);
    assert.equal(active.active, true);
    assert.equal(active.sub, account.userId);
    assert.equal(active.username, account.username);
    assert.equal(active.client_id, app.clientId);
    const refreshInfo = await openid.tokenIntrospection(config, refreshed.refresh_token!, {
      token_type_hint: 'refresh_token',
    });
    assert.equal(refreshInfo.active, true);
    assert.equal(refreshInfo.exp! - refreshInfo.iat!, 30 * 24 * 3600);

    await openid.tokenRevocation(config, refreshed.access_token, { token_type_hint: 'access_token' });
    assert.equal(await userStatus(config, refreshed.access_token), 401);
    assert.deepEqual(await openid.tokenIntrospection(config, refreshed.refresh_token!), { active: false });
    await assert.rejects(
      openid.refreshTokenGrant(config, refreshed.refresh_token!),
      (error: unknown) => error instanceof openid.ResponseBodyError && error.error === 'invalid_grant',
    );
    // Revoking again, or an unknown token, is still a success to the client.
    await openid.tokenRevocation(config, refreshed.access_token);
    await openid.tokenRevocation(config, 'never-issued');
  });

  test('confidential client (client_secret_post): another client’s token is inactive to it and not revoked by it', async () => {
    const mine = await registerApp(true);
    const theirs = await registerApp(true);
    const myConfig = await discover(mine.clientId, mine.clientSecret!, openid.ClientSecretPost(mine.clientSecret!));
    const theirConfig = await discover(
      theirs.clientId,
      theirs.clientSecret!,
      openid.ClientSecretPost(theirs.clientSecret!),
    );
    const theirTokens = await signIn(theirConfig);
    assert.deepEqual(await openid.tokenIntrospection(myConfig, theirTokens.access_token), { active: false });
    await openid.tokenRevocation(myConfig, theirTokens.refresh_token!);
    assert.equal((await openid.tokenIntrospection(theirConfig, theirTokens.access_token)).active, true);
    assert.equal(await userStatus(theirConfig, theirTokens.access_token), 200);
  });

  test('public client: code flow, refresh, revocation of the refresh token', async () => {
    const app = await registerApp(false);
    const config = await discover(app.clientId, undefined, openid.None());
    const tokens = await signIn(config);
    const refreshed = await openid.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal(await userStatus(config, refreshed.access_token), 200);
    await openid.tokenRevocation(config, refreshed.refresh_token!);
    assert.equal(await userStatus(config, refreshed.access_token), 401);
  });
});
