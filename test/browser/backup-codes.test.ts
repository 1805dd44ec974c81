/**
 * Backup codes on their own page and at the two-step step, in a real browser (Debian's Chromium
 * through playwright-core): shown once when two-step turns on (with copy, download, print and "I
 * saved them"), renewed with a current code on the account page, and
 * typed into the same code input as a TOTP code; with and without JavaScript. Screenshots of each
 * new page state at phone and desktop size go to test-artifacts/screenshots/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { totpCode } from '../../src/accounts/totp.ts';
import {
  checkLayoutAndCapture,
  clickAndLoad,
  launchBrowser,
  startBrowserServer,
  withPage,
} from '../helpers/browser.ts';
import { newAccount } from '../helpers/oauth.ts';
import type { TestServer } from '../helpers/server.ts';

const STEP = 30_000;

describe('backup codes in a real browser', () => {
  let server: TestServer;
  let browser: Browser;

  before(async () => {
    [server, browser] = await Promise.all([startBrowserServer(), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function signIn(page: Page, account: { username: string; password: string }) {
    await page.goto(`${server.url}/account/sign-in`);
    await page.getByLabel('Username or email').fill(account.username);
    await page.getByLabel('Password').fill(account.password);
    assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Sign in' }))).status(), 303);
  }

  const shown = (page: Page) =>
    page
      .locator('#backup-codes li')
      .allTextContents()
      .then((codes) => codes.map((c) => c.trim()));
  const section = (page: Page) => page.locator('.backup-codes-part');

  for (const javaScriptEnabled of [true, false]) {
    test(`turn on, see the codes once, renew them, sign in with one (JavaScript ${javaScriptEnabled ? 'on' : 'off'})`, async () => {
      const account = await newAccount(server);
      const suffix = javaScriptEnabled ? '' : '-nojs';
      await withPage(browser, { javaScriptEnabled }, async (page) => {
        await signIn(page, account);
        await page.getByRole('heading', { name: 'Your account' }).waitFor();
        const secret = new URL((await page.locator('#otpauth-uri').textContent())!).searchParams.get('secret')!;
        await page.getByLabel('Code from the app').fill(totpCode(secret));
        assert.equal(
          (await clickAndLoad(page, page.getByRole('button', { name: 'Turn on two-step verification' }))).status(),
          303,
        );

        // The codes have their own page: copy, download, print, and "I saved them".
        assert.match(page.url(), /\/account\/backup-codes\?done=two-step-on$/);
        const first = await shown(page);
        assert.equal(first.length, 10);
        for (const code of first) assert.match(code, /^[a-z0-9]{4}-[a-z0-9]{4}$/);
        assert.equal(await page.locator('#copy-backup-codes').isVisible(), javaScriptEnabled);
        assert.equal(await page.locator('#print-backup-codes').isVisible(), javaScriptEnabled);
        assert.ok(await page.locator('#download-backup-codes').isVisible());
        if (javaScriptEnabled) {
          await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
          await page.locator('#copy-backup-codes').click();
          await page.getByText('Copied.').waitFor();
          const copied = await page.evaluate(() => navigator.clipboard.readText());
          assert.deepEqual(copied.trim().split('\n'), first);
          await checkLayoutAndCapture(page, 'backup-codes-page');
        }
        // The download is a real file, with or without JavaScript.
        const [download] = await Promise.all([
          page.waitForEvent('download'),
          page.locator('#download-backup-codes').click(),
        ]);
        assert.equal(download.suggestedFilename(), 'backup-codes.txt');
        const file = await (await import('node:fs/promises')).readFile((await download.path())!, 'utf8');
        assert.deepEqual(
          file.split('\r\n').filter((line) => /^[a-z0-9]{4}-[a-z0-9]{4}$/.test(line)),
          first,
        );
        // Printed: only the codes (and what they are), no buttons.
        await page.emulateMedia({ media: 'print' });
        assert.equal(await page.locator('#download-backup-codes').isVisible(), false);
        assert.ok(await page.locator('#backup-codes').isVisible());
        await page.emulateMedia({ media: 'screen' });
        // "I saved them" needs its box ticked, then leads back to the account.
        await page.locator('#saved-backup-codes').check();
        await Promise.all([
          page.waitForURL(/\/account\?done=backup-codes-saved/),
          page.locator('#backup-codes-saved').click(),
        ]);
        assert.match((await section(page).textContent()) ?? '', /10 backup codes left/);
        assert.deepEqual(await shown(page), [], 'the account page shows none');

        await page.goto(`${server.url}/account/backup-codes`);
        assert.deepEqual(await shown(page), [], 'shown only once');
        await page.goto(`${server.url}/account`);

        // A new set: refused without a right code, the error next to its input.
        await page.getByLabel('Current code, for a new set').fill(totpCode(secret, Date.now() + 20 * STEP));
        assert.equal(
          (await clickAndLoad(page, page.getByRole('button', { name: 'Make new backup codes' }))).status(),
          401,
        );
        assert.match((await section(page).getByRole('alert').textContent()) ?? '', /code is not right/);
        if (javaScriptEnabled) await checkLayoutAndCapture(page, 'account-backup-codes-error');
        await page.getByLabel('Current code, for a new set').fill(first[0]!);
        assert.equal(
          (await clickAndLoad(page, page.getByRole('button', { name: 'Make new backup codes' }))).status(),
          303,
        );
        assert.match((await page.getByRole('status').first().textContent()) ?? '', /new set of backup codes/);
        const second = await shown(page);
        assert.equal(second.length, 10);
        assert.ok(!second.some((code) => first.includes(code)));
        if (javaScriptEnabled) await checkLayoutAndCapture(page, 'backup-codes-page-renewed');

        // Signed out, a backup code (typed in capitals) passes the two-step step.
        await page.goto(`${server.url}/account`);
        await clickAndLoad(page, page.getByRole('button', { name: 'Sign out' }));
        await signIn(page, account);
        await page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
        assert.match((await page.locator('main, body').first().textContent()) ?? '', /backup codes/);
        if (javaScriptEnabled) await checkLayoutAndCapture(page, `two-step-backup-code${suffix}`);
        await page.getByLabel('Verification code').fill(first[1]!);
        assert.equal(
          (await clickAndLoad(page, page.getByRole('button', { name: 'Verify' }))).status(),
          401,
          'a code of the old set',
        );
        await page.getByLabel('Verification code').fill(second[0]!.toUpperCase());
        assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Verify' }))).status(), 303);
        await page.getByRole('heading', { name: 'Your account' }).waitFor();
        assert.match((await section(page).textContent()) ?? '', /9 backup codes left/);
      });
    });
  }
});
