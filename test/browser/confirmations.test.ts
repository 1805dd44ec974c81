/**
 * Confirmation pages, the recent sign-in they need, and buttons that disable themselves after a
 * submit, in a real browser (Debian's Chromium through playwright-core), with and without
 * JavaScript (docs/decisions/0090). Screenshots at phone and desktop size go to
 * test-artifacts/screenshots/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
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

const STEP = 30_000;

describe('confirmations and single submits in a real browser', () => {
  let server: TestServer;
  let browser: Browser;

  before(async () => {
    [server, browser] = await Promise.all([startBrowserServer(), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
  const db = () => server.app.database.db;

  async function signIn(page: Page, account: { username: string; password: string }, secret: string) {
    await page.goto(`${server.url}/account/sign-in`);
    await page.getByLabel('Username or email').fill(account.username);
    await page.getByLabel('Password').fill(account.password);
    await clickAndLoad(page, page.getByRole('button', { name: 'Sign in' }));
    await page.getByLabel('Verification code').fill(totpCode(secret));
    await clickAndLoad(page, page.getByRole('button', { name: 'Verify' }));
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
  }

  const ownApps = async (userId: string) =>
    (await db().selectFrom('applications').select('client_id').where('owner_id', '=', userId).execute()).length;

  for (const javaScriptEnabled of [true, false]) {
    const suffix = javaScriptEnabled ? '' : '-nojs';
    test(`register once, then new secret and delete through their confirmation and a fresh sign-in (JavaScript ${javaScriptEnabled ? 'on' : 'off'})`, async () => {
      const secret = newTotpSecret();
      const account = await newAccount(server, { totpSecret: secret });
      await withPage(browser, { javaScriptEnabled }, async (page) => {
        await signIn(page, account, secret);
        await page.goto(`${server.url}/account/apps`);
        await page.locator('input[name=name]').fill('Clicked Twice');
        await page.locator('textarea[name=redirect_uri]').fill('https://clicked.example/callback');
        await page.locator('input[name=confidential]').check();
        const register = page.getByRole('button', { name: 'Register application' });
        if (javaScriptEnabled) {
          // A double click: the button disables itself after the first, and one application is made.
          await Promise.all([page.waitForURL(/\/account\/apps$/), register.dblclick()]);
        } else {
          await clickAndLoad(page, register);
        }
        await page.locator('#client-secret').waitFor();
        assert.equal(await ownApps(account.userId), 1);
        const firstSecret = await page.locator('#client-secret').textContent();

        // New secret: the confirmation page first, which says what it does; its button acts.
        await page.goto(`${server.url}/account/apps`);
        await clickAndLoad(page, page.getByRole('button', { name: 'New secret for Clicked Twice' }));
        await page.getByRole('heading', { name: 'New secret for Clicked Twice' }).waitFor();
        assert.match((await page.locator('#confirm-consequence').textContent()) ?? '', /stops working at once/);
        if (javaScriptEnabled) await checkLayoutAndCapture(page, 'confirm-new-secret');
        const renewed = await clickAndLoad(page, page.locator('#confirm-button'));
        assert.equal(renewed.status(), 200);
        const newSecret = await page.locator('#client-secret').textContent();
        assert.notEqual(newSecret, firstSecret);

        // Delete, cancelled: nothing happens.
        await page.goto(`${server.url}/account/apps`);
        await clickAndLoad(page, page.getByRole('button', { name: 'Delete Clicked Twice' }));
        await page.getByRole('heading', { name: 'Delete Clicked Twice' }).waitFor();
        if (javaScriptEnabled) await checkLayoutAndCapture(page, 'confirm-delete-app');
        await Promise.all([page.waitForURL(/\/account\/apps$/), page.locator('#confirm-cancel').click()]);
        assert.equal(await ownApps(account.userId), 1);

        // Signed in 11 minutes ago: prove it is you (password and code), then back to the confirmation.
        await db()
          .updateTable('web_sessions')
          .set({ created_at: Date.now() - 11 * 60_000 })
          .where('user_id', '=', account.userId)
          .execute();
        await clickAndLoad(page, page.getByRole('button', { name: 'Delete Clicked Twice' }));
        await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
        await checkLayoutAndCapture(page, `reauth${suffix}`);
        await page.getByLabel('Password').fill('wrong password here');
        await page.getByLabel('Two-step code').fill(totpCode(secret, Date.now() + STEP));
        assert.equal(
          (await clickAndLoad(page, page.getByRole('button', { name: 'Confirm and continue' }))).status(),
          401,
        );
        assert.match((await page.locator('#reauth-error').textContent()) ?? '', /not right/);
        await page.getByLabel('Password').fill(account.password);
        await page.getByLabel('Two-step code').fill(totpCode(secret, Date.now() + STEP));
        assert.equal(
          (await clickAndLoad(page, page.getByRole('button', { name: 'Confirm and continue' }))).status(),
          303,
        );
        await page.getByRole('heading', { name: 'Delete Clicked Twice' }).waitFor();
        await Promise.all([page.waitForURL(/done=deleted/), page.locator('#confirm-button').click()]);
        assert.equal(await ownApps(account.userId), 0);
        assert.match((await page.getByRole('status').textContent()) ?? '', /was deleted/);
      });
    });
  }
});
