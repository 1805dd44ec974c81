/**
 * The login pages (DESIGN "Login pages" and "v4 login") in a real browser: Debian's Chromium
 * driven by playwright-core against the real server. The server's BASE_URL is the address the
 * browser reaches it at (see startBrowserServer), so its redirects and links are followed as
 * a user's browser would. Screenshots go to test-artifacts/screenshots/.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import * as OTPAuth from 'otpauth';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { newTotpSecret } from '../../src/accounts/totp.ts';
import { SCOPES } from '../../src/oauth/scopes.ts';
import {
  checkLayoutAndCapture,
  launchBrowser,
  startBrowserServer,
  watchPage,
  withPage as withBrowserPage,
} from '../helpers/browser.ts';
import { newAccount, newApp as newOAuthApp, pkcePair, tokenRequest } from '../helpers/oauth.ts';
import type { TestServer } from '../helpers/server.ts';

const APP_NAME = 'Browser Test App';
/** With OpenID Connect's scopes, which the consent page names in plain words too. */
const SCOPE = 'common email openid users:read';
/** Wrong user codes a browser (and an IP) may type on /device per minute (src/web/device-pages.ts). */
const WRONG_CODES_ALLOWED = 5;

describe('login pages in a real browser', () => {
  let server: TestServer;
  let browser: Browser;
  /** The client's redirect URI: a tiny local server standing in for the application. */
  let client: Server;
  let REDIRECT_URI: string;
  const arrivals: URL[] = [];

  before(async () => {
    client = createServer((request, response) => {
      arrivals.push(new URL(request.url!, REDIRECT_URI));
      response
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end('<!DOCTYPE html><title>Client</title><p>Back at the application</p>');
    });
    await new Promise<void>((resolve) => client.listen(0, '127.0.0.1', resolve));
    const address = client.address();
    REDIRECT_URI = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/callback`;
    [server, browser] = await Promise.all([startBrowserServer(), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    client.closeAllConnections();
    await new Promise((resolve) => client.close(resolve));
  });

  const newApp = (target: TestServer, options: Parameters<typeof newOAuthApp>[1] = {}) =>
    newOAuthApp(target, { redirectUris: [REDIRECT_URI], ...options });

  const withPage = (options: BrowserContextOptions, body: (page: Page) => Promise<void>) =>
    withBrowserPage(browser, options, body);

  function loginUrl(clientId: string, challenge: string, state: string, extra: Record<string, string> = {}) {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      scope: SCOPE,
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    });
    return `${server.url}/v4/login?${query}`;
  }

  const focusedId = (page: Page) => page.evaluate(() => document.activeElement?.id);

  /** Types the credentials with the keyboard into the fields found by their labels, then presses Enter. */
  async function typeCredentials(page: Page, username: string, password: string) {
    await page.getByLabel('Username or email').focus();
    await page.keyboard.type(username);
    await page.keyboard.press('Tab');
    assert.equal(
      await page.getByLabel('Password').evaluate((el) => el === document.activeElement),
      true,
      'Tab moves from username to password',
    );
    await page.keyboard.type(password);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/password')),
      page.keyboard.press('Enter'),
    ]);
    return response;
  }

  async function assertConsentPage(page: Page, username: string) {
    await page.getByRole('heading', { name: `Allow ${APP_NAME} to use your account?` }).waitFor();
    assert.deepEqual(await page.locator('ul.scopes li').allTextContents(), [
      SCOPES.common,
      SCOPES.email,
      SCOPES.openid,
      SCOPES['users:read'],
    ]);
    assert.match((await page.locator('form.account').textContent()) ?? '', new RegExp(`Signed in as ${username}\\.`));
    assert.equal(await page.getByRole('button', { name: 'Allow' }).isVisible(), true);
    assert.equal(await page.getByRole('button', { name: 'Deny' }).isVisible(), true);
  }

  /** Clicks Allow and answers where the browser ended up (the client's redirect URI). */
  async function approve(page: Page): Promise<URL> {
    await Promise.all([
      page.waitForURL((url) => `${url.origin}${url.pathname}` === REDIRECT_URI),
      page.getByRole('button', { name: 'Allow' }).click(),
    ]);
    assert.equal(await page.locator('p').textContent(), 'Back at the application');
    const url = new URL(page.url());
    assert.ok(
      arrivals.some((arrival) => arrival.href === url.href),
      'the client received the redirect',
    );
    return url;
  }

  async function exchange(clientId: string, back: URL, verifier: string, extra: Record<string, string> = {}) {
    const reply = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: clientId,
      code: back.searchParams.get('code')!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      ...extra,
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.scope, SCOPE);
    return reply.body;
  }

  async function assertTokenIsFor(accessToken: string, account: { userId: string; username: string }) {
    const me = await server.request('GET', '/v4/user', { headers: { authorization: `Bearer ${accessToken}` } });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.userId, account.userId);
    assert.equal(me.body.username, account.username);
  }

  async function redirectFlow(options: BrowserContextOptions, screenshots: boolean) {
    const app = await newApp(server, { name: APP_NAME, scopes: ['common', 'users:read'] });
    const account = await newAccount(server);
    const { verifier, challenge } = pkcePair();
    const state = randomBytes(8).toString('hex');
    await withPage(options, async (page) => {
      if (options.javaScriptEnabled === false) {
        await page.goto('data:text/html,<title>before</title><script>document.title = "script ran"</script>');
        assert.equal(await page.title(), 'before', 'scripts really are off in this context');
      }
      const landed = await page.goto(loginUrl(app.clientId, challenge, state));
      assert.equal(landed?.status(), 200);
      const start = landed?.request().redirectedFrom();
      assert.equal(start && new URL(start.url()).pathname, '/v4/login');
      assert.equal((await start!.response())?.status(), 302);
      const at = new URL(page.url());
      assert.equal(at.origin, server.url);
      assert.match(at.pathname, /^\/login\/[^/]+$/);
      assert.equal(await page.title(), 'Sign in');
      assert.match((await page.locator('main p.muted').textContent()) ?? '', new RegExp(`to continue to ${APP_NAME}`));
      if (screenshots) {
        assert.equal(await focusedId(page), 'username', 'the username field has the focus');
        await checkLayoutAndCapture(page, 'login');
      }
      const signedIn = await typeCredentials(page, account.username, account.password);
      assert.equal(signedIn.status(), 303);
      assert.equal(new URL(page.url()).pathname, at.pathname, 'back on the login page, now showing consent');
      await assertConsentPage(page, account.username);
      if (screenshots) await checkLayoutAndCapture(page, 'consent');
      const back = await approve(page);
      assert.equal(back.searchParams.get('state'), state);
      assert.match(back.searchParams.get('code') ?? '', /^\S{20,}$/);
      const tokens = await exchange(app.clientId, back, verifier);
      await assertTokenIsFor(tokens.access_token, account);
    });
  }

  test('redirect flow: GET /v4/login lands on the sign-in page; keyboard sign-in, consent and Allow redirect to the client with a code that exchanges for tokens', async () => {
    await redirectFlow({}, true);
  });

  test('a wrong password shows a visible error, empties the password and keeps the username; the corrected form then signs in', async () => {
    const app = await newApp(server, { name: APP_NAME, scopes: ['common', 'users:read'] });
    const account = await newAccount(server);
    const { challenge } = pkcePair();
    await withPage({}, async (page) => {
      await page.goto(loginUrl(app.clientId, challenge, 'st4te'));
      const refused = await typeCredentials(page, account.username, 'not the password');
      assert.equal(refused.status(), 401);
      const alert = page.getByRole('alert');
      await alert.waitFor();
      assert.equal(await alert.isVisible(), true);
      assert.equal((await alert.textContent())?.trim(), 'Wrong username or password.');
      assert.equal(await page.getByLabel('Password').inputValue(), '');
      assert.equal(await page.getByLabel('Username or email').inputValue(), account.username);
      await checkLayoutAndCapture(page, 'login-error');

      await page.getByLabel('Password').focus();
      await page.keyboard.type(account.password);
      const [accepted] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/password')),
        page.keyboard.press('Enter'),
      ]);
      assert.equal(accepted.status(), 303);
      await assertConsentPage(page, account.username);
    });
  });

  test('an account with two-step verification gets the code page after the password, and the current TOTP code continues to consent', async () => {
    const secret = newTotpSecret();
    const app = await newApp(server, { name: APP_NAME, scopes: ['common', 'users:read'] });
    const account = await newAccount(server, { totpSecret: secret });
    const { verifier, challenge } = pkcePair();
    await withPage({}, async (page) => {
      await page.goto(loginUrl(app.clientId, challenge, 'two-step-state'));
      const signedIn = await typeCredentials(page, account.username, account.password);
      assert.equal(signedIn.status(), 303);
      await page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
      assert.equal(await page.getByRole('heading', { name: /^Allow / }).count(), 0, 'no consent before the code');
      assert.equal(await page.getByLabel(/Trust this device/).count(), 0, 'no "trust this device" without a device_id');
      await checkLayoutAndCapture(page, 'two-step');
      const code = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) }).generate();
      await page.getByLabel('Verification code').focus();
      await page.keyboard.type(code);
      const [verified] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/two-step')),
        page.keyboard.press('Enter'),
      ]);
      assert.equal(verified.status(), 303);
      await assertConsentPage(page, account.username);
      const back = await approve(page);
      assert.equal(back.searchParams.get('state'), 'two-step-state');
      const tokens = await exchange(app.clientId, back, verifier);
      await assertTokenIsFor(tokens.access_token, account);
    });
  });

  /**
   * Types the current TOTP code (or the next step's: a step accepted once is not accepted again)
   * into the field found by its label and presses Enter; answers the POST's response.
   */
  async function typeTotpCode(page: Page, secret: string, step: 'current' | 'next' = 'current') {
    const code = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) }).generate({
      timestamp: Date.now() + (step === 'next' ? 30_000 : 0),
    });
    await page.getByLabel('Verification code').focus();
    await page.keyboard.type(code);
    const [verified] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/two-step')),
      page.keyboard.press('Enter'),
    ]);
    return verified;
  }

  test('"trust this device": ticking it at the two-step page lets the next sign-in with the same device_id skip the code; another device_id is still asked', async () => {
    const secret = newTotpSecret();
    const app = await newApp(server, { name: APP_NAME, scopes: ['common', 'users:read'] });
    const account = await newAccount(server, { totpSecret: secret });
    const deviceId = `desktop-${randomBytes(8).toString('hex')}`;
    const otherDeviceId = `laptop-${randomBytes(8).toString('hex')}`;

    // 1. First sign-in from the device: password, then the code page with the checkbox, ticked.
    const first = pkcePair();
    await withPage({}, async (page) => {
      await page.goto(loginUrl(app.clientId, first.challenge, 'trust-1', { device_id: deviceId }));
      const signedIn = await typeCredentials(page, account.username, account.password);
      assert.equal(signedIn.status(), 303);
      await page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
      const trust = page.getByLabel(/Trust this device/);
      assert.equal(await trust.getAttribute('type'), 'checkbox');
      assert.equal(await trust.isVisible(), true);
      assert.equal(await trust.isChecked(), false, 'not trusted unless the user asks');
      await page.getByText(/Trust this device/).click(); // clicking the label ticks the box
      assert.equal(await trust.isChecked(), true);
      await checkLayoutAndCapture(page, 'two-step-trust');
      assert.equal(await trust.isChecked(), true, 'still ticked after the layout check');
      const verified = await typeTotpCode(page, secret);
      assert.equal(verified.status(), 303);
      await assertConsentPage(page, account.username);
      const back = await approve(page);
      assert.equal(back.searchParams.get('state'), 'trust-1');
      const tokens = await exchange(app.clientId, back, first.verifier, { device_id: deviceId });
      await assertTokenIsFor(tokens.access_token, account);
    });

    // 2. A fresh browser (no cookies) with the same device_id: password, then straight to consent.
    const second = pkcePair();
    await withPage({}, async (page) => {
      const documents: { url: string; status: number; body: Promise<string> }[] = [];
      page.on('response', (response) => {
        if (response.request().resourceType() === 'document' && response.status() === 200) {
          documents.push({ url: response.url(), status: response.status(), body: response.text() });
        }
      });
      await page.goto(loginUrl(app.clientId, second.challenge, 'trust-2', { device_id: deviceId }));
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      const signedIn = await typeCredentials(page, account.username, account.password);
      assert.equal(signedIn.status(), 303);
      await assertConsentPage(page, account.username);
      assert.equal(await page.getByLabel('Verification code').count(), 0);
      const bodies = await Promise.all(documents.map((document) => document.body));
      assert.equal(
        bodies.length,
        2,
        `the sign-in page and then the consent page: ${documents.map((d) => d.url).join(', ')}`,
      );
      for (const body of bodies) {
        assert.doesNotMatch(body, /Two-step verification|name="code"/, 'the two-step page was never shown');
      }
      const back = await approve(page);
      assert.equal(back.searchParams.get('state'), 'trust-2');
      assert.equal(back.searchParams.get('error'), null);
      const tokens = await exchange(app.clientId, back, second.verifier, { device_id: deviceId });
      await assertTokenIsFor(tokens.access_token, account);
    });

    // 3. Control: another device_id is not trusted, so the code is asked for again.
    const third = pkcePair();
    await withPage({}, async (page) => {
      await page.goto(loginUrl(app.clientId, third.challenge, 'trust-3', { device_id: otherDeviceId }));
      const signedIn = await typeCredentials(page, account.username, account.password);
      assert.equal(signedIn.status(), 303);
      await page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
      assert.equal(await page.getByRole('heading', { name: /^Allow / }).count(), 0, 'no consent before the code');
      assert.equal(await page.getByLabel(/Trust this device/).isChecked(), false);
      const verified = await typeTotpCode(page, secret, 'next');
      assert.equal(verified.status(), 303);
      await assertConsentPage(page, account.username);
      const back = await approve(page);
      assert.equal(back.searchParams.get('state'), 'trust-3');
      const tokens = await exchange(app.clientId, back, third.verifier, { device_id: otherDeviceId });
      await assertTokenIsFor(tokens.access_token, account);
    });
  });

  test('Deny on the consent page sends the browser back to the client with error=access_denied and the state, and no code', async () => {
    const app = await newApp(server, { name: APP_NAME, scopes: ['common', 'users:read'] });
    const account = await newAccount(server);
    const { challenge } = pkcePair();
    const state = `deny-${randomBytes(6).toString('hex')}`;
    await withPage({}, async (page) => {
      await page.goto(loginUrl(app.clientId, challenge, state));
      const loginPath = new URL(page.url()).pathname;
      await typeCredentials(page, account.username, account.password);
      await assertConsentPage(page, account.username);
      await Promise.all([
        page.waitForURL((url) => `${url.origin}${url.pathname}` === REDIRECT_URI),
        page.getByRole('button', { name: 'Deny' }).click(),
      ]);
      assert.equal(await page.locator('p').textContent(), 'Back at the application');
      const back = new URL(page.url());
      assert.ok(
        arrivals.some((arrival) => arrival.href === back.href),
        'the client received the redirect',
      );
      assert.equal(back.searchParams.get('error'), 'access_denied');
      assert.equal(back.searchParams.get('state'), state);
      assert.equal(back.searchParams.has('code'), false, 'no authorization code');
      // The sign-in is over: its page now says so instead of offering consent again.
      const again = await page.goto(`${server.url}${loginPath}`);
      assert.equal(again?.status(), 404);
      await page.getByRole('heading', { name: 'This sign-in has expired' }).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Allow' }).count(), 0);
    });
  });

  test('device flow: the user code typed in lower case without the hyphen leads to sign-in and consent, and the next poll answers tokens', async () => {
    const app = await newApp(server, { name: APP_NAME, scopes: ['common', 'users:read'] });
    const account = await newAccount(server);
    const { verifier, challenge } = pkcePair();
    const started = await server.request('POST', '/v4/device', {
      body: new URLSearchParams({
        client_id: app.clientId,
        scope: SCOPE,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(started.status, 201, started.text);
    assert.equal(started.body.verification_uri, `${server.url}/device`);
    const userCode: string = started.body.user_code;
    assert.match(userCode, /^[2-9A-Z]{4}-[2-9A-Z]{4}$/);

    const poll = () =>
      tokenRequest(server, {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        client_id: app.clientId,
        device_code: started.body.device_code,
        code_verifier: verifier,
      });
    const pending = await poll();
    assert.equal(pending.status, 400);
    assert.equal(pending.body.error, 'authorization_pending');

    await withPage({}, async (page) => {
      const opened = await page.goto(started.body.verification_uri);
      assert.equal(opened?.status(), 200);
      await page.getByRole('heading', { name: 'Connect a device' }).waitFor();
      await checkLayoutAndCapture(page, 'device');
      await page.getByLabel('Code').focus();
      await page.keyboard.type(userCode.replace('-', '').toLowerCase());
      const [entered] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/device'),
        page.keyboard.press('Enter'),
      ]);
      assert.equal(entered.status(), 303);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      assert.match(new URL(page.url()).pathname, /^\/login\/[^/]+$/);
      await typeCredentials(page, account.username, account.password);
      await assertConsentPage(page, account.username);
      assert.match((await page.locator('.notice').textContent()) ?? '', new RegExp(`shows the code ${userCode}\\.`));
      const [done] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/consent')),
        page.getByRole('button', { name: 'Allow' }).click(),
      ]);
      assert.equal(done.status(), 200);
      await page.getByRole('heading', { name: 'Device connected' }).waitFor();
      await checkLayoutAndCapture(page, 'device-done', { hasForm: false });
    });

    const tokens = await poll();
    assert.equal(tokens.status, 200, tokens.text);
    assert.equal(tokens.body.scope, SCOPE);
    await assertTokenIsFor(tokens.body.access_token, account);
  });

  test('without JavaScript the redirect flow still works end to end (the pages are plain forms)', async () => {
    await redirectFlow({ javaScriptEnabled: false }, false);
  });

  test('the pages enforce their Content-Security-Policy: an injected inline script is refused and reported on the console', async () => {
    const app = await newApp(server, { name: APP_NAME });
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const watcher = watchPage(page);
      await page.goto(loginUrl(app.clientId, pkcePair().challenge, 'csp'));
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      assert.equal(
        watcher.problems.length,
        0,
        `the page itself loads without errors or violations: ${JSON.stringify(watcher.problems)}`,
      );
      const reported = page.waitForEvent('console', {
        predicate: (message) => /Content Security Policy/i.test(message.text()),
        timeout: 5000,
      });
      const ran = await page.evaluate(() => {
        const script = document.createElement('script');
        script.textContent = 'document.body.dataset.injected = "yes"';
        document.head.append(script);
        return document.body.dataset.injected ?? 'no';
      });
      assert.equal(ran, 'no', 'the inline script did not run');
      await reported;
      assert.ok(
        watcher.problems.some((problem) => problem.startsWith('csp:')),
        `the watcher sees CSP violations: ${JSON.stringify(watcher.problems)}`,
      );
    } finally {
      await context.close();
    }
  });

  test(`on /device each wrong code shows an error; after ${WRONG_CODES_ALLOWED} the page answers 429 with Retry-After, and even the right code is refused`, async () => {
    // Its own server: the limit is per IP too, and every browser here comes from 127.0.0.1.
    const limited = await startBrowserServer();
    try {
      const app = await newApp(limited, { name: APP_NAME, scopes: ['common', 'users:read'] });
      const { verifier, challenge } = pkcePair();
      const started = await limited.request('POST', '/v4/device', {
        body: new URLSearchParams({
          client_id: app.clientId,
          scope: SCOPE,
          code_challenge: challenge,
          code_challenge_method: 'S256',
        }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(started.status, 201, started.text);
      const userCode: string = started.body.user_code;
      // Typos of the real code: one character changed each time.
      const alphabet = '23456789ABCDEFGHJKLMNPRSTUVWXYZ';
      const wrongCodes = Array.from({ length: WRONG_CODES_ALLOWED }, (_, i) => {
        const position = i < 4 ? i : i + 1; // skip the hyphen
        const current = alphabet.indexOf(userCode[position]!);
        return (
          userCode.slice(0, position) + alphabet[(current + 1 + i) % alphabet.length] + userCode.slice(position + 1)
        );
      });
      for (const wrong of wrongCodes) assert.notEqual(wrong, userCode);

      const submit = async (page: Page, code: string) => {
        await page.getByLabel('Code').fill('');
        await page.getByLabel('Code').focus();
        await page.keyboard.type(code);
        const [answer] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/device'),
          page.keyboard.press('Enter'),
        ]);
        await page.waitForLoadState('domcontentloaded');
        return answer;
      };

      await withPage({}, async (page) => {
        await page.goto(started.body.verification_uri);
        await page.getByRole('heading', { name: 'Connect a device' }).waitFor();
        for (const [index, wrong] of wrongCodes.entries()) {
          const answer = await submit(page, wrong);
          assert.equal(answer.status(), 400, `wrong code ${index + 1}`);
          const alert = page.getByRole('alert');
          await alert.waitFor();
          assert.equal(await alert.isVisible(), true);
          assert.equal(
            (await alert.textContent())?.trim(),
            'That code is not valid or has expired. Check the code on your device.',
          );
          assert.equal(
            await page.getByLabel('Code').inputValue(),
            wrong,
            'the typed code stays in the field to be corrected',
          );
          assert.equal(new URL(page.url()).pathname, '/device');
        }

        // Over the limit: the right code is refused too, with a clear message and Retry-After.
        const refused = await submit(page, userCode);
        assert.equal(refused.status(), 429);
        const retryAfter = Number(refused.headers()['retry-after']);
        assert.ok(
          Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
          `Retry-After: ${refused.headers()['retry-after']}`,
        );
        const alert = page.getByRole('alert');
        await alert.waitFor();
        assert.equal(await alert.isVisible(), true);
        assert.equal((await alert.textContent())?.trim(), 'Too many wrong codes. Try again in 1 minute(s).');
        assert.equal(new URL(page.url()).pathname, '/device', 'not sent on to sign in');
        assert.equal(await page.getByRole('heading', { name: 'Sign in' }).count(), 0);
        await checkLayoutAndCapture(page, 'device-limited', { hasForm: true });
      });

      // A new browser from the same IP is limited as well (the limit is per IP, not only per browser).
      await withPage({}, async (page) => {
        await page.goto(`${limited.url}/device?user_code=${userCode}`);
        assert.equal(
          await page.getByLabel('Code').inputValue(),
          userCode,
          'verification_uri_complete pre-fills the code',
        );
        const [refused] = await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/device'),
          page.getByRole('button', { name: 'Continue' }).click(),
        ]);
        assert.equal(refused.status(), 429);
        assert.ok(refused.headers()['retry-after']);
        await page.getByRole('alert').waitFor();
        assert.match((await page.getByRole('alert').textContent()) ?? '', /Too many wrong codes/);
      });

      // The refused attempts did nothing: the device is still waiting.
      const poll = await tokenRequest(limited, {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        client_id: app.clientId,
        device_code: started.body.device_code,
        code_verifier: verifier,
      });
      assert.equal(poll.status, 400);
      assert.equal(poll.body.error, 'authorization_pending');
    } finally {
      await limited.close();
    }
  });
});
