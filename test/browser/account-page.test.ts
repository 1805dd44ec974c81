/**
 * The account page (DESIGN "Account page") in a real browser: Debian's Chromium driven by
 * playwright-core against the real server, as the login pages are tested. Every action and
 * every refusal, with and without JavaScript; screenshots at phone and desktop size go to
 * test-artifacts/screenshots/ with the others.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import QRCode from 'qrcode';
import { findAccount, setTotpSecret } from '../../src/accounts/accounts.ts';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { isTrustedDevice, trustDevice } from '../../src/accounts/trusted-devices.ts';
import { SCOPES } from '../../src/oauth/scopes.ts';
import {
  checkLayoutAndCapture,
  clickAndLoad,
  launchBrowser,
  startBrowserServer,
  withPage as withBrowserPage,
} from '../helpers/browser.ts';
import { FormClient, newAccount, newApp, tokensThroughPages } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { awayFromStepEdge } from '../helpers/totp.ts';

/** Wrong answers allowed per 15 minutes (src/web/sign-in.ts): passwords per account, codes per IP. */
const PASSWORD_FAILURES_ALLOWED = 10;
const CODE_FAILURES_ALLOWED = 10;
const STEP = 30_000;

describe('account page in a real browser', () => {
  let server: TestServer;
  let browser: Browser;

  before(async () => {
    [server, browser] = await Promise.all([startBrowserServer(), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const withPage = (options: BrowserContextOptions, body: (page: Page) => Promise<void>) =>
    withBrowserPage(browser, options, body);

  /** Opens /account signed out: it sends the browser to sign in, then back to the account page. */
  async function signInToAccount(
    page: Page,
    account: { username: string; password: string },
    secret?: string,
    at = Date.now(),
  ) {
    await page.goto(`${server.url}/account`);
    assert.equal(new URL(page.url()).pathname, '/account/sign-in', 'a signed-out visitor is sent to sign in');
    await page.getByLabel('Username or email').fill(account.username);
    await page.getByLabel('Password').fill(account.password);
    const signedIn = await clickAndLoad(page, page.getByRole('button', { name: 'Sign in' }));
    assert.equal(signedIn.status(), 303);
    if (secret) {
      await page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
      await page.getByLabel('Verification code').fill(totpCode(secret, at));
      assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Verify' }))).status(), 303);
    }
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/account', 'and returned to the account page');
  }

  const bearer = (token: string) =>
    server.request('GET', '/v4/user', { headers: { authorization: `Bearer ${token}` } });
  const appRow = (page: Page, name: string) =>
    page.locator('li.row', { has: page.locator('.app-name', { hasText: name }) });
  const sectionAlert = (page: Page, heading: string) =>
    page.locator('section', { has: page.getByRole('heading', { name: heading }) }).getByRole('alert');

  test('each action: end an application, end a device trust, two-step on and off, change the password; and each refusal', async () => {
    const appX = await newApp(server, { name: 'Photo Sorter', scopes: ['common', 'users:read'] });
    const appY = await newApp(server, { name: 'Map Editor', scopes: ['common', 'users:read', 'users:update'] });
    const account = await newAccount(server);
    const tokensX = await tokensThroughPages(server, appX, account);
    const tokensY = await tokensThroughPages(server, appY, account, 'common users:read users:update');
    assert.equal((await bearer(tokensX.access_token)).status, 200);
    await trustDevice(server.app.database.db, account.userId, 'device-of-the-test');

    // Another browser signed in to the account page: a new password signs it out.
    const elsewhere = new FormClient(server);
    assert.equal(
      (await elsewhere.submit('/account/sign-in', { username: account.username, password: account.password })).status,
      303,
    );
    assert.equal((await elsewhere.fetch('/account')).status, 200);

    await withPage({}, async (page) => {
      await signInToAccount(page, account);
      assert.equal(await page.title(), 'Your account');
      assert.match(
        (await page.locator('form.account').textContent()) ?? '',
        new RegExp(`Signed in as ${account.username}\\.`),
      );

      // Connected applications: name, scopes in words, since, last used.
      assert.equal(await page.locator('li.row:has(button[name=end_session])').count(), 2);
      const rowY = appRow(page, 'Map Editor');
      assert.deepEqual(await rowY.locator('ul.scope-words li').allTextContents(), [
        SCOPES.common,
        SCOPES['users:read'],
        SCOPES['users:update'],
      ]);
      assert.match(
        (await rowY.locator('.muted').textContent()) ?? '',
        /^Since \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC · Last used \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/,
      );
      assert.equal(await page.locator('li.row:has(button[name=end_trust])').count(), 1);
      await checkLayoutAndCapture(page, 'account');

      // Refused: a form without its CSRF token changes nothing.
      await appRow(page, 'Photo Sorter')
        .locator('input[name=_csrf]')
        .evaluate((input) => input.remove());
      const forged = await clickAndLoad(page, appRow(page, 'Photo Sorter').getByRole('button', { name: 'End' }));
      assert.equal(forged.status(), 403);
      await page.getByRole('heading', { name: 'Please try again' }).waitFor();
      assert.equal((await bearer(tokensX.access_token)).status, 200, 'the session was not ended');

      // End one application: its tokens stop working, the other's do not.
      await page.goto(`${server.url}/account`);
      const ended = await clickAndLoad(page, appRow(page, 'Photo Sorter').getByRole('button', { name: 'End' }));
      assert.equal(ended.status(), 303);
      await page.getByRole('status').waitFor();
      assert.match((await page.getByRole('status').textContent()) ?? '', /application was signed out/);
      assert.equal(await appRow(page, 'Photo Sorter').count(), 0);
      assert.equal(await appRow(page, 'Map Editor').count(), 1);
      assert.equal((await bearer(tokensX.access_token)).status, 401);
      assert.equal((await bearer(tokensY.access_token)).status, 200);

      // End the device trust.
      assert.equal((await clickAndLoad(page, page.locator('button[name=end_trust]'))).status(), 303);
      await page.getByText('No device is trusted.').waitFor();
      assert.equal(await isTrustedDevice(server.app.database.db, account.userId, 'device-of-the-test'), false);

      // Two-step on: a QR code of the otpauth:// URI shown beside it, confirmed by a first code.
      const uri = (await page.locator('#otpauth-uri').textContent())!;
      assert.match(uri, /^otpauth:\/\/totp\/.+\?.*secret=[A-Z2-7]+/);
      const secret = new URL(uri).searchParams.get('secret')!;
      const expected = await QRCode.toString(uri, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' });
      assert.equal(
        await page.locator('.qr svg path[stroke]').getAttribute('d'),
        /stroke="[^"]+" d="([^"]+)"/.exec(expected)![1],
        'the QR code encodes that URI',
      );
      assert.ok((await page.locator('.qr svg').boundingBox())!.width >= 150, 'the QR code is big enough to scan');
      await page.getByLabel('Code from the app').fill(totpCode(secret, Date.now() + 10 * STEP));
      const wrongCode = await clickAndLoad(page, page.getByRole('button', { name: 'Turn on two-step verification' }));
      assert.equal(wrongCode.status(), 401);
      assert.match((await sectionAlert(page, 'Two-step verification').textContent()) ?? '', /code is not right/);
      assert.equal((await findAccount(server.app.database.db, account.userId))!.totpSecret, null, 'still off');
      assert.equal(await page.locator('#otpauth-uri').textContent(), uri, 'the same secret is offered again');
      await checkLayoutAndCapture(page, 'account-two-step-setup');
      // The previous step's code (drift allowed), so that the current one is still unused to turn it off.
      await awayFromStepEdge();
      await page.getByLabel('Code from the app').fill(totpCode(secret, Date.now() - STEP));
      assert.equal(
        (await clickAndLoad(page, page.getByRole('button', { name: 'Turn on two-step verification' }))).status(),
        303,
      );
      // On to the backup codes page (shown once), then back to the account.
      assert.match(new URL(page.url()).pathname, /^\/account\/backup-codes$/);
      assert.match((await page.getByRole('status').first().textContent()) ?? '', /Two-step verification is on/);
      assert.equal((await findAccount(server.app.database.db, account.userId))!.totpSecret, secret);
      await page.goto(`${server.url}/account`);
      await checkLayoutAndCapture(page, 'account-two-step-on');

      // Two-step off: refused without a right code, then turned off with one.
      await page.getByLabel('Current code, to turn it off').fill(totpCode(secret, Date.now() + 20 * STEP));
      assert.equal(
        (await clickAndLoad(page, page.getByRole('button', { name: 'Turn off two-step verification' }))).status(),
        401,
      );
      assert.match((await sectionAlert(page, 'Two-step verification').textContent()) ?? '', /code is not right/);
      await page.getByLabel('Current code, to turn it off').fill(totpCode(secret));
      assert.equal(
        (await clickAndLoad(page, page.getByRole('button', { name: 'Turn off two-step verification' }))).status(),
        303,
      );
      assert.match((await page.getByRole('status').textContent()) ?? '', /Two-step verification is off/);
      assert.equal((await findAccount(server.app.database.db, account.userId))!.totpSecret, null);

      // The password: refused with a wrong current one, changed with the right one.
      await page.getByLabel('Current password').fill('not my password');
      await page.getByLabel('New password').fill('a new password here');
      assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Change password' }))).status(), 401);
      assert.equal((await sectionAlert(page, 'Password').textContent())?.trim(), 'The current password is not right.');
      await checkLayoutAndCapture(page, 'account-password-error');
      await page.getByLabel('Current password').fill(account.password);
      await page.getByLabel('New password').fill('short');
      await page.getByLabel('New password').evaluate((input) => input.removeAttribute('minlength'));
      assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Change password' }))).status(), 400);
      assert.match((await sectionAlert(page, 'Password').textContent()) ?? '', /at least 10 characters/);
      await page.getByLabel('Current password').fill(account.password);
      await page.getByLabel('New password').fill('password123');
      assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Change password' }))).status(), 400);
      assert.match(
        (await sectionAlert(page, 'Password').textContent()) ?? '',
        /commonly used password\. Choose a password that is harder to guess\./,
      );
      await checkLayoutAndCapture(page, 'account-password-too-easy');
      await page.getByLabel('Current password').fill(account.password);
      await page.getByLabel('New password').fill('a new password here');
      assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Change password' }))).status(), 303);
      assert.match((await page.getByRole('status').textContent()) ?? '', /password was changed/);
      assert.equal(new URL(page.url()).pathname, '/account', 'this browser stays signed in');
      assert.equal(await page.locator('button[name=end_session]').count(), 0, 'every application was signed out');
      assert.equal((await bearer(tokensY.access_token)).status, 401);
      assert.equal(
        (await elsewhere.fetch('/account')).location,
        '/account/sign-in',
        'the other browser was signed out',
      );

      // Sign out; the new password signs in.
      await clickAndLoad(page, page.getByRole('button', { name: 'Sign out' }));
      assert.equal(new URL(page.url()).pathname, '/account/sign-in');
      await signInToAccount(page, { username: account.username, password: 'a new password here' });
    });
  });

  test('without JavaScript: sign in with a two-step code, end an application, and a wrong current password is refused', async () => {
    const secret = newTotpSecret();
    const app = await newApp(server, { name: 'Offline Planner', scopes: ['common', 'users:read'] });
    const account = await newAccount(server);
    const tokens = await tokensThroughPages(server, app, account);
    await setTotpSecret(server.app.database.db, account.userId, secret);
    await withPage({ javaScriptEnabled: false }, async (page) => {
      await page.goto('data:text/html,<title>before</title><script>document.title = "script ran"</script>');
      assert.equal(await page.title(), 'before', 'scripts really are off in this context');
      await page.goto(`${server.url}/account`);
      await page.getByLabel('Username or email').fill(account.username);
      await page.getByLabel('Password').fill(account.password);
      await clickAndLoad(page, page.getByRole('button', { name: 'Sign in' }));
      await page.getByLabel('Verification code').fill(totpCode(secret, Date.now() + 5 * STEP));
      assert.equal(
        (await clickAndLoad(page, page.getByRole('button', { name: 'Verify' }))).status(),
        401,
        'a wrong code is refused',
      );
      await page.getByRole('alert').waitFor();
      await page.getByLabel('Verification code').fill(totpCode(secret));
      assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Verify' }))).status(), 303);
      await page.getByRole('heading', { name: 'Your account' }).waitFor();
      assert.equal(
        (await clickAndLoad(page, appRow(page, 'Offline Planner').getByRole('button', { name: 'End' }))).status(),
        303,
      );
      assert.equal(await appRow(page, 'Offline Planner').count(), 0);
      assert.equal((await bearer(tokens.access_token)).status, 401);
      await page.getByLabel('Current password').fill('wrong password!');
      await page.getByLabel('New password').fill('another new password');
      assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Change password' }))).status(), 401);
      assert.equal((await findAccount(server.app.database.db, account.userId))!.passwordHash !== null, true);
    });
  });

  test('the password and code forms are limited like the login pages: past the limit even the right answer is refused, with Retry-After', async () => {
    // Its own server: the code limit is per IP, and every browser here comes from 127.0.0.1.
    // (Driven by a form client, so a plain test server does.)
    const limited = await startServer();
    try {
      const secret = newTotpSecret();
      const account = await newAccount(limited, { totpSecret: secret });
      const browser = new FormClient(limited);
      const nul = await browser.submit('/account/sign-in', {
        username: `${account.username}\u0000`,
        password: 'x\u0000y wrong',
      });
      assert.equal(nul.status, 400, 'a NUL byte is malformed input, not a database error');
      assert.equal(
        (await browser.submit('/account/sign-in', { username: account.username, password: account.password })).status,
        303,
      );
      await awayFromStepEdge();
      assert.equal(
        (await browser.submit('/account/sign-in', { code: totpCode(secret, Date.now() - STEP) })).status,
        303,
      );
      for (let i = 0; i < PASSWORD_FAILURES_ALLOWED; i++) {
        const wrong = await browser.submit(
          '/account',
          { current_password: `wrong ${i}`, new_password: 'a new password here' },
          /password$/,
        );
        assert.equal(wrong.status, 401, `wrong password ${i + 1}`);
      }
      const refused = await browser.submit(
        '/account',
        { current_password: account.password, new_password: 'a new password here' },
        /password$/,
      );
      assert.equal(refused.status, 429);
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      assert.match(refused.text, /Too many failed sign-ins/);
      for (let i = 0; i < CODE_FAILURES_ALLOWED; i++) {
        const wrong = await browser.submit(
          '/account',
          { code: totpCode(secret, Date.now() + (10 + i) * STEP), two_step: 'off' },
          /two-step$/,
        );
        assert.equal(wrong.status, 401, `wrong code ${i + 1}`);
      }
      const codeRefused = await browser.submit('/account', { code: totpCode(secret), two_step: 'off' }, /two-step$/);
      assert.equal(codeRefused.status, 429);
      assert.ok(Number(codeRefused.headers.get('retry-after')) >= 1);
      assert.match(codeRefused.text, /Too many wrong codes/);
      assert.equal(
        (await findAccount(limited.app.database.db, account.userId))!.totpSecret,
        secret,
        'two-step is still on',
      );

      // The limit is shared with signing in: this address is past it for every account, so another
      // account's code is refused too. (Only the account's own limit ends its pending sign-in: an
      // address must not end the sign-ins of accounts it does not own; see test/oauth/two-step.test.ts.)
      const otherSecret = newTotpSecret();
      const otherAccount = await newAccount(limited, { totpSecret: otherSecret });
      const other = new FormClient(limited);
      assert.equal(
        (await other.submit('/account/sign-in', { username: otherAccount.username, password: otherAccount.password }))
          .status,
        303,
      );
      const signInRefused = await other.submit('/account/sign-in', { code: totpCode(otherSecret) });
      assert.equal(signInRefused.status, 429);
      assert.match(signInRefused.text, /Too many wrong codes/);
      assert.match((await other.fetch('/account/sign-in')).text, /name="code"/, 'still waiting for its code');
      assert.equal((await other.fetch('/account')).location, '/account/sign-in');
    } finally {
      await limited.close();
    }
  });
});
