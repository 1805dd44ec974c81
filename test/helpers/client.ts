import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { type ClientOptions, ContentServiceClient } from '../../client/src/index.ts';
import { FormClient, newAccount, newApp } from './oauth.ts';
import type { TestServer } from './server.ts';

/** The redirect URI a desktop app registers: loopback without a port (any port matches). */
export const LOOPBACK_REDIRECT = 'http://127.0.0.1/callback';
export const CLIENT_SCOPES = ['common', 'users:read', 'users:update'];

export type Account = Awaited<ReturnType<typeof newAccount>>;

/** Counts the requests a client sends, by a short description ("POST /v4/login refresh_token", "GET /v4/projects"). */
export function countingFetch() {
  const sent: string[] = [];
  const counted: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const grant =
      init?.body instanceof URLSearchParams
        ? init.body.get('grant_type')
        : typeof init?.body === 'string'
          ? new URLSearchParams(init.body).get('grant_type')
          : null;
    sent.push(`${method} ${url.pathname}${grant ? ` ${grant}` : ''}`);
    return fetch(input, init);
  };
  return { fetch: counted, sent, count: (prefix: string) => sent.filter((line) => line.startsWith(prefix)).length };
}

/** A new public app (loopback redirect) and account on `server`, and a client for them configured by discovery. */
export async function newClient(server: TestServer, options: Partial<ClientOptions> & { scopes?: string[] } = {}) {
  const app = await newApp(server, { scopes: options.scopes ?? CLIENT_SCOPES, redirectUris: [LOOPBACK_REDIRECT] });
  const account = await newAccount(server);
  const client = await ContentServiceClient.discover({
    issuer: server.url,
    clientId: app.clientId,
    scope: (options.scopes ?? CLIENT_SCOPES).join(' '),
    ...options,
  });
  return { app, account, client };
}

/**
 * Approves an authorization URL through the service's pages with plain HTTP (sign in, Allow)
 * and delivers the redirect to the client's loopback listener, as a browser would.
 */
export async function approveWithForms(
  server: TestServer,
  authorizationUrl: string,
  account: Account,
  decision: 'approve' | 'deny' = 'approve',
) {
  const browser = new FormClient(server);
  const start = await browser.fetch(authorizationUrl);
  assert.equal(start.status, 302, start.text);
  const loginPage = new URL(start.location!, server.url).pathname;
  let current = await browser.fetch(loginPage);
  if (current.text.includes('name="password"')) {
    const signedIn = await browser.submitOn(current.text, { username: account.username, password: account.password });
    assert.equal(signedIn.status, 303, signedIn.text);
    current = await browser.fetch(loginPage);
  }
  const decided = await browser.submitOn(current.text, { decision }, /consent$/);
  assert.ok([302, 303].includes(decided.status), decided.text);
  const back = await fetch(decided.location!);
  await back.text();
  return new URL(decided.location!);
}

/** Signs `client` in by the browser flow, approved through the pages without a browser. */
export async function signInQuickly(server: TestServer, client: ContentServiceClient, account: Account) {
  return client.signInWithBrowser({ openBrowser: (url) => void approveWithForms(server, url, account) });
}

/** In Chromium: signs in on the login page the browser is on and presses Allow or Deny. */
export async function signInOnPage(page: Page, account: Account, decision: 'Allow' | 'Deny' = 'Allow') {
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByLabel('Username or email').fill(account.username);
  await page.getByLabel('Password').fill(account.password);
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/password')),
    page.getByLabel('Password').press('Enter'),
  ]);
  await page.getByRole('heading', { name: /^Allow / }).waitFor();
  await page.getByRole('button', { name: decision }).click();
}
