/**
 * Passkeys (DESIGN "Passkeys") in a real browser: Debian's Chromium with a virtual authenticator
 * (the DevTools protocol's WebAuthn domain: CTAP2, internal, resident keys, user verification),
 * against one server whose BASE_URL is http://localhost:PORT (browsers refuse an IP address as
 * relying-party id). A credential made in one browser context is read with
 * WebAuthn.getCredentials and put into a fresh context's authenticator, as a user's synced
 * passkey would be. Screenshots go to test-artifacts/screenshots/.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import type { Browser, BrowserContext, BrowserContextOptions, CDPSession, Page } from 'playwright-core';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { checkLayoutAndCapture, launchBrowser, startBrowserServer, watchPage } from '../helpers/browser.ts';
import { newAccount, newApp, pkcePair, tokenRequest } from '../helpers/oauth.ts';
import type { TestServer } from '../helpers/server.ts';

const METRICS_TOKEN = 'passkey-metrics-token';
const SCOPE = 'common users:read';

interface Credential {
  credentialId: string;
  isResidentCredential: boolean;
  rpId: string;
  privateKey: string;
  userHandle: string;
  signCount: number;
}

interface Tab {
  context: BrowserContext;
  page: Page;
  cdp: CDPSession;
  authenticatorId: string;
  problems: string[];
}

describe('passkeys in a real browser', () => {
  let server: TestServer;
  let browser: Browser;
  let client: Server;
  let REDIRECT_URI: string;
  const tabs: Tab[] = [];

  before(async () => {
    client = createServer((_request, response) => {
      response
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end('<!DOCTYPE html><title>Client</title><p>Back at the application</p>');
    });
    await new Promise<void>((resolve) => client.listen(0, '127.0.0.1', resolve));
    const address = client.address();
    REDIRECT_URI = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/callback`;
    [server, browser] = await Promise.all([
      startBrowserServer({ localhost: true, env: { METRICS_TOKEN, TRUST_PROXY: 'true' } }),
      launchBrowser(),
    ]);
  });
  after(async () => {
    for (const tab of tabs) await tab.context.close().catch(() => {});
    await browser?.close();
    await server?.close();
    client.closeAllConnections();
    await new Promise((resolve) => client.close(resolve));
  });

  const db = () => server.app.database.db;

  /** A fresh browser context with a virtual authenticator, holding `credentials` if given. */
  async function newTab(
    credentials: Credential[] = [],
    options: BrowserContextOptions & { autofill?: boolean } = {},
  ): Promise<Tab> {
    const { autofill = true, ...contextOptions } = options;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...contextOptions });
    // Chromium's virtual authenticator answers a conditional (autofill) request at once with the
    // credential it holds; to use the button, the browser is made one without autofill support.
    if (!autofill)
      await context.addInitScript({
        content:
          "Object.defineProperty(PublicKeyCredential, 'isConditionalMediationAvailable', { value: async () => false });",
      });
    const page = await context.newPage();
    const { problems } = watchPage(page);
    const cdp = await context.newCDPSession(page);
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
    for (const credential of credentials) await cdp.send('WebAuthn.addCredential', { authenticatorId, credential });
    const tab = { context, page, cdp, authenticatorId, problems };
    tabs.push(tab);
    return tab;
  }

  async function closeTab(tab: Tab) {
    assert.deepEqual(tab.problems, [], 'page errors or CSP violations');
    await tab.context.close();
    tabs.splice(tabs.indexOf(tab), 1);
  }

  async function credentialsOf(tab: Tab): Promise<Credential[]> {
    return (await tab.cdp.send('WebAuthn.getCredentials', { authenticatorId: tab.authenticatorId }))
      .credentials as Credential[];
  }

  /** Signs in on the account page with the password (and the two-step code when asked). */
  async function passwordSignIn(page: Page, account: { username: string; password: string }, secret?: string) {
    await page.goto(`${server.url}/account/sign-in`);
    await page.getByLabel('Username or email').fill(account.username);
    await page.getByLabel('Password').fill(account.password);
    await Promise.all([
      page.waitForLoadState('load'),
      page.getByRole('button', { name: 'Sign in', exact: true }).click(),
    ]);
    if (secret) {
      await page.getByLabel('Verification code').fill(totpCode(secret, Date.now()));
      await Promise.all([
        page.waitForURL(`${server.url}/account`),
        page.getByRole('button', { name: 'Verify' }).click(),
      ]);
    }
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
  }

  /** Adds a passkey named `name` on the account page (signed in): answers its credential. */
  async function addPasskey(tab: Tab, name: string): Promise<Credential> {
    const before = await credentialsOf(tab);
    await tab.page.goto(`${server.url}/account`);
    await tab.page.getByLabel('Name of the new passkey (optional)').fill(name);
    await Promise.all([
      tab.page.waitForURL(/done=passkey-added/),
      tab.page.getByRole('button', { name: 'Add a passkey' }).click(),
    ]);
    const added = (await credentialsOf(tab)).filter((c) => !before.some((b) => b.credentialId === c.credentialId));
    assert.equal(added.length, 1);
    return added[0]!;
  }

  /**
   * A new account (two-step on unless `twoStep` is false) with a passkey: answers the account, the
   * credential and the browser tab still signed in to the account page.
   */
  async function accountWithPasskey(name = 'Laptop', twoStep = true) {
    const secret = twoStep ? newTotpSecret() : undefined;
    const account = await newAccount(server, secret ? { totpSecret: secret } : {});
    const tab = await newTab();
    await passwordSignIn(tab.page, account, secret);
    const credential = await addPasskey(tab, name);
    return { account, secret, credential, tab };
  }

  function loginUrl(clientId: string, challenge: string, state: string, scope = SCOPE) {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      scope,
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    return `${server.url}/v4/login?${query}`;
  }

  const eventsOf = (userId: string | null, kind: string) =>
    db()
      .selectFrom('security_events')
      .selectAll()
      .where('kind', '=', kind)
      .where((eb) => (userId === null ? eb('user_id', 'is', null) : eb('user_id', '=', userId)))
      .execute()
      .then((rows) => rows.map((row) => ({ ...row, details: JSON.parse(row.details) as Record<string, unknown> })));

  /** CDP names credentials in base64; the service (and WebAuthn JSON) in base64url. */
  const b64url = (base64: string) => Buffer.from(base64, 'base64').toString('base64url');

  const storedPasskeys = (userId: string) =>
    db().selectFrom('passkeys').selectAll().where('user_id', '=', userId).execute();

  async function metric(name: string, labels: string): Promise<number> {
    const reply = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    assert.equal(reply.status, 200);
    const line = reply.text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
    return line ? Number(line.split(' ').pop()) : 0;
  }

  test('adding a passkey on the account page: listed with its name, added and last-used times; stored and recorded', async () => {
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const tab = await newTab();
    await passwordSignIn(tab.page, account, secret);
    await checkLayoutAndCapture(tab.page, 'passkeys-account-none');
    const credential = await addPasskey(tab, 'My laptop');
    assert.equal(credential.isResidentCredential, true, 'a discoverable credential (resident key)');
    assert.equal(credential.rpId, 'localhost');
    assert.equal(
      await tab.page.getByRole('status').textContent(),
      'The passkey was added. You can now sign in with it, without a password or a two-step code.',
    );
    const row = tab.page.locator('#passkey-list li');
    assert.equal(await row.count(), 1);
    assert.equal(await row.locator('.app-name').textContent(), 'My laptop');
    assert.match(
      (await row.locator('.muted').textContent()) ?? '',
      /^Added \d{4}-\d\d-\d\d \d\d:\d\d UTC · Last used not yet$/,
    );
    const stored = await storedPasskeys(account.userId);
    assert.deepEqual(
      stored.map((p) => [p.credential_id, p.name]),
      [[b64url(credential.credentialId), 'My laptop']],
    );
    assert.deepEqual(
      (await eventsOf(account.userId, 'passkey_added')).map((e) => e.details.passkey),
      ['My laptop'],
    );
    await tab.page.locator('details.rename').evaluate((el) => ((el as HTMLDetailsElement).open = true));
    await checkLayoutAndCapture(tab.page, 'passkeys-account-listed');
    await closeTab(tab);
  });

  /** Clicks "Sign in with a passkey" on the sign-in page shown; answers the verify request's response. */
  async function clickPasskeyButton(page: Page) {
    const button = page.locator('#passkey-sign-in');
    await button.waitFor({ state: 'visible' });
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/passkey')),
      button.click(),
    ]);
    return response;
  }

  test('signing in to an application with the passkey, in a fresh browser holding it: no password, no two-step code, then consent, a token and an ID token saying pop and mfa', async () => {
    const { account, credential, tab: added } = await accountWithPasskey('Phone');
    await closeTab(added);
    const app = await newApp(server, {
      redirectUris: [REDIRECT_URI],
      name: 'Passkey Test App',
      scopes: ['common', 'users:read', 'openid'],
    });
    const { verifier, challenge } = pkcePair();
    const succeededBefore = await metric('passkey_sign_ins_total', 'outcome="succeeded"');
    const tab = await newTab([credential], { autofill: false });
    const { page } = tab;
    await page.goto(loginUrl(app.clientId, challenge, 'pk-state', `${SCOPE} openid`));
    assert.equal(await page.locator('#username').getAttribute('autocomplete'), 'username webauthn');
    await page.locator('#passkey-sign-in').waitFor({ state: 'visible' });
    await checkLayoutAndCapture(page, 'passkeys-sign-in');
    const response = await clickPasskeyButton(page);
    assert.equal(response.status(), 200);
    await page.getByRole('heading', { name: 'Allow Passkey Test App to use your account?' }).waitFor();
    assert.match(
      (await page.locator('form.account').textContent()) ?? '',
      new RegExp(`Signed in as ${account.username}\\.`),
    );
    await Promise.all([
      page.waitForURL((url) => `${url.origin}${url.pathname}` === REDIRECT_URI),
      page.getByRole('button', { name: 'Allow' }).click(),
    ]);
    const back = new URL(page.url());
    assert.equal(back.searchParams.get('state'), 'pk-state');
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      code: back.searchParams.get('code')!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    assert.equal(tokens.status, 200, tokens.text);
    const me = await server.request('GET', '/v4/user', {
      headers: { authorization: `Bearer ${tokens.body.access_token}` },
    });
    assert.equal(me.body.userId, account.userId);
    // RFC 8176: a passkey is proof of possession of a key, and with its user verification two factors.
    const idToken = decodeJwt(tokens.body.id_token);
    assert.equal(idToken.sub, account.userId);
    assert.deepEqual(idToken.amr, ['pop', 'mfa']);
    const [event] = await eventsOf(account.userId, 'sign_in_succeeded').then((events) =>
      events.filter((e) => e.details.method === 'passkey'),
    );
    assert.equal(event?.client_id, app.clientId);
    assert.equal((await eventsOf(account.userId, 'two_step_failed')).length, 0);
    assert.equal(await metric('passkey_sign_ins_total', 'outcome="succeeded"'), succeededBefore + 1);
    const [stored] = await storedPasskeys(account.userId);
    assert.ok(stored!.last_used_at !== null && stored!.counter > 0, 'last use and the counter are stored');
    await closeTab(tab);
  });

  test('autofill: the username field offers the passkey (conditional mediation) and picking it signs in', async () => {
    const { account, credential, tab: added } = await accountWithPasskey('Autofill key');
    await closeTab(added);
    const tab = await newTab([credential]);
    const { page } = tab;
    // The script starts a conditional request as soon as the page loads; the virtual authenticator
    // answers it with its one credential as a user picking it from the autofill list would.
    const [verify] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/account/sign-in/passkey')),
      page.goto(`${server.url}/account/sign-in`),
    ]);
    assert.equal(verify.status(), 200);
    await page.waitForURL(`${server.url}/account`);
    assert.match(
      (await page.locator('form.account').first().textContent()) ?? '',
      new RegExp(`Signed in as ${account.username}\\.`),
    );
    const optionsRequests = (await eventsOf(account.userId, 'sign_in_succeeded')).filter(
      (e) => e.details.method === 'passkey' && e.details.page === 'account',
    );
    assert.equal(optionsRequests.length, 1);
    await closeTab(tab);
  });

  /** Tries the passkey button on the account sign-in page: answers the verify response and the error shown. */
  async function tryPasskey(credentials: Credential[]) {
    const tab = await newTab(credentials, { autofill: false });
    await tab.page.goto(`${server.url}/account/sign-in`);
    const response = await clickPasskeyButton(tab.page);
    return { tab, response };
  }

  test('removing a passkey: it leaves the list, is recorded, and can sign in no more', async () => {
    const { account, credential, tab } = await accountWithPasskey('To remove');
    // The button asks first, on a page of its own; its confirmation removes it.
    await Promise.all([
      tab.page.waitForURL(/\/account\/passkeys\/remove$/),
      tab.page.getByRole('button', { name: 'Remove the passkey To remove' }).click(),
    ]);
    await tab.page.getByRole('heading', { name: 'Remove the passkey To remove' }).waitFor();
    assert.match((await tab.page.locator('#confirm-consequence').textContent()) ?? '', /cannot be undone/);
    assert.equal((await storedPasskeys(account.userId)).length, 1, 'not removed before the confirmation');
    await Promise.all([tab.page.waitForURL(/done=passkey-removed/), tab.page.locator('#confirm-button').click()]);
    assert.equal(await tab.page.locator('#passkey-list').count(), 0);
    assert.equal((await storedPasskeys(account.userId)).length, 0);
    assert.deepEqual(
      (await eventsOf(account.userId, 'passkey_removed')).map((e) => e.details.passkey),
      ['To remove'],
    );
    await closeTab(tab);

    const refusedBefore = await metric('passkey_refusals_total', 'reason="unknown_credential"');
    const attempt = await tryPasskey([credential]);
    assert.equal(attempt.response.status(), 401);
    await attempt.tab.page.locator('#passkey-error').waitFor({ state: 'visible' });
    assert.equal(
      await attempt.tab.page.locator('#passkey-error').textContent(),
      'That passkey could not sign you in. Try again, or use your password.',
    );
    assert.equal(new URL(attempt.tab.page.url()).pathname, '/account/sign-in');
    await checkLayoutAndCapture(attempt.tab.page, 'passkeys-sign-in-refused');
    assert.equal(await metric('passkey_refusals_total', 'reason="unknown_credential"'), refusedBefore + 1);
    await closeTab(attempt.tab);
  });

  test("user A's passkey never signs in user B: it signs in A, and presented with B's user handle it is refused", async () => {
    const a = await accountWithPasskey('A key');
    const b = await accountWithPasskey('B key');
    await closeTab(a.tab);
    await closeTab(b.tab);
    const asA = await tryPasskey([a.credential]);
    assert.equal(asA.response.status(), 200);
    await asA.tab.page.waitForURL(`${server.url}/account`);
    assert.match(
      (await asA.tab.page.locator('form.account').first().textContent()) ?? '',
      new RegExp(`Signed in as ${a.account.username}\\.`),
    );
    await closeTab(asA.tab);
    // A's key pair, presented as belonging to B (the authenticator reports B's user handle).
    const forged = await tryPasskey([{ ...a.credential, userHandle: b.credential.userHandle }]);
    assert.equal(forged.response.status(), 401);
    assert.equal(new URL(forged.tab.page.url()).pathname, '/account/sign-in');
    const refusals = await eventsOf(a.account.userId, 'passkey_refused');
    assert.deepEqual(
      refusals.map((e) => e.details.reason),
      ['user_mismatch'],
    );
    assert.equal(
      (await eventsOf(b.account.userId, 'sign_in_succeeded')).filter((e) => e.details.method === 'passkey').length,
      0,
    );
    await closeTab(forged.tab);
  });

  /** Captures the browser's answer (and its cookies and CSRF header) without letting it reach the service. */
  async function captureAnswer(credentials: Credential[]) {
    const tab = await newTab(credentials, { autofill: false });
    await tab.page.goto(`${server.url}/account/sign-in`);
    let captured: { body: string; headers: Record<string, string> } | undefined;
    await tab.page.route('**/account/sign-in/passkey', async (route) => {
      const headers = await route.request().allHeaders();
      captured = {
        body: route.request().postData() ?? '',
        headers: {
          cookie: headers.cookie ?? '',
          'x-csrf-token': headers['x-csrf-token'] ?? '',
          'content-type': 'application/json',
        },
      };
      await route.abort();
    });
    await tab.page.locator('#passkey-sign-in').click();
    await tab.page.locator('#passkey-error').waitFor({ state: 'visible' });
    assert.ok(captured, 'the answer was captured');
    await closeTab(tab);
    return captured;
  }

  test('a replayed answer and a stale challenge are refused (plain HTTP with the same cookies)', async () => {
    const { account, credential, tab: added } = await accountWithPasskey('Replayed');
    await closeTab(added);
    const first = await captureAnswer([credential]);
    // Sent twice at once: the challenge is taken by one of them only.
    const both = await Promise.all(
      [1, 2].map(() =>
        server.request('POST', '/account/sign-in/passkey', { headers: first.headers, body: first.body }),
      ),
    );
    assert.deepEqual(both.map((r) => r.status).sort(), [200, 401], 'the captured answer is good once');
    assert.equal(both.find((r) => r.status === 200)!.body.redirect, '/account');
    const replayed = await server.request('POST', '/account/sign-in/passkey', {
      headers: first.headers,
      body: first.body,
    });
    assert.equal(replayed.status, 401);
    assert.equal(replayed.body.code, 'passkeyRefused');
    assert.match(replayed.body.message, /expired or was already used/);

    // A counter one past the stored one, so only the challenge can refuse the second answer.
    const second = await captureAnswer([
      { ...credential, signCount: (await storedPasskeys(account.userId))[0]!.counter },
    ]);
    await db()
      .updateTable('passkey_challenges')
      .set({ expires_at: Date.now() - 1 })
      .execute();
    const stale = await server.request('POST', '/account/sign-in/passkey', {
      headers: second.headers,
      body: second.body,
    });
    assert.equal(stale.status, 401);
    assert.match(stale.body.message, /expired or was already used/);
    assert.deepEqual(
      (await eventsOf(account.userId, 'passkey_refused')).map((e) => e.details.reason),
      ['challenge', 'challenge', 'challenge'],
    );
    // Without the browser's binding cookie, a live challenge is refused too.
    const third = await captureAnswer([
      { ...credential, signCount: (await storedPasskeys(account.userId))[0]!.counter },
    ]);
    const cookieless = await server.request('POST', '/account/sign-in/passkey', {
      headers: {
        ...third.headers,
        cookie: third.headers.cookie!.replace(
          /passkey_binding=[^;]+/,
          'passkey_binding=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
        ),
      },
      body: third.body,
    });
    assert.equal(cookieless.status, 401);
  });

  test('a counter that goes backwards is refused and recorded', async () => {
    const { account, credential, tab: added } = await accountWithPasskey('Cloned');
    await closeTab(added);
    const used = await tryPasskey([credential]);
    assert.equal(used.response.status(), 200);
    const [advanced] = await credentialsOf(used.tab);
    await closeTab(used.tab);
    const stored = (await storedPasskeys(account.userId))[0]!;
    assert.equal(stored.counter, advanced!.signCount);
    assert.ok(stored.counter > 1);
    // A copy of the key whose counter is behind (a cloned authenticator).
    const clone = await tryPasskey([{ ...credential, signCount: 0 }]);
    assert.equal(clone.response.status(), 401);
    assert.deepEqual(
      (await eventsOf(account.userId, 'passkey_refused')).map((e) => e.details.reason),
      ['counter_went_back'],
    );
    assert.equal((await storedPasskeys(account.userId))[0]!.counter, stored.counter);
    await closeTab(clone.tab);
  });

  test('without JavaScript the sign-in page is as before: no passkey button, and the password and two-step code work', async () => {
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const app = await newApp(server, { redirectUris: [REDIRECT_URI], name: 'No Script App' });
    const { challenge } = pkcePair();
    const tab = await newTab([], { javaScriptEnabled: false });
    const { page } = tab;
    await page.goto(loginUrl(app.clientId, challenge, 'nojs'));
    assert.equal(await page.locator('#passkey-sign-in').isVisible(), false);
    await page.getByLabel('Username or email').fill(account.username);
    await page.getByLabel('Password').fill(account.password);
    await Promise.all([
      page.waitForLoadState('load'),
      page.getByRole('button', { name: 'Sign in', exact: true }).click(),
    ]);
    await page.getByLabel('Verification code').fill(totpCode(secret, Date.now()));
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Verify' }).click()]);
    await page.getByRole('heading', { name: 'Allow No Script App to use your account?' }).waitFor();
    await closeTab(tab);
  });

  test('adding a passkey needs a sign-in within the last 10 minutes; two-step off and a new password leave passkeys alone', async () => {
    const { account, secret, tab } = await accountWithPasskey('Kept');
    await tab.page.getByLabel('Current code, to turn it off').fill(totpCode(secret!, Date.now() + 30_000));
    await Promise.all([
      tab.page.waitForURL(/done=two-step-off/),
      tab.page.getByRole('button', { name: 'Turn off two-step verification' }).click(),
    ]);
    await tab.page.getByLabel('Current password').fill(account.password);
    await tab.page.getByLabel('New password').fill('another long passphrase 2');
    await Promise.all([
      tab.page.waitForURL(/done=password-changed/),
      tab.page.getByRole('button', { name: 'Change password' }).click(),
    ]);
    assert.equal(await tab.page.locator('#passkey-list li').count(), 1);
    assert.equal((await storedPasskeys(account.userId)).length, 1);
    // The browser signed in 11 minutes ago.
    await db()
      .updateTable('web_sessions')
      .set({ created_at: Date.now() - 11 * 60_000 })
      .where('user_id', '=', account.userId)
      .execute();
    await tab.page.goto(`${server.url}/account`);
    assert.equal(await tab.page.locator('#passkey-add').count(), 0);
    await tab.page.locator('#passkey-sign-in-again').waitFor();
    await tab.page.locator('details.rename').evaluate((el) => ((el as HTMLDetailsElement).open = true));
    await checkLayoutAndCapture(tab.page, 'passkeys-account-sign-in-again');
    // Asked directly, the service refuses too.
    const csrf = await tab.page.locator('input[name="_csrf"]').first().inputValue();
    const refused = await tab.page.evaluate(async (token) => {
      const response = await fetch('/account/passkeys/options', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': token },
        body: '{}',
      });
      return { status: response.status, body: await response.json() };
    }, csrf);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'signInAgain');
    await closeTab(tab);
  });

  test('removing the last way to sign in (no password, no other passkey) is refused with a reason', async () => {
    const { account, tab } = await accountWithPasskey('Only key');
    await db().updateTable('users').set({ password_hash: null }).where('user_id', '=', account.userId).execute();
    await Promise.all([
      tab.page.waitForURL(/\/account\/passkeys\/remove$/),
      tab.page.getByRole('button', { name: 'Remove the passkey Only key' }).click(),
    ]);
    const [response] = await Promise.all([
      tab.page.waitForResponse((r) => r.url().endsWith('/account/passkeys/remove')),
      tab.page.locator('#confirm-button').click(),
    ]);
    assert.equal(response.status(), 409);
    assert.match((await tab.page.locator('#passkeys .error:not([hidden])').textContent()) ?? '', /only way to sign in/);
    assert.equal((await storedPasskeys(account.userId)).length, 1);
    await closeTab(tab);
  });

  test('passkey refusals count against the password limits, per account and per IP', async () => {
    const { account, credential, tab: added } = await accountWithPasskey('Guessed', false);
    await closeTab(added);
    const page = await server.request('GET', '/account/sign-in');
    const csrfCookie = page.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const token = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const bogus = {
      id: b64url(credential.credentialId),
      rawId: b64url(credential.credentialId),
      type: 'public-key',
      response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' },
      clientExtensionResults: {},
    };
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      // From a new address each time: the account's own limit (10 per 15 minutes) refuses the 11th.
      const reply = await server.request('POST', '/account/sign-in/passkey', {
        headers: { cookie: csrfCookie, 'x-csrf-token': token, 'x-forwarded-for': `203.0.113.${i + 1}` },
        body: bogus,
      });
      statuses.push(reply.status);
    }
    assert.deepEqual(statuses, [...Array(10).fill(401), 429]);
    // The password form of that account is held by the same limit.
    const form = new URLSearchParams({ _csrf: token, username: account.username, password: account.password });
    const password = await server.request('POST', '/account/sign-in', {
      headers: {
        cookie: csrfCookie,
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': '203.0.113.99',
      },
      body: form.toString(),
    });
    assert.equal(password.status, 429);
    assert.ok((await eventsOf(account.userId, 'sign_in_locked_out')).some((e) => e.details.step === 'passkey'));
  });
});
