import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { type Browser, type BrowserContextOptions, chromium, type Locator, type Page } from 'playwright-core';
import { type StartOptions, startServer, type TestServer } from './server.ts';

export const CHROMIUM_PATH = '/usr/bin/chromium';
export const SCREENSHOT_DIR = 'test-artifacts/screenshots';
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 800 };

/** Debian's Chromium, headless (npm can not download browsers here). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

/**
 * A test server whose BASE_URL is the address a browser reaches it at (http://127.0.0.1:PORT),
 * so the login URL, verification_uri and page links work in a real browser (the default test
 * BASE_URL, https://api.test.example, does not resolve). startServer listens on a random port,
 * so a port is reserved first and its connections are handed to the server. With `localhost`,
 * BASE_URL is http://localhost:PORT instead (passkeys need a host name).
 */
export async function startBrowserServer(
  options: Omit<StartOptions, 'env'> & { env?: Record<string, string>; localhost?: boolean } = {},
): Promise<TestServer> {
  let target: Server | undefined;
  const front = createServer((socket) => {
    if (target) target.emit('connection', socket);
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => front.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = front.address();
  assert.ok(address && typeof address === 'object');
  // `localhost`: a name browsers allow passkeys on (an IP address is no relying-party id).
  const url = `http://${options.localhost ? 'localhost' : '127.0.0.1'}:${address.port}`;
  let server: TestServer;
  try {
    server = await startServer({ ...options, env: { ...options.env, BASE_URL: url } });
  } catch (error) {
    front.close();
    throw error;
  }
  target = server.app.server;
  return {
    ...server,
    url,
    request: server.request,
    async close() {
      // The front server's close waits for its connections, which the app's close ends (keep-alive
      // ones would otherwise stay open for the app's 72 s keep-alive timeout): both at once.
      const frontClosed = new Promise<void>((resolve) => front.close(() => resolve()));
      await server.close();
      await frontClosed;
    },
  };
}

/**
 * Records page errors and CSP violations reported on the console. (Other console errors are not
 * faults here: Chromium logs "Failed to load resource" for the intended 401/429 pages and for
 * the /favicon.ico it asks every site for.)
 */
export function watchPage(page: Page): { problems: string[] } {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (/content security policy|refused to (load|apply|execute|connect|frame)/i.test(message.text()))
      problems.push(`csp: ${message.text()}`);
  });
  return { problems };
}

/**
 * Screenshots the current page at phone and desktop size (test-artifacts/screenshots/<name>-<size>.png)
 * and checks the phone layout: no horizontal scrolling, the stylesheet applied, and every form
 * control visible, inside the viewport width and at least 40 px tall.
 */
export async function checkLayoutAndCapture(
  page: Page,
  name: string,
  options: { hasForm?: boolean } = {},
): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const original = page.viewportSize();
  await page.setViewportSize(PHONE);
  const phone = await page.evaluate(
    ([selector]) => ({
      scrollWidth: document.documentElement.scrollWidth,
      // The site's stylesheet (served by the service, allowed by its CSP) is applied.
      styled: getComputedStyle(document.body).display === 'flex',
      controls: [...document.querySelectorAll<HTMLElement>(selector!)].map((el) => {
        const box = el.getBoundingClientRect();
        return {
          what: `${el.tagName.toLowerCase()}#${el.id || (el as HTMLInputElement).name || el.textContent?.trim()}`,
          left: box.left,
          right: box.right,
          height: box.height,
        };
      }),
    }),
    ['input:not([type=hidden]):not([type=checkbox]), button:not(.link)'],
  );
  assert.ok(
    phone.scrollWidth <= PHONE.width,
    `${name}: page scrolls sideways on a phone (scrollWidth ${phone.scrollWidth})`,
  );
  assert.ok(phone.styled, `${name}: the stylesheet was not applied`);
  if (options.hasForm ?? true) assert.ok(phone.controls.length > 0, `${name}: no form controls`);
  for (const control of phone.controls) {
    assert.ok(control.height >= 40, `${name}: ${control.what} is ${control.height}px tall on a phone`);
    assert.ok(
      control.left >= 0 && control.right <= PHONE.width,
      `${name}: ${control.what} sticks out of the phone screen (${control.left}–${control.right})`,
    );
  }
  for (const control of await page.locator('input:not([type=hidden]):not([type=checkbox]), button:not(.link)').all()) {
    assert.ok(await control.isVisible(), `${name}: a form control is not visible on a phone`);
  }
  await page.screenshot({ path: `${SCREENSHOT_DIR}/${name}-phone.png`, fullPage: true });
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: `${SCREENSHOT_DIR}/${name}-desktop.png`, fullPage: true });
  if (original) await page.setViewportSize(original);
}

/** Runs `body` on a page of a fresh browser context; fails on page errors and CSP reports. */
export async function withPage(
  browser: Browser,
  options: BrowserContextOptions,
  body: (page: Page) => Promise<void>,
): Promise<void> {
  const context = await browser.newContext({ viewport: DESKTOP, ...options });
  try {
    const page = await context.newPage();
    const watcher = watchPage(page);
    await body(page);
    assert.deepEqual(watcher.problems, [], 'page errors or CSP violations');
  } finally {
    await context.close();
  }
}

/** Clicks a submit button; answers the POST's response once the page that follows has loaded. */
export async function clickAndLoad(page: Page, button: Locator) {
  const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), button.click()]);
  await page.waitForLoadState('domcontentloaded');
  return response;
}

/** The WCAG 2.2 AA rule sets every page is checked against (docs/decisions/0099). */
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

/** axe-core's violations on the page as it is now, one line each (with the elements), labelled `label`. */
export async function axeViolations(page: Page, label: string): Promise<string[]> {
  const { AxeBuilder } = await import('@axe-core/playwright');
  const { violations } = await new AxeBuilder({ page }).withTags(WCAG_TAGS).setLegacyMode(true).analyze();
  return violations.map(
    (violation) =>
      `${label}: ${violation.id}: ${violation.help}\n${violation.nodes
        .map((node) => `    ${node.target.join(' ')}: ${node.failureSummary?.replace(/\s+/g, ' ') ?? ''}`)
        .join('\n')}`,
  );
}
