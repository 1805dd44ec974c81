/**
 * Pages people trust (issue "Pages people trust", items 1, 8 in part and 9), in Chromium without
 * JavaScript: every end page leads somewhere (the changed password to sign-in, an expired link to
 * starting again), signing out says so, an unknown page address answers a 404 page in the service's
 * look while the API keeps its JSON; on an IP-literal BASE_URL passkeys are not offered and the
 * account page says why, in the warning style; errors are tied to their inputs; the focus ring and
 * input borders are the colours that reach 3:1. Screenshots at phone and desktop widths.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  checkLayoutAndCapture,
  clickAndLoad,
  launchBrowser,
  SCREENSHOT_DIR,
  startBrowserServer,
  withPage,
} from '../helpers/browser.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { newAccount } from '../helpers/oauth.ts';
import { type Inbox, STRONG_PASSWORD, smtpInbox } from '../helpers/self-service.ts';
import type { TestServer } from '../helpers/server.ts';

const SCRATCH = '.scratch/screenshots';

/** checkLayoutAndCapture, with a copy of both screenshots where a reviewer looks (.scratch/, not committed). */
async function capture(page: Page, name: string, options: { hasForm?: boolean } = {}) {
  await checkLayoutAndCapture(page, name, options);
  mkdirSync(SCRATCH, { recursive: true });
  for (const size of ['phone', 'desktop'])
    copyFileSync(`${SCREENSHOT_DIR}/${name}-${size}.png`, `${SCRATCH}/${name}-${size}.png`);
}

/** The colours of site.css (light scheme) that meet 3:1 against white. */
const ACCENT = 'rgb(49, 87, 213)';
const FIELD_LINE = 'rgb(124, 130, 149)';
const WARN_BG = 'rgb(255, 244, 214)';
const OK_BG = 'rgb(232, 243, 236)';

describe('pages people trust', () => {
  let server: TestServer;
  let browser: Browser;
  let mailbox: Mailbox;
  let inbox: Inbox;

  before(async () => {
    mailbox = await startMailbox();
    // BASE_URL http://127.0.0.1:PORT: an IP literal, on which browsers refuse passkeys.
    [server, browser] = await Promise.all([startBrowserServer({ env: { SMTP_URL: mailbox.url } }), launchBrowser()]);
    inbox = smtpInbox(mailbox);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await mailbox?.close();
  });

  const click = (page: Page, name: string) => clickAndLoad(page, page.getByRole('button', { name }));

  async function signIn(page: Page, account: { username: string; password: string }) {
    await page.goto(`${server.url}/account/sign-in`);
    await page.getByLabel('Username or email').fill(account.username);
    await page.getByLabel('Password').fill(account.password);
    assert.equal((await click(page, 'Sign in')).status(), 303);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
  }

  test('"Your password was changed" leads to the sign-in page', async () => {
    const account = await newAccount(server);
    await withPage(browser, { javaScriptEnabled: false }, async (page) => {
      await page.goto(`${server.url}/account/forgot`);
      await page.getByLabel('E-mail address').fill(account.email);
      assert.equal((await click(page, 'Send the code')).status(), 303);
      const mail = await inbox.next(account.email);
      await page.getByLabel('Code from the e-mail').fill(mail.code!);
      assert.equal((await click(page, 'Confirm')).status(), 303);
      await page.getByLabel('New password').fill(STRONG_PASSWORD);
      assert.equal((await click(page, 'Change the password')).status(), 200);
      await page.getByRole('heading', { name: 'Your password was changed' }).waitFor();
      await capture(page, 'trust-password-changed', { hasForm: false });
      await page.getByRole('link', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/account/sign-in');
      await signIn(page, { username: account.username, password: STRONG_PASSWORD });
    });
  });

  test('an expired link leads to starting again', async () => {
    await withPage(browser, { javaScriptEnabled: false }, async (page) => {
      const answer = await page.goto(`${server.url}/account/verify?token=${'x'.repeat(43)}`);
      assert.equal(answer?.status(), 410);
      await page.getByRole('heading', { name: 'This link has expired' }).waitFor();
      await capture(page, 'trust-link-expired', { hasForm: false });
      const links = await page
        .locator('ul.next-steps a')
        .evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute('href')]));
      assert.deepEqual(links, [
        ['Reset the password again', '/account/forgot'],
        ['Create an account again', '/account/sign-up'],
        ['Change the e-mail address again', '/account'],
      ]);
      await page.getByRole('link', { name: 'Reset the password again' }).click();
      await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
    });
  });

  test('signing out lands on the sign-in page, which says it worked', async () => {
    const account = await newAccount(server);
    await withPage(browser, { javaScriptEnabled: false }, async (page) => {
      await signIn(page, account);
      assert.equal((await click(page, 'Sign out')).status(), 303);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/account/sign-in');
      assert.equal(await page.getByRole('status').textContent(), 'You are signed out.');
      await capture(page, 'trust-signed-out');
      // The flag alone says nothing to a browser that is signed in: it goes on to the account.
      await signIn(page, account);
      await page.goto(`${server.url}/account/sign-in?signed_out=1`);
      assert.equal(new URL(page.url()).pathname, '/account');
    });
  });

  test('an unknown page address answers a 404 page in the service look; the API keeps its JSON', async () => {
    await withPage(browser, { javaScriptEnabled: false }, async (page) => {
      const answer = await page.goto(`${server.url}/account/nope`);
      assert.equal(answer?.status(), 404);
      assert.match(answer?.headers()['content-type'] ?? '', /^text\/html/);
      await page.getByRole('heading', { name: 'Page not found' }).waitFor();
      await capture(page, 'trust-not-found', { hasForm: false });
      await page.getByRole('link', { name: 'Go to your account' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    });
    for (const path of ['/account/nope', '/account/apps/x/nope', '/login/x/nope', '/device/nope', '/spawn/nope']) {
      const reply = await server.request('GET', path);
      assert.equal(reply.status, 404, path);
      assert.match(reply.headers.get('content-type') ?? '', /^text\/html/, path);
      assert.match(reply.text, /<h1>Page not found<\/h1>/, path);
      assert.match(reply.text, /href="\/assets\/site.css"/, path);
    }
    // Known pages still answer as before: a parametric login page is not swallowed by the catch-all.
    assert.match((await server.request('GET', '/login/x')).text, /This sign-in has expired/);
    for (const path of ['/v4/nope', '/v1/nope.php', '/nothing-here']) {
      const reply = await server.request('GET', path);
      assert.equal(reply.status, 404, path);
      assert.match(reply.headers.get('content-type') ?? '', /^application\/json/, path);
      assert.equal(reply.body.code, 'notFound', path);
    }
    // The catch-all makes no path known: another method there is still 404 (not 405), in JSON.
    const post = await server.request('POST', '/account/nope');
    assert.equal(post.status, 404, post.text);
    assert.equal(post.body.code, 'notFound');
    assert.equal(post.headers.get('allow'), null);
    const wrongMethod = await server.request('PUT', '/account/sign-in');
    assert.equal(wrongMethod.status, 405, wrongMethod.text);
  });

  test('on an IP-literal BASE_URL no passkey is offered, and the account page says why, as a warning', async () => {
    const account = await newAccount(server);
    await withPage(browser, {}, async (page) => {
      await page.goto(`${server.url}/account/sign-in`);
      assert.equal(await page.locator('#passkey-box, #passkey-sign-in, script[src="/assets/passkeys.js"]').count(), 0);
      await signIn(page, account);
      const note = page.locator('#passkeys-unavailable');
      assert.match((await note.textContent()) ?? '', /IP address, and browsers only allow passkeys on a domain name/);
      assert.equal(await note.getAttribute('class'), 'warning');
      assert.equal(await note.evaluate((el) => getComputedStyle(el).backgroundColor), WARN_BG);
      assert.equal(await page.locator('#passkey-add, #passkey-sign-in-again').count(), 0);
      mkdirSync(SCRATCH, { recursive: true });
      await note.scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${SCRATCH}/trust-passkeys-unavailable-desktop.png` });
      await page.setViewportSize({ width: 390, height: 844 });
      await note.scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${SCRATCH}/trust-passkeys-unavailable-phone.png` });
      // A success still looks like one.
      await page.goto(`${server.url}/account?done=two-step-off`);
      assert.equal(await page.locator('p.notice').evaluate((el) => getComputedStyle(el).backgroundColor), OK_BG);
    });
  });

  test('a failed sign-in and a refused sign-up address are tied to their inputs; focus and borders reach 3:1', async () => {
    await withPage(browser, { javaScriptEnabled: false }, async (page) => {
      await page.goto(`${server.url}/account/sign-in`);
      const username = page.getByLabel('Username or email');
      assert.equal(await username.getAttribute('aria-invalid'), null);
      assert.equal(await username.evaluate((el) => getComputedStyle(el).borderTopColor), FIELD_LINE);
      await username.focus();
      assert.equal(await username.evaluate((el) => getComputedStyle(el).outlineColor), ACCENT);
      await username.fill('nobody-here');
      await page.getByLabel('Password').fill('wrong password');
      assert.equal((await click(page, 'Sign in')).status(), 401);
      for (const input of [page.getByLabel('Username or email'), page.getByLabel('Password')]) {
        assert.equal(await input.getAttribute('aria-invalid'), 'true');
        assert.equal(await input.getAttribute('aria-describedby'), 'signin-error');
      }
      assert.equal(await page.locator('#signin-error').textContent(), 'Wrong username or password.');
      await capture(page, 'trust-sign-in-failed');

      await page.goto(`${server.url}/account/sign-up`);
      // Valid for the browser, refused by the service (two dots in a row).
      await page.getByLabel('E-mail address').fill('a..b@example.com');
      assert.equal((await click(page, 'Send the code')).status(), 400);
      const email = page.getByLabel('E-mail address');
      assert.equal(await email.getAttribute('aria-invalid'), 'true');
      // The error first, then the rule shown before submitting (decision 0091).
      const describedBy = await email.getAttribute('aria-describedby');
      assert.equal(describedBy, 'email-error email-rule');
      assert.match((await page.locator('#email-error').textContent()) ?? '', /not a valid e-mail address/);
      assert.equal(await email.inputValue(), 'a..b@example.com', 'what was typed is kept');
      await capture(page, 'trust-sign-up-refused');
    });
  });

  test('the account page ties a refused password change to its inputs', async () => {
    const account = await newAccount(server);
    await withPage(browser, { javaScriptEnabled: false }, async (page) => {
      await signIn(page, account);
      await page.getByLabel('Current password').fill('not the password');
      await page.getByLabel('New password').fill(STRONG_PASSWORD);
      assert.equal((await click(page, 'Change password')).status(), 401);
      for (const [id, describedBy] of [
        ['current_password', 'password-error'],
        // The error, then the password rule shown before submitting (decision 0091).
        ['new_password', 'password-error new-password-rule'],
      ] as const) {
        const input = page.locator(`#${id}`);
        assert.equal(await input.getAttribute('aria-invalid'), 'true', id);
        assert.equal(await input.getAttribute('aria-describedby'), describedBy, id);
      }
      assert.match((await page.locator('#password-error').textContent()) ?? '', /current password is not right/);
      // Other sections' inputs are not marked.
      assert.equal(await page.locator('#new_email').getAttribute('aria-invalid'), null);
    });
  });
});
