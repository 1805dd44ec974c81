/**
 * Self-service accounts in a real browser (Debian's Chromium through playwright-core), without
 * JavaScript-dependent steps: from the home page to a signed-up account holding a key pair, with
 * the code from the delivered message; the password reset through the link of its message; the
 * e-mail change on the account page. Every new page is captured at phone and desktop widths.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { findAccountByLogin } from '../../src/accounts/accounts.ts';
import {
  checkLayoutAndCapture,
  clickAndLoad,
  launchBrowser,
  startBrowserServer,
  withPage,
} from '../helpers/browser.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { newAccount } from '../helpers/oauth.ts';
import { type Inbox, newAddress, STRONG_PASSWORD, smtpInbox } from '../helpers/self-service.ts';
import type { TestServer } from '../helpers/server.ts';

describe('self-service accounts in a real browser', () => {
  let server: TestServer;
  let browser: Browser;
  let inbox: Inbox;
  let mailbox: Mailbox;

  before(async () => {
    // Mail is delivered through a real SMTP server; the test reads the code from what it received.
    mailbox = await startMailbox();
    [server, browser] = await Promise.all([startBrowserServer({ env: { SMTP_URL: mailbox.url } }), launchBrowser()]);
    inbox = smtpInbox(mailbox);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await mailbox?.close();
  });

  const click = (page: Page, name: string) => clickAndLoad(page, page.getByRole('button', { name }));

  test('from the home page to a signed-up account holding a key pair', async () => {
    await withPage(browser, { javaScriptEnabled: false }, async (page) => {
      await page.goto(`${server.url}/`);
      await page.getByRole('link', { name: 'Create an account' }).click();
      await page.getByRole('heading', { name: 'Create an account' }).waitFor();
      await checkLayoutAndCapture(page, 'sign-up-email');
      const email = newAddress('browser');
      await page.getByLabel('E-mail address').fill(email);
      assert.equal((await click(page, 'Send the code')).status(), 303);
      await page.getByLabel('Code from the e-mail').waitFor();
      await checkLayoutAndCapture(page, 'sign-up-code');
      const mail = await inbox.next(email);
      const wrong = String((Number(mail.code) + 1) % 1_000_000).padStart(6, '0');
      await page.getByLabel('Code from the e-mail').fill(wrong);
      assert.equal((await click(page, 'Confirm')).status(), 400);
      await checkLayoutAndCapture(page, 'sign-up-code-wrong');
      await page.getByLabel('Code from the e-mail').fill(mail.code!);
      assert.equal((await click(page, 'Confirm')).status(), 303);
      await page.getByLabel('Username').waitFor();
      await checkLayoutAndCapture(page, 'sign-up-details');
      const username = `walker${Date.now() % 1_000_000}`;
      await page.getByLabel('Username').fill('ｗａｌｋｅｒ');
      await page.getByLabel('Password').fill(STRONG_PASSWORD);
      assert.equal((await click(page, 'Create the account')).status(), 400);
      await checkLayoutAndCapture(page, 'sign-up-details-refused');
      await page.getByLabel('Username').fill(username);
      await page.getByLabel('Password').fill(STRONG_PASSWORD);
      assert.equal((await click(page, 'Create the account')).status(), 303);
      await page.getByRole('heading', { name: 'Your account' }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/account');
      assert.match((await page.locator('body').textContent()) ?? '', new RegExp(username));
      await checkLayoutAndCapture(page, 'account-with-email');

      const welcome = await inbox.next(email);
      assert.match(welcome.text, new RegExp(username));
      const account = await findAccountByLogin(server.app.database.db, username);
      assert.ok(account);
      const v1 = await server.request('GET', `/v1/user.php/${account.userId}`);
      assert.equal(v1.status, 200, 'the new account is a v1 user at once');
      assert.match(v1.body.public_key, /BEGIN PUBLIC KEY/);
    });
  });

  test('password reset through the link of the message, and the e-mail change', async () => {
    const account = await newAccount(server);
    await withPage(browser, { javaScriptEnabled: false }, async (page) => {
      await page.goto(`${server.url}/account/sign-in`);
      await page.getByRole('link', { name: 'Forgot your password?' }).click();
      await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
      await checkLayoutAndCapture(page, 'forgot-email');
      await page.getByLabel('E-mail address').fill(account.email);
      assert.equal((await click(page, 'Send the code')).status(), 303);
      await checkLayoutAndCapture(page, 'forgot-code');
      const mail = await inbox.next(account.email);
      await page.goto(`${server.url}${mail.link}`);
      await checkLayoutAndCapture(page, 'verify-link');
      assert.equal((await click(page, 'Continue to choose a new password')).status(), 303);
      await page.getByLabel('New password').waitFor();
      await page.getByLabel('New password').fill('short');
      assert.equal((await click(page, 'Change the password')).status(), 400);
      await checkLayoutAndCapture(page, 'forgot-new-password-refused');
      await page.getByLabel('New password').fill(STRONG_PASSWORD);
      assert.equal((await click(page, 'Change the password')).status(), 200);
      await page.getByRole('heading', { name: 'Your password was changed' }).waitFor();
      await checkLayoutAndCapture(page, 'forgot-done', { hasForm: false });

      await page.goto(`${server.url}/account/sign-in`);
      await page.getByLabel('Username or email').fill(account.username);
      await page.getByLabel('Password').fill(STRONG_PASSWORD);
      assert.equal((await click(page, 'Sign in')).status(), 303);
      await page.getByRole('heading', { name: 'Your account' }).waitFor();
      const next = newAddress('moved');
      await page.getByLabel('New e-mail address').fill(next);
      await page.locator('#email_current_password').fill(STRONG_PASSWORD);
      assert.equal((await click(page, 'Change e-mail address')).status(), 303);
      await page.getByRole('status').waitFor();
      await checkLayoutAndCapture(page, 'account-email-link-sent');
      await inbox.next(account.email); // password changed
      const link = await inbox.next(next);
      await page.goto(`${server.url}${link.link}`);
      assert.equal((await click(page, 'Use this e-mail address')).status(), 200);
      await page.getByRole('heading', { name: 'E-mail address changed' }).waitFor();
      await checkLayoutAndCapture(page, 'email-changed', { hasForm: false });
    });
  });
});
