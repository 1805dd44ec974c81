/**
 * Accessibility (WCAG 2.2 AA) of every page a person can see, checked by axe-core in Chromium at
 * phone (390 px) and desktop (1280 px) widths: no violation of the rules tagged wcag2a, wcag2aa,
 * wcag21a, wcag21aa and wcag22aa (docs/decisions/0099). Each page is reached as a person reaches it:
 * through the forms, with the codes the real SMTP server received, an OAuth authorize request of a
 * test application, a virtual authenticator for the passkey. One server (BASE_URL on localhost, so
 * passkeys are offered) and one browser for all.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import {
  axeViolations,
  clickAndLoad,
  DESKTOP,
  launchBrowser,
  PHONE,
  SCREENSHOT_DIR,
  startBrowserServer,
  withPage,
} from '../helpers/browser.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { newAccount, newApp, pkcePair, REDIRECT_URI } from '../helpers/oauth.ts';
import { type Inbox, newAddress, STRONG_PASSWORD, smtpInbox } from '../helpers/self-service.ts';
import type { TestServer } from '../helpers/server.ts';
import { awayFromStepEdge, TOTP_STEP_MS } from '../helpers/totp.ts';

/** WCAG 2.0, 2.1 and 2.2, levels A and AA (axe's tags; 2.2 adds target size at AA). */

describe('accessibility of every page (axe-core, WCAG 2.2 AA) at phone and desktop widths', () => {
  let server: TestServer;
  let browser: Browser;
  let mailbox: Mailbox;
  let inbox: Inbox;

  before(async () => {
    mailbox = await startMailbox();
    [server, browser] = await Promise.all([
      startBrowserServer({ localhost: true, env: { SMTP_URL: mailbox.url } }),
      launchBrowser(),
    ]);
    inbox = smtpInbox(mailbox);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await mailbox?.close();
  });

  /** Violations (and split words) found on the pages of one test, as lines of a report. */
  let found: string[] = [];

  /**
   * Runs axe on the page as it is, at both widths, and at phone width looks for text that wraps
   * where it is not meant to; records what it finds under `name`. (Legacy mode runs axe in the
   * page itself: these pages have no frames, and it saves the blank page axe opens otherwise.)
   */
  async function audit(page: Page, name: string, options: { screenshot?: string } = {}) {
    for (const [width, viewport] of [
      ['phone', PHONE],
      ['desktop', DESKTOP],
    ] as const) {
      await page.setViewportSize(viewport);
      found.push(...(await axeViolations(page, `${name} (${width})`)));
      if (width === 'phone') {
        const { scrollWidth, split } = await page.evaluate(splitWords);
        if (scrollWidth > PHONE.width) found.push(`${name} (phone): the page scrolls sideways (${scrollWidth} px)`);
        for (const word of split) found.push(`${name} (phone): "${word}" is split across lines, yet fits on one`);
        if (options.screenshot) {
          mkdirSync(SCREENSHOT_DIR, { recursive: true });
          await page.screenshot({ path: `${SCREENSHOT_DIR}/${options.screenshot}-phone.png`, fullPage: true });
        }
      }
    }
    await page.setViewportSize(DESKTOP);
  }

  function assertNoViolations() {
    const report = found;
    found = [];
    assert.equal(report.length, 0, `${report.length} problems:\n${report.join('\n')}`);
  }

  const click = (page: Page, name: string) => clickAndLoad(page, page.getByRole('button', { name, exact: true }));

  async function fillAndClick(page: Page, fields: Record<string, string>, button: string) {
    for (const [label, value] of Object.entries(fields)) await page.getByLabel(label, { exact: true }).fill(value);
    return click(page, button);
  }

  async function signIn(page: Page, account: { username: string; password: string }, secret?: string) {
    await page.goto(`${server.url}/account/sign-in`);
    await fillAndClick(page, { 'Username or email': account.username, Password: account.password }, 'Sign in');
    if (secret) await fillAndClick(page, { 'Verification code': totpCode(secret) }, 'Verify');
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
  }

  test('pages of a visitor: home, sign-in, device, not found, expired link, spawn codes', async () => {
    // A mod with an engram whose spawn command (a long path) is shown on its spawn-code page.
    const owner = await newAccount(server);
    const modId = String(900_000_000 + process.pid);
    const now = Date.now();
    const path = '/Game/Mods/AxeTestMod/Saddles/PrimalItemArmor_AxeTestSaddle.PrimalItemArmor_AxeTestSaddle';
    const db = server.app.database.db;
    await db
      .insertInto('mods')
      .values({
        mod_id: modId,
        user_id: owner.userId,
        name: 'Axe Test Mod',
        confirmed: 1,
        confirmation_code: 'axe',
        pull_url: null,
        created_at: now,
      })
      .execute();
    await db
      .insertInto('engrams')
      .values({
        uid: createHash('md5').update(path.toLowerCase()).digest('hex'),
        path,
        class: 'PrimalItemArmor_AxeTestSaddle_C',
        label: 'Axe Test Saddle',
        availability: 1,
        can_blueprint: 1,
        mod_id: modId,
        user_id: owner.userId,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await withPage(browser, {}, async (page) => {
      await page.goto(server.url);
      await audit(page, 'home');
      await page.goto(`${server.url}/account/sign-in`);
      await audit(page, 'sign-in');
      assert.equal(
        (
          await fillAndClick(page, { 'Username or email': 'nobody-here', Password: 'wrong password' }, 'Sign in')
        ).status(),
        401,
      );
      await audit(page, 'sign-in, wrong password');
      await page.goto(`${server.url}/account/sign-in?signed_out=1`);
      await audit(page, 'sign-in, signed out');
      await page.goto(`${server.url}/device`);
      await audit(page, 'device');
      assert.equal((await fillAndClick(page, { Code: 'BCDF-GHJK' }, 'Continue')).status(), 400);
      await audit(page, 'device, unknown code');
      assert.equal((await page.goto(`${server.url}/account/nope`))?.status(), 404);
      await audit(page, 'not found');
      assert.equal((await page.goto(`${server.url}/account/verify?token=${'x'.repeat(43)}`))?.status(), 410);
      await audit(page, 'expired link');
      assert.equal((await page.goto(`${server.url}/spawn`))?.status(), 400);
      await audit(page, 'spawn codes, no mod id');
      await page.goto(`${server.url}/spawn?mod_id=${modId}`);
      await page.getByRole('cell', { name: 'Axe Test Saddle' }).waitFor();
      await audit(page, 'spawn codes', { screenshot: 'wrap-spawn-codes' });
    });
    assertNoViolations();
  });

  test('sign-up and password reset, each step, with its errors; the link page; "password changed"', async () => {
    const email = newAddress('apersonwitharatherlongmailboxnamethatgoeson');
    await withPage(browser, {}, async (page) => {
      await page.goto(`${server.url}/account/sign-up`);
      await audit(page, 'sign-up: address');
      assert.equal((await fillAndClick(page, { 'E-mail address': 'a..b@example.com' }, 'Send the code')).status(), 400);
      await audit(page, 'sign-up: address refused');
      assert.equal((await fillAndClick(page, { 'E-mail address': email }, 'Send the code')).status(), 303);
      const mail = await inbox.next(email);
      await audit(page, 'sign-up: code', { screenshot: 'wrap-long-address' });
      assert.equal((await fillAndClick(page, { 'Code from the e-mail': '000000' }, 'Confirm')).status(), 400);
      await audit(page, 'sign-up: wrong code');
      // The link in the mail opens a page with one button (the same step as the code).
      await page.goto(`${server.url}${mail.link}`);
      await audit(page, 'verify link');
      await page.goto(`${server.url}/account/sign-up`);
      assert.equal((await fillAndClick(page, { 'Code from the e-mail': mail.code! }, 'Confirm')).status(), 303);
      await audit(page, 'sign-up: details');
      const username = `axe${Date.now().toString(36)}`;
      assert.equal(
        (await fillAndClick(page, { Username: username, Password: 'password' }, 'Create the account')).status(),
        400,
      );
      await audit(page, 'sign-up: password refused');
      await fillAndClick(page, { Username: username, Password: STRONG_PASSWORD }, 'Create the account');
      await page.getByRole('heading', { name: 'Your account' }).waitFor();
    });

    const account = await newAccount(server);
    await withPage(browser, {}, async (page) => {
      await page.goto(`${server.url}/account/forgot`);
      await audit(page, 'reset: address');
      assert.equal((await fillAndClick(page, { 'E-mail address': account.email }, 'Send the code')).status(), 303);
      const mail = await inbox.next(account.email);
      await audit(page, 'reset: code');
      assert.equal((await click(page, 'Send the code again')).status(), 303);
      const again = await inbox.next(account.email);
      await audit(page, 'reset: code sent again');
      assert.equal((await fillAndClick(page, { 'Code from the e-mail': again.code! }, 'Confirm')).status(), 303);
      assert.notEqual(mail.code, again.code);
      await audit(page, 'reset: new password');
      assert.equal((await fillAndClick(page, { 'New password': 'password' }, 'Change the password')).status(), 400);
      await audit(page, 'reset: password refused');
      assert.equal(
        (await fillAndClick(page, { 'New password': STRONG_PASSWORD }, 'Change the password')).status(),
        200,
      );
      await page.getByRole('heading', { name: 'Your password was changed' }).waitFor();
      await audit(page, 'password changed');
    });
    assertNoViolations();
  });

  test('signing in to an application: sign-in, two-step code, consent', async () => {
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const app = await newApp(server, { name: 'Axe Test App' });
    const { challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: app.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'common users:read',
      state: 'st4te',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    await awayFromStepEdge();
    await withPage(browser, {}, async (page) => {
      await page.goto(`${server.url}/v4/login?${query}`);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await audit(page, 'login: sign-in');
      await fillAndClick(page, { 'Username or email': account.username, Password: account.password }, 'Sign in');
      await page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
      await audit(page, 'login: two-step code');
      assert.equal((await fillAndClick(page, { 'Verification code': '000000' }, 'Verify')).status(), 401);
      await audit(page, 'login: wrong two-step code');
      await fillAndClick(page, { 'Verification code': totpCode(secret) }, 'Verify');
      await page.getByRole('button', { name: 'Allow' }).waitFor();
      await audit(page, 'login: consent');
    });
    assertNoViolations();
  });

  test('the account page, backup codes, developer applications, confirmations, re-authentication', async () => {
    const account = await newAccount(server);
    await withPage(browser, {}, async (page) => {
      await signIn(page, account);
      await audit(page, 'account, two-step off');
      assert.equal(
        (
          await fillAndClick(
            page,
            { 'Current password': 'not the password', 'New password': STRONG_PASSWORD },
            'Change password',
          )
        ).status(),
        401,
      );
      await audit(page, 'account, password refused');
      await fillAndClick(
        page,
        { 'New e-mail address': newAddress('axe-new'), 'Your password, to confirm it is you': account.password },
        'Change e-mail address',
      );
      await page.locator('#email-pending').waitFor();
      await audit(page, 'account, e-mail change pending');
      await page.goto(`${server.url}/account/apps`);
      await audit(page, 'applications, two-step off');

      await page.goto(`${server.url}/account`);
      const secret = new URL((await page.locator('#otpauth-uri').textContent())!).searchParams.get('secret')!;
      await awayFromStepEdge();
      await fillAndClick(page, { 'Code from the app': totpCode(secret) }, 'Turn on two-step verification');
      assert.match(page.url(), /\/account\/backup-codes/);
      await audit(page, 'backup codes');
      await page.locator('#saved-backup-codes').check();
      await Promise.all([page.waitForURL(/done=backup-codes-saved/), page.locator('#backup-codes-saved').click()]);
      await audit(page, 'account, two-step on');

      await page.goto(`${server.url}/account/apps`);
      await audit(page, 'applications, none');
      await page.locator('input[name=name]').fill('Axe App');
      await page.locator('textarea[name=redirect_uri]').fill('http://not-https.example/callback');
      assert.equal((await click(page, 'Register application')).status(), 400);
      await audit(page, 'applications, form refused');
      await page.locator('input[name=website]').fill('https://axe-app.example');
      await page
        .locator('textarea[name=redirect_uri]')
        .fill(`https://axe-app.example/callback/${'a-long-path-segment-'.repeat(6)}`);
      await page.locator('input[name=confidential]').check();
      assert.equal((await click(page, 'Register application')).status(), 200);
      await page.locator('#client-secret').waitFor();
      await audit(page, 'application credentials', { screenshot: 'wrap-credentials' });
      await page.goto(`${server.url}/account/apps`);
      await audit(page, 'applications, one', { screenshot: 'wrap-applications' });
      await page.getByRole('link', { name: 'Edit Axe App' }).click();
      await page
        .getByRole('heading', { name: /Axe App/ })
        .first()
        .waitFor();
      await audit(page, 'application edit');
      await page.goto(`${server.url}/account/apps`);
      await click(page, 'New secret for Axe App');
      await page.locator('#confirm-button').waitFor();
      await audit(page, 'confirm new secret');
      await page.goto(`${server.url}/account/apps`);
      await click(page, 'Delete Axe App');
      await page.locator('#confirm-button').waitFor();
      await audit(page, 'confirm delete application');

      // Signed in 11 minutes ago: a deletion asks to prove it is you first.
      await server.app.database.db
        .updateTable('web_sessions')
        .set({ created_at: Date.now() - 11 * 60_000 })
        .where('user_id', '=', account.userId)
        .execute();
      await page.goto(`${server.url}/account/apps`);
      await click(page, 'Delete Axe App');
      await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
      await audit(page, 're-authentication');
      await page.getByLabel('Password', { exact: true }).fill('wrong password here');
      await page.getByLabel('Two-step code').fill(totpCode(secret, Date.now() + TOTP_STEP_MS));
      assert.equal((await click(page, 'Confirm and continue')).status(), 401);
      await audit(page, 're-authentication, refused');
    });
    assertNoViolations();
  });

  test('passkeys: the account page with one, its removal confirmation, the sign-in page offering them', async () => {
    const account = await newAccount(server);
    await withPage(browser, {}, async (page) => {
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('WebAuthn.enable');
      const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: {
          protocol: 'ctap2',
          transport: 'internal',
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
          automaticPresenceSimulation: true,
        },
      });
      await signIn(page, account);
      await page.getByLabel('Name of the new passkey (optional)').fill('Laptop');
      await Promise.all([page.waitForURL(/done=passkey-added/), page.locator('#passkey-add').click()]);
      await page.locator('#passkey-list').waitFor();
      await audit(page, 'account, with a passkey');
      await click(page, 'Remove the passkey Laptop');
      await page.locator('#confirm-button').waitFor();
      await audit(page, 'confirm passkey removal');
      // Without its authenticator, the browser does not answer the sign-in page's passkey request at once.
      await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId });
      await page.goto(`${server.url}/account`);
      await click(page, 'Sign out');
      await page.locator('#passkey-sign-in').waitFor();
      await audit(page, 'sign-in with a passkey offered');
    });
    assertNoViolations();
  });
});

/**
 * Runs in the page: the words (runs of text between spaces and after hyphens, where lines may break) split across lines although
 * they are narrower than their line, and the page's scroll width. Prose breaks between words; an id,
 * a secret, a URL or an address breaks inside only where it is wider than the line, never in a
 * place where it would have fit on the next one.
 */
function splitWords(): { scrollWidth: number; split: string[] } {
  const split: string[] = [];
  const walker = document.createTreeWalker(document.querySelector('main') ?? document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node as Text;
    let box = text.parentElement;
    while (box?.parentElement && ['inline', 'contents'].includes(getComputedStyle(box).display))
      box = box.parentElement;
    if (!box) continue;
    const style = getComputedStyle(box);
    const line = box.clientWidth - Number.parseFloat(style.paddingLeft) - Number.parseFloat(style.paddingRight);
    for (const word of text.data.matchAll(/[^\s\-\u2010-\u2014]+/g)) {
      const range = document.createRange();
      range.setStart(text, word.index);
      range.setEnd(text, word.index + word[0].length);
      const rects = [...range.getClientRects()].filter((rect) => rect.width > 0);
      const lines = new Set(rects.map((rect) => Math.round(rect.bottom)));
      const wordWidth = rects.reduce((sum, rect) => sum + rect.width, 0);
      if (lines.size > 1 && wordWidth < line - 1) split.push(word[0]);
    }
  }
  return { scrollWidth: document.documentElement.scrollWidth, split };
}
