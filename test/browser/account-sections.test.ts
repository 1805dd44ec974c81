/**
 * The account page's parts (profile and e-mail, security, applications, developer) and the links
 * to them, at phone and desktop width; and the browser sign-ins listed in its security part: two
 * browsers of one account, each named by its device and browser, one signed out from the other,
 * then all others at once. Over HTTP: another account's sign-in can not be named.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { listSecurityEvents } from '../../src/accounts/security-events.ts';
import {
  clickAndLoad,
  DESKTOP,
  launchBrowser,
  PHONE,
  SCREENSHOT_DIR,
  startBrowserServer,
  watchPage,
} from '../helpers/browser.ts';
import { FormClient, newAccount } from '../helpers/oauth.ts';
import type { TestServer } from '../helpers/server.ts';

const FIREFOX_ON_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0';
const SAFARI_ON_IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';
const CHROME_ON_ANDROID =
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36';

describe('account page parts and browser sign-ins', () => {
  let server: TestServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  before(async () => {
    [server, browser] = await Promise.all([startBrowserServer(), launchBrowser()]);
  });
  after(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await server?.close();
  });

  /** A browser (its own context, its own User-Agent) signed in to the account page. */
  async function signedInBrowser(account: { username: string; password: string }, userAgent: string) {
    const context = await browser.newContext({ viewport: DESKTOP, userAgent });
    contexts.push(context);
    const page = await context.newPage();
    const watcher = watchPage(page);
    await page.goto(`${server.url}/account`);
    await page.getByLabel('Username or email').fill(account.username);
    await page.getByLabel('Password').fill(account.password);
    assert.equal((await clickAndLoad(page, page.getByRole('button', { name: 'Sign in' }))).status(), 303);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    return { page, watcher };
  }

  const browserRows = (page: Page) => page.locator('#browser-list li.browser-row');
  const rowOf = (page: Page, text: string) => browserRows(page).filter({ hasText: text });

  test('the parts and their links, at phone and desktop width, without sideways scrolling', async () => {
    const account = await newAccount(server);
    const { page, watcher } = await signedInBrowser(account, FIREFOX_ON_WINDOWS);
    const parts = [
      ['Profile and e-mail', 'profile'],
      ['Security', 'security'],
      ['Applications', 'applications'],
      ['Developer', 'developer'],
    ] as const;
    // The forms DESIGN names stay on the one page, each in its part.
    const formsIn = {
      profile: ['form[action="/account/email"]'],
      security: [
        'form[action="/account/password"] input[name=current_password]',
        'form[action="/account/two-step"] button[name=two_step]',
        '#otpauth-uri',
        'form[action="/account/browsers/others"], #browser-list',
        '#passkeys',
        '#devices-heading',
      ],
      applications: ['#apps-heading'],
      developer: ['a[href="/account/apps"]'],
    };
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    for (const [size, viewport] of [
      ['phone', PHONE],
      ['desktop', DESKTOP],
    ] as const) {
      await page.setViewportSize(viewport);
      await page.goto(`${server.url}/account`);
      const nav = page.getByRole('navigation', { name: 'Parts of this page' });
      for (const [name, id] of parts) {
        const part = page.locator(`section#${id}`);
        assert.equal(await part.count(), 1, `${id} part`);
        assert.equal(await part.getByRole('heading', { level: 2 }).count(), 1, `${id} has one heading`);
        for (const selector of formsIn[id])
          assert.ok((await part.locator(selector).count()) > 0, `${selector} in ${id}`);
        const link = nav.getByRole('link', { name, exact: true });
        assert.ok(await link.isVisible(), `link to ${id} at ${size} width`);
        await link.click();
        await page.waitForFunction((hash) => location.hash === hash, `#${id}`);
        // The part's heading is on screen, below the links that stay at the top.
        const [heading, links] = await Promise.all([
          part.getByRole('heading', { level: 2 }).boundingBox(),
          nav.boundingBox(),
        ]);
        assert.ok(heading && links, `${id}: heading and links laid out`);
        // Brought up under the links, unless the page ends first (the last, short parts).
        const atEnd = await page.evaluate(
          () => window.scrollY + window.innerHeight >= document.scrollingElement!.scrollHeight - 1,
        );
        assert.ok(heading.y >= links.y + links.height - 1, `${id} heading hidden under the links at ${size}`);
        assert.ok(heading.y < viewport.height, `${id} heading not on screen at ${size}`);
        if (!atEnd)
          assert.ok(heading.y < viewport.height / 3, `${id} heading not brought up at ${size} (${heading.y})`);
        const widths = await page.evaluate(() => ({
          scroll: document.scrollingElement!.scrollWidth,
          inner: window.innerWidth,
        }));
        assert.ok(widths.scroll <= widths.inner, `scrolls sideways at ${size}: ${widths.scroll} > ${widths.inner}`);
      }
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: `${SCREENSHOT_DIR}/account-sections-${size}.png`, fullPage: true });
    }
    // The setup link, a long URL, wraps inside the page rather than widening it.
    await page.setViewportSize(PHONE);
    const uri = await page.locator('#otpauth-uri').boundingBox();
    assert.ok(uri && uri.x + uri.width <= PHONE.width, 'the otpauth URI fits the phone width');
    assert.deepEqual(watcher.problems, []);
  });

  test('two browsers listed by device and browser; one signs the other out, then all others', async () => {
    const account = await newAccount(server);
    const first = await signedInBrowser(account, FIREFOX_ON_WINDOWS);
    const second = await signedInBrowser(account, SAFARI_ON_IPHONE);

    await first.page.goto(`${server.url}/account`);
    assert.equal(await browserRows(first.page).count(), 2);
    const firefox = rowOf(first.page, 'Firefox 128 on Windows computer');
    const safari = rowOf(first.page, 'Safari 17 on iPhone');
    assert.equal(await firefox.count(), 1);
    assert.equal(await safari.count(), 1);
    assert.match((await firefox.textContent()) ?? '', /This browser/);
    assert.doesNotMatch((await safari.textContent()) ?? '', /This browser/);
    assert.match(
      (await safari.locator('.muted').textContent()) ?? '',
      /^Network 127\.0\.0\.0\/24 · Signed in \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC · Last active \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/,
    );
    // This browser is not signed out from its own list (the page's "Sign out" does that).
    assert.equal(await firefox.getByRole('button').count(), 0);
    // The form names a sign-in by its public id, never by anything the cookie's token opens.
    const safariId = await safari.locator('button[name=end_browser]').getAttribute('value');
    assert.match(safariId ?? '', /^[0-9a-f-]{36}$/);
    // And the other browser sees itself as "this browser".
    await second.page.goto(`${server.url}/account`);
    assert.match((await rowOf(second.page, 'Safari 17 on iPhone').textContent()) ?? '', /This browser/);

    // The list as a phone shows it, for a look.
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await first.page.setViewportSize(PHONE);
    await first.page.locator('#browsers').scrollIntoViewIfNeeded();
    await first.page.screenshot({ path: `${SCREENSHOT_DIR}/account-browsers-phone.png` });
    await first.page.setViewportSize(DESKTOP);
    await first.page.locator('#browsers').screenshot({ path: `${SCREENSHOT_DIR}/account-browsers-desktop.png` });

    const ended = await clickAndLoad(first.page, safari.getByRole('button', { name: 'Sign out' }));
    assert.equal(ended.status(), 303);
    assert.match((await first.page.getByRole('status').textContent()) ?? '', /browser was signed out/);
    assert.equal(await browserRows(first.page).count(), 1);
    // The other browser is sent to sign in at its next page load.
    await second.page.goto(`${server.url}/account`);
    assert.equal(new URL(second.page.url()).pathname, '/account/sign-in');
    const events = await listSecurityEvents(server.app.database.db, { userId: account.userId });
    assert.ok(
      events.some((e) => e.kind === 'web_session_ended' && e.details.browser_sign_in === safariId),
      'the ending is a security event',
    );

    // Two more browsers sign in; "sign out all other browsers" ends them, not this one.
    const third = await signedInBrowser(account, SAFARI_ON_IPHONE);
    const fourth = await signedInBrowser(account, CHROME_ON_ANDROID);
    await first.page.goto(`${server.url}/account`);
    assert.equal(await browserRows(first.page).count(), 3);
    assert.equal(await rowOf(first.page, 'Chrome 126 on Android phone').count(), 1);
    const all = await clickAndLoad(first.page, first.page.getByRole('button', { name: 'Sign out all other browsers' }));
    assert.equal(all.status(), 303);
    assert.match((await first.page.getByRole('status').textContent()) ?? '', /Every other browser was signed out/);
    assert.equal(await browserRows(first.page).count(), 1);
    assert.equal(await first.page.getByRole('button', { name: 'Sign out all other browsers' }).count(), 0);
    for (const other of [third, fourth]) {
      await other.page.goto(`${server.url}/account`);
      assert.equal(new URL(other.page.url()).pathname, '/account/sign-in');
    }
    await first.page.goto(`${server.url}/account`);
    assert.equal(new URL(first.page.url()).pathname, '/account', 'this browser stays signed in');
    for (const b of [first, second, third, fourth]) assert.deepEqual(b.watcher.problems, []);
  });

  test("over HTTP: another account's sign-in id is not found and ends nothing; a bad id is 404", async () => {
    const [alice, bob] = await Promise.all([newAccount(server), newAccount(server)]);
    const aliceBrowser = new FormClient(server);
    const bobBrowser = new FormClient(server);
    for (const [client, account] of [
      [aliceBrowser, alice],
      [bobBrowser, bob],
    ] as const)
      assert.equal(
        (await client.submit('/account/sign-in', { username: account.username, password: account.password })).status,
        303,
      );
    // Bob's sign-in id, as a second browser of his lists it.
    const bobOther = new FormClient(server);
    await bobOther.submit('/account/sign-in', { username: bob.username, password: bob.password });
    const bobId = /name="end_browser" value="([0-9a-f-]{36})"/.exec((await bobOther.fetch('/account')).text)?.[1];
    assert.ok(bobId, "Bob's first browser is listed with its id");

    const alicePage = await aliceBrowser.fetch('/account');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(alicePage.text)?.[1];
    assert.ok(csrf);
    for (const id of [bobId, bobId.toUpperCase(), 'not-an-id', '']) {
      const answer = await aliceBrowser.fetch('/account/browsers', { form: { _csrf: csrf, end_browser: id } });
      assert.equal(answer.status, 404, `id ${id}`);
      assert.match(answer.text, /That browser is not signed in to your account/);
    }
    assert.equal((await bobBrowser.fetch('/account')).status, 200, "Bob's browser is still signed in");
    assert.equal((await aliceBrowser.fetch('/account')).status, 200, "Alice's too");
    const events = await listSecurityEvents(server.app.database.db, { userId: alice.userId });
    assert.ok(!events.some((e) => e.kind === 'web_session_ended'), 'nothing ended, nothing recorded');
  });
});
