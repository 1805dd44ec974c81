/**
 * /account/apps in a real browser (Debian's Chromium via playwright-core): a developer signs in
 * (and is returned to the page), meets the form's errors, registers a confidential application,
 * reads its client id and secret, edits it; then a user signs in to that application in the
 * browser, through a consent page that names its developer, and the code is exchanged by a
 * standard client (oauth4webapi) with the secret the page showed. Screenshots of every state at
 * phone and desktop size go to test-artifacts/screenshots/.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import type { Browser, Page } from 'playwright-core';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import {
  checkLayoutAndCapture,
  clickAndLoad,
  launchBrowser,
  startBrowserServer,
  withPage,
} from '../helpers/browser.ts';
import { newAccount } from '../helpers/oauth.ts';
import type { TestServer } from '../helpers/server.ts';

/** Registered without a port; the client listens on whichever it got (RFC 8252 §7.3). */
const REGISTERED_CALLBACK = 'http://127.0.0.1/callback';
let CALLBACK = '';

describe('developer applications in a real browser', () => {
  let server: TestServer;
  let browser: Browser;
  /** The client's side: a native app listening on an ephemeral loopback port for the redirect. */
  let client: Server;

  before(async () => {
    [server, browser] = await Promise.all([startBrowserServer(), launchBrowser()]);
    client = createServer((_request, response) =>
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!DOCTYPE html><title>Back</title><p>Back at the application</p>'),
    );
    await new Promise<void>((resolve) => client.listen(0, '127.0.0.1', resolve));
    CALLBACK = `http://127.0.0.1:${(client.address() as AddressInfo).port}/callback`;
  });
  after(async () => {
    client?.closeAllConnections();
    client?.close();
    await browser?.close();
    await server?.close();
  });

  /** Opens /account/apps signed out: sign in (and the two-step code), and the browser is back on /account/apps. */
  async function signInToApps(page: Page, account: { username: string; password: string }, secret?: string) {
    await page.goto(`${server.url}/account/apps`);
    assert.equal(new URL(page.url()).pathname, '/account/sign-in');
    await page.getByLabel('Username or email').fill(account.username);
    await page.getByLabel('Password').fill(account.password);
    await clickAndLoad(page, page.getByRole('button', { name: 'Sign in' }));
    if (secret) {
      await page.getByLabel('Verification code').fill(totpCode(secret));
      await clickAndLoad(page, page.getByRole('button', { name: 'Verify' }));
    }
    await page.getByRole('heading', { name: 'Your applications' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/account/apps', 'returned to /account/apps after signing in');
  }

  test('two-step off: the page says to turn it on first and shows no form', async () => {
    const account = await newAccount(server);
    await withPage(browser, {}, async (page) => {
      await signInToApps(page, account);
      await page.locator('#two-step-required').waitFor();
      assert.equal(await page.locator('#two-step-required a[href="/account"]').count(), 1);
      assert.equal(await page.locator('textarea[name=redirect_uri]').count(), 0);
      await checkLayoutAndCapture(page, 'apps-two-step-off', { hasForm: false });
      // The account page links here.
      await page.goto(`${server.url}/account`);
      await page.locator('#account-apps-link').click();
      await page.waitForURL(`${server.url}/account/apps`);
    });
  });

  test('register (with errors first), read the credentials, edit; a user signs in to it through the consent page naming the developer', async () => {
    const secret = newTotpSecret();
    const developer = await newAccount(server, { totpSecret: secret });
    let clientId = '';
    let clientSecret = '';
    await withPage(browser, {}, async (page) => {
      await signInToApps(page, developer, secret);
      await page.getByText('You have not registered an application yet.').waitFor();

      // Errors next to their inputs; what was typed is kept.
      await page.locator('input[name=name]').fill('ab');
      await page.locator('input[name=website]').fill('https://guild.example');
      await page.locator('textarea[name=redirect_uri]').fill('http://guild.example/callback');
      // The browser's own checks (minlength) are skipped: the server's answer is what is tested.
      await page.locator('form.app-form').evaluate((form) => form.setAttribute('novalidate', ''));
      const refused = await clickAndLoad(page, page.getByRole('button', { name: 'Register application' }));
      assert.equal(refused.status(), 400);
      assert.match((await page.locator('#name-error').textContent()) ?? '', /3 to 64 characters/);
      assert.match((await page.locator('#redirect-uri-error').textContent()) ?? '', /must use https/);
      assert.equal(await page.locator('#website-error').count(), 0);
      assert.equal(await page.locator('input[name=website]').inputValue(), 'https://guild.example');
      await checkLayoutAndCapture(page, 'apps-create-errors');

      await page.locator('input[name=name]').fill('Guild Roster');
      await page.locator('textarea[name=redirect_uri]').fill(`https://guild.example/callback\n${REGISTERED_CALLBACK}`);
      await page.locator('input[name=scope][value="users:read"]').check();
      await page.locator('input[name=confidential]').check();
      const created = await clickAndLoad(page, page.getByRole('button', { name: 'Register application' }));
      assert.equal(created.status(), 200);
      clientId = (await page.locator('#client-id').textContent())!;
      clientSecret = (await page.locator('#client-secret').textContent())!;
      assert.match(clientId, /^[0-9a-f-]{36}$/);
      assert.ok(clientSecret.length >= 32);
      assert.equal(
        await page.locator('#discovery-url').textContent(),
        `${server.url}/.well-known/oauth-authorization-server`,
      );
      await checkLayoutAndCapture(page, 'apps-created', { hasForm: false });

      await page.getByRole('link', { name: 'Back to your applications' }).first().click();
      await page.getByRole('heading', { name: 'Your applications' }).waitFor();
      const row = page.locator('li.app-row', { hasText: 'Guild Roster' });
      assert.equal(await row.locator('.client-id').textContent(), clientId);
      assert.match((await row.locator('.kind').textContent()) ?? '', /Confidential/);
      assert.equal(await row.locator('ul.uris li').count(), 2);
      assert.equal(await page.getByText(clientSecret).count(), 0, 'the secret is shown only once');
      await checkLayoutAndCapture(page, 'apps-list');

      await row.getByRole('link', { name: 'Edit Guild Roster' }).click();
      await page.getByRole('heading', { name: /^Edit / }).waitFor();
      assert.equal(await page.locator('input[name=name]').inputValue(), 'Guild Roster');
      await checkLayoutAndCapture(page, 'apps-edit');
      await page.locator('input[name=name]').fill('Guild Roster Pro');
      const saved = await clickAndLoad(page, page.getByRole('button', { name: 'Save changes' }));
      assert.equal(saved.status(), 303);
      await page.getByRole('status').waitFor();
      assert.equal(await page.locator('li.app-row .app-name').textContent(), 'Guild Roster Pro');
    });

    // A user signs in to the application in the browser; the redirect back to the client is caught.
    const user = await newAccount(server);
    const as = await oauth.processDiscoveryResponse(
      new URL(server.url),
      await oauth.discoveryRequest(new URL(server.url), { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
    );
    const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'client_secret_post' };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: 'common users:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    let callback: URL | undefined;
    await withPage(browser, {}, async (page) => {
      await page.goto(url.href);
      await page.getByLabel('Username or email').fill(user.username);
      await page.getByLabel('Password').fill(user.password);
      await clickAndLoad(page, page.getByRole('button', { name: 'Sign in' }));
      await page.getByRole('heading', { name: 'Allow Guild Roster Pro to use your account?' }).waitFor();
      assert.match((await page.locator('.made-by').textContent()) ?? '', new RegExp(`made by ${developer.username}`));
      const website = page.locator('a.app-website');
      assert.equal(await website.getAttribute('href'), 'https://guild.example/');
      assert.equal(await website.getAttribute('rel'), 'noopener noreferrer nofollow');
      await checkLayoutAndCapture(page, 'consent-made-by');
      await Promise.all([
        page.waitForURL((at) => at.href.startsWith(CALLBACK)),
        page.getByRole('button', { name: 'Allow' }).click(),
      ]);
      callback = new URL(page.url());
    });
    const params = oauth.validateAuthResponse(as, client, callback!, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.ClientSecretPost(clientSecret),
        params,
        CALLBACK,
        verifier,
        { [oauth.allowInsecureRequests]: true },
      ),
    );
    const me = await server.request('GET', '/v4/user', { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(me.status, 200);
    assert.equal(me.body.userId, user.userId);
  });
});
