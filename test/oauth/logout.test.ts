/**
 * RP-initiated logout at /v4/logout through a real relying party (openid-client 6's end-session
 * URL) after a real sign-in through the pages: the confirmation page, a hint naming this browser's
 * sign-in ending it at once, and bad requests (unregistered return address, forged, foreign or
 * ancient hints) refused with a 400 page while nothing ends.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateKeyPair, SignJWT } from 'jose';
import * as openid from 'openid-client';
import { FormClient, newAccount } from '../helpers/oauth.ts';
import { isSignedIn, newRelyingParty, POST_LOGOUT_URI, sessionExists, signInWith } from '../helpers/relying-party.ts';
import { submitForm } from '../helpers/self-service.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: Awaited<ReturnType<typeof newAccount>>;
let appA: string;
let appB: string;

before(async () => {
  server = await startServer({ baseUrlIsOwnAddress: true });
  account = await newAccount(server);
  appA = await newRelyingParty(server, { name: 'Alpha Forum' });
  appB = await newRelyingParty(server, { name: 'Beta Wiki' });
});
after(() => server.close());

/** A browser signed in to both applications (each session started from its one sign-in). */
async function signedInToBoth() {
  const browser = new FormClient(server);
  const a = await signInWith(server, appA, browser, account);
  const b = await signInWith(server, appB, browser, account);
  return { browser, a, b };
}

/** The end-session URL as openid-client builds it (it adds client_id). */
const endSessionUrl = (config: openid.Configuration, params: Record<string, string>) =>
  openid.buildEndSessionUrl(config, params).href;

/** Nothing ended: the sign-in and both sessions are still there. */
async function assertNothingEnded(setup: Awaited<ReturnType<typeof signedInToBoth>>) {
  assert.ok(await sessionExists(server, setup.a.sid), 'A session kept');
  assert.ok(await sessionExists(server, setup.b.sid), 'B session kept');
  assert.ok(await isSignedIn(setup.browser), 'browser still signed in');
}

describe('RP-initiated logout', () => {
  test('without a hint the person confirms; then the sign-in and that application’s sessions end', async () => {
    const setup = await signedInToBoth();
    const url = endSessionUrl(setup.a.config, { post_logout_redirect_uri: POST_LOGOUT_URI, state: 'st8' });
    assert.ok(url.startsWith(`${server.url}/v4/logout?`), url);
    const page = await setup.browser.fetch(url);
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /Alpha Forum/);
    assert.match(page.text, /<button type="submit" name="logout" value="yes"/);
    assert.match(page.text, /name="_csrf"/);
    await assertNothingEnded(setup);

    // Without the CSRF token the confirmation is refused.
    const forged = await setup.browser.fetch('/v4/logout', {
      form: { logout: 'yes', client_id: appA, post_logout_redirect_uri: POST_LOGOUT_URI },
    });
    assert.equal(forged.status, 403, forged.text);
    await assertNothingEnded(setup);

    const confirmed = await submitForm(setup.browser, page.text, { logout: 'yes' }, /\/v4\/logout$/);
    assert.equal(confirmed.status, 303, confirmed.text);
    const back = new URL(confirmed.location!);
    assert.equal(`${back.origin}${back.pathname}`, POST_LOGOUT_URI);
    assert.equal(back.searchParams.get('state'), 'st8');
    assert.equal(await isSignedIn(setup.browser), false, 'browser signed out');
    assert.equal(await sessionExists(server, setup.a.sid), false, 'A session ended');
    // DESIGN: only the sessions of the application named end; B keeps its own.
    assert.ok(await sessionExists(server, setup.b.sid), 'B session kept');
    await assert.rejects(openid.refreshTokenGrant(setup.a.config, setup.a.tokens.refresh_token!));
  });

  test('a valid id_token_hint naming this sign-in ends it at once and returns with state', async () => {
    const setup = await signedInToBoth();
    const url = endSessionUrl(setup.a.config, {
      id_token_hint: setup.a.idToken,
      post_logout_redirect_uri: POST_LOGOUT_URI,
      state: 'abc',
    });
    const reply = await setup.browser.fetch(url);
    assert.equal(reply.status, 303, reply.text);
    assert.equal(reply.location, `${POST_LOGOUT_URI}?state=abc`);
    assert.equal(await isSignedIn(setup.browser), false);
    assert.equal(await sessionExists(server, setup.a.sid), false);
    assert.ok(await sessionExists(server, setup.b.sid));
  });

  test('POST from the application with a hint works the same; without a return address a signed-out page', async () => {
    const setup = await signedInToBoth();
    const reply = await setup.browser.fetch('/v4/logout', { form: { id_token_hint: setup.b.idToken } });
    assert.equal(reply.status, 200, reply.text);
    assert.match(reply.text, /You are signed out/);
    assert.match(reply.text, /href="\/account\/sign-in"/);
    assert.equal(await isSignedIn(setup.browser), false);
    assert.equal(await sessionExists(server, setup.b.sid), false);
    assert.ok(await sessionExists(server, setup.a.sid));
  });

  test('a hint naming another browser’s sign-in asks to confirm', async () => {
    const setup = await signedInToBoth();
    const other = await signedInToBoth();
    const reply = await setup.browser.fetch(endSessionUrl(setup.a.config, { id_token_hint: other.a.idToken }));
    assert.equal(reply.status, 200, reply.text);
    assert.match(reply.text, /name="logout" value="yes"/);
    await assertNothingEnded(setup);
    await assertNothingEnded(other);
  });

  test('an unregistered post_logout_redirect_uri is a 400 page and nothing ends', async () => {
    const setup = await signedInToBoth();
    for (const params of <Array<Record<string, string>>>[
      { id_token_hint: setup.a.idToken, post_logout_redirect_uri: 'https://evil.example/after' },
      { post_logout_redirect_uri: 'https://evil.example/after' },
    ]) {
      const reply = await setup.browser.fetch(endSessionUrl(setup.a.config, params));
      assert.equal(reply.status, 400, reply.text);
      assert.match(reply.text, /did not register https:\/\/evil\.example\/after/);
      assert.match(reply.text, /Nothing was signed out/);
      assert.equal(reply.location, null);
    }
    // Without an application named, no return address can be checked.
    const unnamed = await setup.browser.fetch(
      `/v4/logout?post_logout_redirect_uri=${encodeURIComponent(POST_LOGOUT_URI)}`,
    );
    assert.equal(unnamed.status, 400, unnamed.text);
    await assertNothingEnded(setup);
  });

  test('a forged, foreign or ancient id_token_hint, or one that disagrees with client_id, is a 400 page', async () => {
    const setup = await signedInToBoth();
    const claims = { ...setup.a.tokens.claims() };
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'made-up' }).sign(privateKey);
    const now = Math.floor(Date.now() / 1000);
    const ancient = await server.app.signingKeys.sign(
      { ...claims, iat: now - 40 * 86_400, exp: now - 40 * 86_400 + 3600 },
      'RS256',
    );
    const otherIssuer = await server.app.signingKeys.sign({ ...claims, iss: 'https://elsewhere.example' }, 'RS256');
    const cases: Array<[string, string, RegExp]> = [
      [`id_token_hint=${forged}`, 'forged', /not an ID token this service issued/],
      [`id_token_hint=${otherIssuer}`, 'another issuer', /not an ID token this service issued/],
      [`id_token_hint=${ancient}`, 'ancient', /too old/],
      [`id_token_hint=${setup.b.idToken}&client_id=${appA}`, 'foreign', /another application/],
      [`id_token_hint=not.a.jwt`, 'garbage', /not an ID token/],
      [`client_id=00000000-0000-7000-8000-000000000000`, 'unknown client', /unknown/],
    ];
    for (const [query, what, message] of cases) {
      const reply = await setup.browser.fetch(
        `/v4/logout?${query}&post_logout_redirect_uri=${encodeURIComponent(POST_LOGOUT_URI)}`,
      );
      assert.equal(reply.status, 400, `${what}: ${reply.text}`);
      assert.match(reply.text, message, what);
      const posted = await setup.browser.fetch('/v4/logout', { form: Object.fromEntries(new URLSearchParams(query)) });
      assert.equal(posted.status, 400, `${what} (POST): ${posted.text}`);
    }
    await assertNothingEnded(setup);
  });

  test('a browser that is not signed in goes straight back', async () => {
    const setup = await signedInToBoth();
    const stranger = new FormClient(server);
    const reply = await stranger.fetch(
      endSessionUrl(setup.a.config, { post_logout_redirect_uri: POST_LOGOUT_URI, state: 'x' }),
    );
    assert.equal(reply.status, 303, reply.text);
    assert.equal(reply.location, `${POST_LOGOUT_URI}?state=x`);
    await assertNothingEnded(setup);
  });
});
