import assert from 'node:assert/strict';
import * as openid from 'openid-client';
import { createApplication } from '../../src/oauth/clients.ts';
import { type FormClient, REDIRECT_URI } from './oauth.ts';
import type { TestServer } from './server.ts';

/** Where the logout tests' applications return to after signing out. */
export const POST_LOGOUT_URI = 'http://127.0.0.1:9/signed-out';

/** An application registered for OpenID Connect logout (and a back channel when given). */
export async function newRelyingParty(
  server: TestServer,
  options: { name?: string; backchannelLogoutUri?: string; idTokenAlg?: string } = {},
): Promise<string> {
  const { clientId } = await createApplication(server.app.database.db, {
    name: options.name ?? 'Relying Party',
    redirectUris: [REDIRECT_URI],
    scopes: ['common'],
    confidential: false,
    postLogoutRedirectUris: [POST_LOGOUT_URI],
    backchannelLogoutUri: options.backchannelLogoutUri ?? null,
    idTokenAlg: options.idTokenAlg ?? null,
  });
  return clientId;
}

/** openid-client configured by discovery (the server's BASE_URL must be its own address). */
export const discover = (server: TestServer, clientId: string) =>
  openid.discovery(new URL(server.url), clientId, undefined, openid.None(), {
    execute: [openid.allowInsecureRequests],
  });

/**
 * openid-client's code flow with PKCE and a nonce, through the pages: the browser signs in (unless
 * it is already) and approves. Answers the configuration, the token response and the session id (sid).
 */
export async function signInWith(
  server: TestServer,
  clientId: string,
  browser: FormClient,
  account: { username: string; password: string },
) {
  const config = await discover(server, clientId);
  const verifier = openid.randomPKCECodeVerifier();
  const state = openid.randomState();
  const nonce = openid.randomNonce();
  const url = openid.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'openid profile',
    state,
    nonce,
    code_challenge: await openid.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const start = await browser.fetch(url.href);
  assert.equal(start.status, 302, start.text);
  const page = start.location!;
  let current = await browser.fetch(page);
  if (current.text.includes('name="password"')) {
    const signedIn = await browser.submitOn(current.text, { username: account.username, password: account.password });
    assert.equal(signedIn.status, 303, signedIn.text);
    current = await browser.fetch(page);
  }
  const decided = await browser.submitOn(current.text, { decision: 'approve' }, /consent$/);
  assert.equal(decided.status, 303, decided.text);
  const tokens = await openid.authorizationCodeGrant(config, new URL(decided.location!), {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
  const sid = tokens.claims()!.sid as string;
  assert.ok(sid);
  return { config, tokens, sid, idToken: tokens.id_token! };
}

/** Whether the session still exists. */
export async function sessionExists(server: TestServer, sessionId: string): Promise<boolean> {
  const row = await server.app.database.db
    .selectFrom('sessions')
    .select('session_id')
    .where('session_id', '=', sessionId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether the browser is signed in (the account page shows instead of sending it to sign in). */
export async function isSignedIn(browser: FormClient): Promise<boolean> {
  const page = await browser.fetch('/account');
  return page.status === 200;
}
