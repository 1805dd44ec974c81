/**
 * The operator console's pages in Chromium (issue 44): /admin, the accounts list, an account's
 * page, a deletion's confirmation and the applications list, reached as an operator reaches them
 * (signed in with a two-step code, through the links and buttons). Each is screenshot at phone
 * (390 px) and desktop (1280 px) width and checked by axe-core (WCAG 2.2 AA) at both, with no
 * violation (docs/decisions/0099).
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { makeOperator } from '../../src/accounts/lifecycle.ts';
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
import { newAccount, newApp } from '../helpers/oauth.ts';
import type { TestServer } from '../helpers/server.ts';
import { awayFromStepEdge } from '../helpers/totp.ts';

describe('the operator console in Chromium: screenshots and axe at phone and desktop widths', () => {
  let server: TestServer;
  let browser: Browser;
  before(async () => {
    [server, browser] = await Promise.all([startBrowserServer(), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const found: string[] = [];

  /** Screenshots the page at both widths and runs axe at each; the phone layout never scrolls sideways. */
  async function audit(page: Page, name: string) {
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    for (const [width, viewport] of [
      ['phone', PHONE],
      ['desktop', DESKTOP],
    ] as const) {
      await page.setViewportSize(viewport);
      found.push(...(await axeViolations(page, `${name} (${width})`)));
      if (width === 'phone') {
        const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
        if (scrollWidth > PHONE.width) found.push(`${name} (phone): the page scrolls sideways (${scrollWidth} px)`);
      }
      await page.screenshot({ path: `${SCREENSHOT_DIR}/admin-${name}-${width}.png`, fullPage: true });
    }
    await page.setViewportSize(DESKTOP);
  }

  test('console, accounts, an account, a deletion’s confirmation, applications', async () => {
    const db = server.app.database.db;
    const secret = newTotpSecret();
    const operator = await newAccount(server, { totpSecret: secret });
    await makeOperator(
      {
        db,
        applicationSessions: server.app.applicationSessions,
        erasers: server.app.accountErasers,
        via: 'cli',
        actorId: null,
      },
      operator.userId,
    );
    const person = await newAccount(server, { totpSecret: newTotpSecret() });
    const locked = await newAccount(server);
    await db
      .updateTable('users')
      .set({ locked_at: Date.now(), lock_reason: 'Sent spam from many addresses' })
      .where('user_id', '=', locked.userId)
      .execute();
    await newApp(server, { name: 'Operator Dashboard', confidential: true });
    const owned = await newApp(server, { name: 'A developer’s long-named application for testing' });
    await db
      .updateTable('applications')
      .set({ owner_id: person.userId })
      .where('client_id', '=', owned.clientId)
      .execute();

    await withPage(browser, {}, async (page) => {
      await awayFromStepEdge();
      await page.goto(`${server.url}/account/sign-in`);
      await page.getByLabel('Username or email', { exact: true }).fill(operator.username);
      await page.getByLabel('Password', { exact: true }).fill(operator.password);
      await clickAndLoad(page, page.getByRole('button', { name: 'Sign in', exact: true }));
      await page.getByLabel('Verification code', { exact: true }).fill(totpCode(secret));
      await clickAndLoad(page, page.getByRole('button', { name: 'Verify', exact: true }));

      await page.goto(`${server.url}/admin`);
      await page.getByRole('heading', { name: 'Operator console' }).waitFor();
      await audit(page, 'home');

      await page.getByRole('link', { name: 'Accounts', exact: true }).first().click();
      await page.getByRole('heading', { name: 'Accounts', exact: true }).waitFor();
      await audit(page, 'users');
      // A search, through the form.
      await page.getByLabel('Username or address starts with').fill(person.username.slice(0, 12).toUpperCase());
      await clickAndLoadGet(page, page.getByRole('button', { name: 'Search' }));
      assert.match(page.url(), /q=/);
      await page.getByRole('link', { name: person.username }).click();
      await page.getByRole('heading', { name: person.username }).waitFor();
      await audit(page, 'user');

      // Lock, as an operator would: a reason, then the button.
      await page.getByLabel(/Reason for the lock/).fill('Asked by the person');
      await clickAndLoad(page, page.getByRole('button', { name: 'Lock the account' }));
      await page.getByText('The account is locked').first().waitFor();
      await audit(page, 'user-locked');

      await clickAndLoad(page, page.getByRole('button', { name: 'Delete the account…' }));
      await page.getByRole('heading', { name: `Delete ${person.username}` }).waitFor();
      await audit(page, 'confirm-delete');
      await page.getByRole('link', { name: 'Cancel' }).click();

      await page.goto(`${server.url}/admin/apps`);
      await page.getByRole('heading', { name: 'Applications', exact: true }).waitFor();
      await audit(page, 'apps');
      await clickAndLoad(page, page.getByRole('button', { name: 'Suspend Operator Dashboard' }));
      await page.getByText('The application is suspended').waitFor();
      await audit(page, 'apps-suspended');
    });
    assert.equal(found.length, 0, `${found.length} problems:\n${found.join('\n')}`);
  });
});

/** Clicks a GET form's button; waits for the page it loads. */
async function clickAndLoadGet(page: Page, button: ReturnType<Page['getByRole']>) {
  await Promise.all([page.waitForURL(/\?/), button.click()]);
  await page.waitForLoadState('domcontentloaded');
}
