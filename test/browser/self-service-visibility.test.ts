/**
 * What a person sees on the self-service pages before and after each step (docs/decisions/0091),
 * in Chromium with JavaScript on, mail delivered through a real SMTP server: the address a code
 * went to; "send the code again" (a new code replaces the old, under the request limits); an
 * address over 254 characters refused with a message and never cut; the rules beside their
 * inputs before anything is submitted; the show-password button; and a refused password that
 * keeps everything else typed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { EMAIL_RULE, MAX_EMAIL_LENGTH, USERNAME_RULE } from '../../src/accounts/account-names.ts';
import { PASSWORD_RULE } from '../../src/accounts/password-rules.ts';
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

/** A well-formed address of 260 characters (labels of at most 63), which a browser's type=email accepts. */
const LONG_ADDRESS = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.com`;
/** A password the rules refuse for being common, long enough to pass the browser's own checks. */
const COMMON_PASSWORD = 'password1234';

describe('self-service pages show what happens', () => {
  let server: TestServer;
  let browser: Browser;
  let inbox: Inbox;
  let mailbox: Mailbox;

  before(async () => {
    mailbox = await startMailbox();
    [server, browser] = await Promise.all([startBrowserServer({ env: { SMTP_URL: mailbox.url } }), launchBrowser()]);
    inbox = smtpInbox(mailbox);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await mailbox?.close();
  });

  const click = (page: Page, name: string) => clickAndLoad(page, page.getByRole('button', { name, exact: true }));
  const mailsTo = (address: string) => mailbox.received.filter((mail) => mail.to.includes(address)).length;
  const otherCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

  /** The rule text under an input, and the input's aria-describedby naming it. */
  async function assertRule(page: Page, inputSelector: string, ruleId: string, text: string) {
    const rule = page.locator(`#${ruleId}`);
    assert.ok(await rule.isVisible(), `${ruleId} is shown before submitting`);
    assert.equal((await rule.textContent())?.trim(), text);
    const describedBy = (await page.locator(inputSelector).getAttribute('aria-describedby')) ?? '';
    assert.ok(describedBy.split(' ').includes(ruleId), `${inputSelector} is described by ${ruleId}: ${describedBy}`);
  }

  /** The show-password button of an input switches its type and says so with aria-pressed. */
  async function assertShowPassword(page: Page, inputSelector: string) {
    const input = page.locator(inputSelector);
    const toggle = page.locator(`button.show-password[aria-controls="${(await input.getAttribute('id'))!}"]`);
    assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
    assert.equal(await input.getAttribute('type'), 'password');
    assert.equal(await toggle.getAttribute('type'), 'button', 'the toggle submits nothing');
    assert.match((await toggle.textContent()) ?? '', /Show password/);
    await toggle.click();
    assert.equal(await input.getAttribute('type'), 'text');
    assert.equal(await toggle.getAttribute('aria-pressed'), 'true');
    await toggle.click();
    assert.equal(await input.getAttribute('type'), 'password');
    assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
  }

  test('sign-up: the address on the code page, a new code on request, the rules, show-password, a refused password keeps the rest', async () => {
    await withPage(browser, {}, async (page) => {
      await page.goto(`${server.url}/account/sign-up`);
      await assertRule(page, '#email', 'email-rule', EMAIL_RULE);
      const email = newAddress('visible');
      await page.getByLabel('E-mail address').fill(email);
      assert.equal((await click(page, 'Send the code')).status(), 303);
      await page.getByLabel('Code from the e-mail').waitFor();
      assert.match((await page.locator('#sent-to').textContent()) ?? '', new RegExp(`We sent an e-mail to ${email}`));
      await checkLayoutAndCapture(page, 'visible-sign-up-code');
      const first = await inbox.next(email);

      assert.equal((await click(page, 'Send the code again')).status(), 303);
      const resent = page.locator('#resent');
      await resent.waitFor();
      assert.match((await resent.textContent()) ?? '', new RegExp(`We sent a new code to ${email}.*no longer works`));
      assert.equal(await resent.getAttribute('role'), 'status');
      await checkLayoutAndCapture(page, 'visible-sign-up-code-resent');
      const second = await inbox.next(email);
      assert.ok(first.code && second.code);
      // (One chance in a million that the new code is the old one; then the old one is not "refused".)
      const oldCode = first.code === second.code ? otherCode(second.code) : first.code;
      await page.getByLabel('Code from the e-mail').fill(oldCode);
      assert.equal((await click(page, 'Confirm')).status(), 400);
      assert.match((await page.locator('#code-error').textContent()) ?? '', /not right/);
      assert.match((await page.locator('#sent-to').textContent()) ?? '', new RegExp(email));
      await page.getByLabel('Code from the e-mail').fill(second.code);
      assert.equal((await click(page, 'Confirm')).status(), 303);

      await page.getByLabel('Username').waitFor();
      await assertRule(page, '#username', 'username-rule', USERNAME_RULE);
      await assertRule(page, '#password', 'password-rule', PASSWORD_RULE);
      await assertShowPassword(page, '#password');
      await checkLayoutAndCapture(page, 'visible-sign-up-details');
      const username = `seen${Date.now() % 1_000_000}`;
      await page.getByLabel('Username').fill(username);
      await page.locator('#password').fill(COMMON_PASSWORD);
      assert.equal((await click(page, 'Create the account')).status(), 400);
      assert.ok(await page.locator('#password-error').isVisible());
      assert.equal(await page.getByLabel('Username').inputValue(), username, 'the username is kept');
      assert.match((await page.locator('main').textContent()) ?? '', new RegExp(email), 'the address is still shown');
      assert.equal(await page.locator('#password').inputValue(), '', 'the password is not echoed back');
      const describedBy = (await page.locator('#password').getAttribute('aria-describedby')) ?? '';
      assert.deepEqual(describedBy.split(' '), ['password-error', 'password-rule']);
      await page.locator('#password').fill(STRONG_PASSWORD);
      assert.equal((await click(page, 'Create the account')).status(), 303);
      await page.getByRole('heading', { name: 'Your account' }).waitFor();
    });
  });

  test('sending the code again is held to the request limits: past them a message, Retry-After and no mail', async () => {
    await withPage(browser, {}, async (page) => {
      await page.goto(`${server.url}/account/sign-up`);
      const email = newAddress('limited');
      await page.getByLabel('E-mail address').fill(email);
      assert.equal((await click(page, 'Send the code')).status(), 303);
      // DESIGN: 5 requests per address per hour; the first was the address entered.
      for (let resend = 1; resend <= 4; resend++) {
        assert.equal((await click(page, 'Send the code again')).status(), 303, `resend ${resend}`);
        await page.locator('#resent').waitFor();
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(mailsTo(email), 5);
      const refused = await click(page, 'Send the code again');
      assert.equal(refused.status(), 429);
      assert.match(refused.headers()['retry-after'] ?? '', /^[1-9][0-9]*$/);
      const message = page.locator('#resend-error');
      assert.match((await message.textContent()) ?? '', /Too many requests for this address.*Try again in \d+ minute/);
      assert.equal(await message.getAttribute('role'), 'alert');
      assert.match((await page.locator('#sent-to').textContent()) ?? '', new RegExp(email), 'still on the code page');
      await checkLayoutAndCapture(page, 'visible-sign-up-resend-limited');
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(mailsTo(email), 5, 'no mail past the limit');
      // The code sent last still works.
      const codes: string[] = [];
      for (let n = 0; n < 5; n++) codes.push((await inbox.next(email)).code!);
      await page.getByLabel('Code from the e-mail').fill(codes.at(-1)!);
      assert.equal((await click(page, 'Confirm')).status(), 303);
      await page.getByLabel('Username').waitFor();
    });
  });

  test('an address over 254 characters is refused with a message, kept as typed, and no mail is sent', async () => {
    assert.equal(LONG_ADDRESS.length, 260);
    const sentBefore = mailbox.received.length;
    await withPage(browser, {}, async (page) => {
      for (const path of ['/account/sign-up', '/account/forgot']) {
        await page.goto(`${server.url}${path}`);
        await page.getByLabel('E-mail address').fill(LONG_ADDRESS);
        assert.equal(await page.getByLabel('E-mail address').inputValue(), LONG_ADDRESS, `${path}: not cut on input`);
        assert.equal((await click(page, 'Send the code')).status(), 400, path);
        const error = page.locator('#email-error');
        assert.equal(
          (await error.textContent())?.trim(),
          `An e-mail address has at most ${MAX_EMAIL_LENGTH} characters.`,
          path,
        );
        assert.equal(await page.getByLabel('E-mail address').inputValue(), LONG_ADDRESS, `${path}: shown as typed`);
        assert.equal(await page.locator('#email').getAttribute('aria-invalid'), 'true');
        await checkLayoutAndCapture(page, `visible-long-address${path.replaceAll('/', '-')}`);
      }

      const account = await newAccount(server);
      await signIn(page, account);
      await page.getByLabel('New e-mail address').fill(LONG_ADDRESS);
      await page.locator('#email_current_password').fill(account.password);
      assert.equal((await click(page, 'Change e-mail address')).status(), 400);
      assert.match((await page.locator('#email-error').textContent()) ?? '', /at most 254 characters/);
      assert.equal(await page.getByLabel('New e-mail address').inputValue(), LONG_ADDRESS);
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(mailbox.received.length, sentBefore, 'no mail was sent, to the long address or a cut one');
  });

  async function signIn(page: Page, account: { username: string; password: string }) {
    await page.goto(`${server.url}/account/sign-in`);
    await page.getByLabel('Username or email').fill(account.username);
    await page.locator('#password').fill(account.password);
    assert.equal((await click(page, 'Sign in')).status(), 303);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
  }

  test('reset: the address on the code page, a new code on request, the password rule and show-password', async () => {
    const account = await newAccount(server);
    await withPage(browser, {}, async (page) => {
      await page.goto(`${server.url}/account/forgot`);
      await assertRule(page, '#email', 'email-rule', EMAIL_RULE);
      await checkLayoutAndCapture(page, 'visible-forgot-email');
      await page.getByLabel('E-mail address').fill(account.email);
      assert.equal((await click(page, 'Send the code')).status(), 303);
      await page.getByLabel('Code from the e-mail').waitFor();
      assert.match(
        (await page.locator('#sent-to').textContent()) ?? '',
        new RegExp(`We sent an e-mail to ${account.email}`),
      );
      await checkLayoutAndCapture(page, 'visible-forgot-code');
      const first = await inbox.next(account.email);
      assert.equal((await click(page, 'Send the code again')).status(), 303);
      assert.match((await page.locator('#resent').textContent()) ?? '', new RegExp(account.email));
      const second = await inbox.next(account.email);
      const oldCode = first.code === second.code ? otherCode(second.code!) : first.code!;
      await page.getByLabel('Code from the e-mail').fill(oldCode);
      assert.equal((await click(page, 'Confirm')).status(), 400);
      await page.getByLabel('Code from the e-mail').fill(second.code!);
      assert.equal((await click(page, 'Confirm')).status(), 303);
      await page.getByLabel('New password').waitFor();
      await assertRule(page, '#new_password', 'new-password-rule', PASSWORD_RULE);
      await assertShowPassword(page, '#new_password');
      await page.getByLabel('New password').fill(COMMON_PASSWORD);
      assert.equal((await click(page, 'Change the password')).status(), 400);
      assert.ok(await page.locator('#new-password-error').isVisible());
      await page.getByLabel('New password').fill(STRONG_PASSWORD);
      assert.equal((await click(page, 'Change the password')).status(), 200);
      await page.getByRole('heading', { name: 'Your password was changed' }).waitFor();
    });
  });

  test('e-mail change: a refused password keeps the address, the address a link went to, a new link on request', async () => {
    const account = await newAccount(server);
    await withPage(browser, {}, async (page) => {
      await signIn(page, account);
      await assertRule(page, '#new_email', 'new-email-rule', EMAIL_RULE);
      await assertRule(page, '#new_password', 'new-password-rule', PASSWORD_RULE);
      await assertShowPassword(page, '#email_current_password');
      const next = newAddress('changed');
      await page.getByLabel('New e-mail address').fill(next);
      await page.locator('#email_current_password').fill('not the password');
      assert.equal((await click(page, 'Change e-mail address')).status(), 401);
      assert.equal(await page.getByLabel('New e-mail address').inputValue(), next, 'the address is kept');
      assert.equal(await page.locator('#email_current_password').inputValue(), '');

      await page.locator('#email_current_password').fill(account.password);
      assert.equal((await click(page, 'Change e-mail address')).status(), 303);
      const pending = page.locator('#email-pending');
      assert.match((await pending.textContent()) ?? '', new RegExp(`We sent a link to ${next}`));
      const first = await inbox.next(next);
      await inbox.next(account.email); // the notice to the old address
      assert.equal((await click(page, 'Send the link again')).status(), 303);
      assert.match((await pending.textContent()) ?? '', /The link sent before no longer works/);
      const second = await inbox.next(next);
      assert.notEqual(first.link, second.link);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(mailsTo(account.email), 1, 'the old address had its notice once');

      await page.goto(`${server.url}${first.link}`);
      await page.getByRole('heading', { name: 'This link has expired' }).waitFor();
      await page.goto(`${server.url}${second.link}`);
      assert.equal((await click(page, 'Use this e-mail address')).status(), 200);
      await page.getByRole('heading', { name: 'E-mail address changed' }).waitFor();
    });
  });

  test('the sign-in page has show-password with JavaScript, and a plain password input without', async () => {
    await withPage(browser, {}, async (page) => {
      await page.goto(`${server.url}/account/sign-in`);
      await assertShowPassword(page, '#password');
      await checkLayoutAndCapture(page, 'visible-sign-in');
    });
    await withPage(browser, { javaScriptEnabled: false }, async (page) => {
      const account = await newAccount(server);
      await page.goto(`${server.url}/account/sign-in`);
      assert.equal(await page.locator('button.show-password').count(), 0);
      await signIn(page, account);
    });
  });
});
