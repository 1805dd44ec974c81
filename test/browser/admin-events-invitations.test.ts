/**
 * The console's events and invitations pages and the invitation's sign-up page in Chromium, at
 * phone (390 px) and desktop (1280 px) widths: screenshots, the phone layout (no sideways
 * scrolling, controls inside the screen and tall enough), and axe-core (WCAG 2.2 AA) with no
 * violation. An operator invites an address through the form; the real SMTP server carries the
 * link, which a fresh browser opens to create the account.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { makeOperator } from '../../src/accounts/lifecycle.ts';
import { totpCode } from '../../src/accounts/totp.ts';
import { uuidv7 } from '../../src/http/uuid.ts';
import {
  axeViolations,
  checkLayoutAndCapture,
  clickAndLoad,
  DESKTOP,
  launchBrowser,
  PHONE,
  startBrowserServer,
  withPage,
} from '../helpers/browser.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { newAccount } from '../helpers/oauth.ts';
import type { TestServer } from '../helpers/server.ts';
import { awayFromStepEdge } from '../helpers/totp.ts';

const SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';

describe('console events and invitations in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let mailbox: Mailbox;
  let operator: { username: string; password: string; userId: string };

  before(async () => {
    mailbox = await startMailbox();
    [server, browser] = await Promise.all([
      startBrowserServer({ env: { SIGN_UP: 'invite', SMTP_URL: mailbox.url } }),
      launchBrowser(),
    ]);
    operator = await newAccount(server, { totpSecret: SECRET });
    await makeOperator(
      {
        db: server.app.database.db,
        applicationSessions: server.app.applicationSessions,
        erasers: server.app.accountErasers,
        via: 'cli',
        actorId: null,
      },
      operator.userId,
    );
    const person = await newAccount(server);
    const now = Date.now();
    const kinds = ['sign_in_failed', 'account_locked', 'client_authentication_failed', 'password_reset'];
    await server.app.database.db
      .insertInto('security_events')
      .values(
        Array.from({ length: 12 }, (_, i) => ({
          event_id: uuidv7(),
          kind: kinds[i % kinds.length]!,
          user_id: i % 3 === 2 ? null : person.userId,
          client_id: i % 4 === 2 ? 'b1946ac9-2c62-4b45-9d0b-4c1a93e1e2a7' : null,
          ip: i % 2 === 0 ? '2001:db8:85a3:8d3:1319:8a2e:370:7348' : '203.0.113.7',
          details: JSON.stringify({
            page: 'sign_in',
            via: 'web',
            operator_id: operator.userId,
            reason: 'a long reason '.repeat(4),
          }),
          created_at: now - i * 60_000,
        })),
      )
      .execute();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await mailbox?.close();
  });

  async function axe(page: Page, name: string) {
    const found: string[] = [];
    for (const [width, viewport] of [
      ['phone', PHONE],
      ['desktop', DESKTOP],
    ] as const) {
      await page.setViewportSize(viewport);
      found.push(...(await axeViolations(page, `${name} (${width})`)));
    }
    assert.deepEqual(found, []);
  }

  async function signIn(page: Page) {
    await page.goto(`${server.url}/account/sign-in`);
    await page.getByLabel('Username or email', { exact: true }).fill(operator.username);
    await page.getByLabel('Password', { exact: true }).fill(operator.password);
    await clickAndLoad(page, page.getByRole('button', { name: 'Sign in', exact: true }));
    await awayFromStepEdge();
    await page.getByLabel('Verification code', { exact: true }).fill(totpCode(SECRET));
    await clickAndLoad(page, page.getByRole('button', { name: 'Verify', exact: true }));
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
  }

  test('events, invitations and the invitation sign-up: screenshots, layout and axe at both widths', async () => {
    let link = '';
    await withPage(browser, {}, async (page) => {
      await signIn(page);
      await page.goto(`${server.url}/admin/events`);
      await page.getByRole('heading', { name: 'Events', exact: true }).waitFor();
      assert.ok((await page.locator('.event-row').count()) >= 12);
      await checkLayoutAndCapture(page, 'admin-events');
      await axe(page, 'admin-events');
      // Filtered through the form, then a bad filter.
      await page.getByLabel('Kind', { exact: true }).selectOption('account_locked');
      await Promise.all([
        page.waitForURL(/kind=account_locked/),
        page.getByRole('button', { name: 'Show events' }).click(),
      ]);
      assert.equal(await page.locator('.event-row').count(), 3);
      await page.getByLabel('From', { exact: true }).fill('last tuesday');
      await Promise.all([page.waitForURL(/from=last/), page.getByRole('button', { name: 'Show events' }).click()]);
      await page.getByRole('alert').waitFor();
      assert.match((await page.getByRole('alert').textContent()) ?? '', /not an ISO 8601 date/);
      await checkLayoutAndCapture(page, 'admin-events-bad-filter');
      await axe(page, 'admin-events-bad-filter');

      await page.goto(`${server.url}/admin/invitations`);
      await page.getByLabel('E-mail address', { exact: true }).fill('first.invited.person@example.org');
      await clickAndLoad(page, page.getByRole('button', { name: 'Send the invitation' }));
      await page.getByRole('status').waitFor();
      await page
        .getByLabel('E-mail address', { exact: true })
        .fill('a.person.with.a.rather.long.address@subdomain.example.org');
      await clickAndLoad(page, page.getByRole('button', { name: 'Send the invitation' }));
      assert.equal(await page.locator('.invitation-row').count(), 2);
      await checkLayoutAndCapture(page, 'admin-invitations');
      await axe(page, 'admin-invitations');
      await page.getByLabel('E-mail address', { exact: true }).fill('not an address');
      await page.locator('form.narrow').evaluate((form: HTMLFormElement) => form.setAttribute('novalidate', ''));
      await clickAndLoad(page, page.getByRole('button', { name: 'Send the invitation' }));
      await page.getByRole('alert').waitFor();
      await checkLayoutAndCapture(page, 'admin-invitations-error');
      await axe(page, 'admin-invitations-error');
      const mail = await mailbox.next('first.invited.person@example.org');
      link = /(http:\/\/[^\s]+\/account\/sign-up\?invitation=[A-Za-z0-9_-]{43})/.exec(mail.text)![1]!;
    });
    await withPage(browser, {}, async (page) => {
      await page.goto(link);
      await page.getByRole('heading', { name: 'Create an account' }).waitFor();
      await checkLayoutAndCapture(page, 'invited-sign-up');
      await axe(page, 'invited-sign-up');
      await page.getByLabel('Username', { exact: true }).fill(`invited${process.pid}`);
      await page.getByLabel('Password', { exact: true }).fill('a long invited passphrase 42');
      await clickAndLoad(page, page.getByRole('button', { name: 'Create the account' }));
      await page.getByRole('heading', { name: 'Your account' }).waitFor();
      await page.goto(link);
      await page.getByRole('heading', { name: 'This invitation was used' }).waitFor();
      await checkLayoutAndCapture(page, 'invited-sign-up-used', { hasForm: false });
      await axe(page, 'invited-sign-up-used');
    });
  });
});
