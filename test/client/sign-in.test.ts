/**
 * The client library's sign-in flows against the real server, configured by discovery alone:
 * the device flow approved on the device page in Chromium (and denied, expired, slowed down),
 * and the desktop browser flow (RFC 8252) approved in Chromium, with state and iss checked.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { ContentServiceError, type DeviceCode } from '../../client/src/index.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { type Account, countingFetch, newClient, signInOnPage } from '../helpers/client.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let browser: Browser;

before(async () => {
  server = await startServer({ baseUrlIsOwnAddress: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens verification_uri_complete in Chromium, checks the code is filled in, signs in and decides. */
async function approveOnDevicePage(code: DeviceCode, account: Account, decision: 'Allow' | 'Deny' = 'Allow') {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    assert.ok(code.verification_uri_complete);
    await page.goto(code.verification_uri_complete);
    await page.getByRole('heading', { name: 'Connect a device' }).waitFor();
    assert.equal(
      (await page.getByLabel('Code').inputValue()).replace('-', '').toUpperCase(),
      code.user_code.replace('-', ''),
    );
    await page.getByLabel('Code').press('Enter');
    await signInOnPage(page, account, decision);
    await page
      .getByRole('heading', { name: decision === 'Allow' ? 'Device connected' : /denied|not connected|cancel/i })
      .waitFor();
  } finally {
    await context.close();
  }
}

describe('device flow', () => {
  test('hands out the code and the QR address, polls until the user approves on the device page, and keeps the tokens', async () => {
    const counter = countingFetch();
    const { client, account } = await newClient(server, { fetch: counter.fetch });
    let shown: DeviceCode | undefined;
    let approval: Promise<void> | undefined;
    const result = await client.signInWithDevice({
      onCode: (code) => {
        shown = code;
        approval = approveOnDevicePage(code, account);
      },
    });
    await approval;
    assert.ok(shown);
    assert.match(shown.user_code, /^[2-9A-Z]{4}-[2-9A-Z]{4}$/);
    assert.equal(shown.verification_uri, `${server.url}/device`);
    assert.equal(shown.verification_uri_complete, `${server.url}/device?user_code=${shown.user_code}`);
    assert.equal(shown.interval, 5);
    assert.equal(result.scope, 'common users:read users:update');
    assert.ok(result.expiresAt.getTime() > Date.now() + 50 * 60_000);
    assert.ok(counter.count('POST /v4/login urn:ietf:params:oauth:grant-type:device_code') >= 1);
    const me = await client.user.get();
    assert.equal(me.username, account.username);
    assert.equal(me.userId, account.userId);
  });

  test('a denial on the device page ends the sign-in with access_denied and stores nothing', async () => {
    const { client, account } = await newClient(server);
    let approval: Promise<void> | undefined;
    const failure = await client
      .signInWithDevice({
        onCode: (code) => {
          approval = approveOnDevicePage(code, account, 'Deny');
        },
      })
      .catch((error) => error);
    await approval;
    assert.ok(failure instanceof ContentServiceError, String(failure));
    assert.equal(failure.code, 'access_denied');
    assert.equal(failure.error, 'access_denied');
    assert.equal(failure.message, 'The sign-in was denied.');
    assert.equal(await client.isSignedIn(), false);
  });

  test('an expired code ends the sign-in with expired_token', async () => {
    const { client } = await newClient(server);
    const failure = await client
      .signInWithDevice({
        // The service's codes live 10 minutes; this one is made to expire at once.
        onCode: async (code) => {
          await server.app.database.db
            .updateTable('device_authorizations')
            .set({ expires_at: Date.now() - 1000 })
            .where('user_code', '=', code.user_code.replace('-', ''))
            .execute();
        },
      })
      .catch((error) => error);
    assert.ok(failure instanceof ContentServiceError, String(failure));
    assert.equal(failure.code, 'expired_token');
    assert.match(failure.message, /expired/);
    assert.equal(await client.isSignedIn(), false);
  });

  test('slow_down makes the client wait 5 s longer between polls', async () => {
    const polls: number[] = [];
    const answers: string[] = [];
    let code: DeviceCode | undefined;
    let approval: Promise<void> | undefined;
    const slowing: typeof fetch = async (input, init) => {
      const isPoll = typeof init?.body !== 'undefined' && String(init.body).includes('device_code');
      if (isPoll && polls.length === 0) {
        // Another poll of the same code just before the client's: the client's comes too soon.
        await (await fetch(input, init)).text();
      }
      if (isPoll) polls.push(Date.now());
      const response = await fetch(input, init);
      if (isPoll) answers.push(((await response.clone().json()) as { error?: string }).error ?? 'tokens');
      // Approve only once the client has been told to slow down.
      if (isPoll && polls.length === 1) approval = approveOnDevicePage(code!, account);
      return response;
    };
    const { client, account } = await newClient(server, { fetch: slowing });
    await client.signInWithDevice({
      onCode: (shown) => {
        code = shown;
      },
    });
    await approval;
    assert.equal(answers[0], 'slow_down');
    assert.equal(answers.at(-1), 'tokens');
    assert.ok(polls[1]! - polls[0]! >= 10_000 - 50, `the poll after slow_down came ${polls[1]! - polls[0]!} ms later`);
  });
});

describe('browser flow for desktop apps (RFC 8252)', () => {
  test('listens on an ephemeral 127.0.0.1 port, opens the browser, and signs in once the user allows in Chromium', async () => {
    const { client, account } = await newClient(server);
    const context = await browser.newContext();
    let opened: URL | undefined;
    try {
      const result = await client.signInWithBrowser({
        openBrowser: async (url) => {
          opened = new URL(url);
          const page = await context.newPage();
          await page.goto(url);
          await signInOnPage(page, account);
          await page.getByRole('heading', { name: 'Signed in' }).waitFor();
        },
      });
      assert.equal(result.scope, 'common users:read users:update');
    } finally {
      await context.close();
    }
    assert.ok(opened);
    assert.equal(opened.origin + opened.pathname, `${server.url}/v4/login`);
    const redirect = new URL(opened.searchParams.get('redirect_uri')!);
    assert.equal(redirect.hostname, '127.0.0.1');
    assert.notEqual(redirect.port, '');
    assert.equal(redirect.pathname, '/callback');
    assert.equal(opened.searchParams.get('code_challenge_method'), 'S256');
    assert.match(opened.searchParams.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(opened.searchParams.get('state'));
    assert.equal((await client.user.get()).username, account.username);
  });

  test('a denial in the browser is access_denied', async () => {
    const { client, account } = await newClient(server);
    const context = await browser.newContext();
    try {
      const failure = await client
        .signInWithBrowser({
          openBrowser: async (url) => {
            const page = await context.newPage();
            await page.goto(url);
            await signInOnPage(page, account, 'Deny');
          },
        })
        .catch((error) => error);
      assert.ok(failure instanceof ContentServiceError, String(failure));
      assert.equal(failure.code, 'access_denied');
      assert.equal(await client.isSignedIn(), false);
    } finally {
      await context.close();
    }
  });

  for (const [what, forge] of [
    ['another state', (params: URLSearchParams) => params.set('state', 'not-the-one-sent')],
    ['another issuer (iss)', (params: URLSearchParams) => params.set('iss', 'https://evil.example')],
    ['no iss', (params: URLSearchParams) => params.delete('iss')],
  ] as const) {
    test(`a redirect with ${what} is refused and no code is exchanged`, async () => {
      const counter = countingFetch();
      const { client } = await newClient(server, { fetch: counter.fetch });
      let page: { status: number; text: string } | undefined;
      const failure = await client
        .signInWithBrowser({
          openBrowser: async (url) => {
            const sent = new URL(url);
            const callback = new URL(sent.searchParams.get('redirect_uri')!);
            callback.searchParams.set('code', 'a-code-from-somewhere');
            callback.searchParams.set('state', sent.searchParams.get('state')!);
            callback.searchParams.set('iss', server.url);
            forge(callback.searchParams);
            const response = await fetch(callback);
            page = { status: response.status, text: await response.text() };
          },
        })
        .catch((error) => error);
      assert.ok(failure instanceof ContentServiceError, String(failure));
      assert.match(failure.message, what.includes('state') ? /state/ : /iss/);
      assert.equal(page?.status, 400);
      assert.match(page!.text, /could not be completed/);
      assert.equal(counter.count('POST /v4/login'), 0);
      assert.equal(await client.isSignedIn(), false);
    });
  }
});
