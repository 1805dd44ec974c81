/**
 * Applications registered by their developers (DESIGN "Applications registered by their
 * developers") through real HTTP and the forms of /account/apps: a developer registers an
 * application and signs a user into it with only what the pages showed them, using a standard
 * OAuth client (oauth4webapi) configured by discovery; the secret, a new secret, deletion; and
 * every refusal (operator-only scope, http redirect, javascript: website, name length, the
 * 25-application limit under a burst, two-step off, another user's application, CSRF).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import { listSecurityEvents } from '../../src/accounts/security-events.ts';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { MAX_APPLICATIONS_PER_USER } from '../../src/oauth/developer-applications.ts';
import { FormClient, newAccount } from '../helpers/oauth.ts';
import { startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';

const ISSUER = `https://${TEST_HOST}`;
const CALLBACK = 'http://127.0.0.1:9/callback';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

/** Every request oauth4webapi makes to BASE_URL goes to the test server instead (its documented customFetch hook). */
const toTestServer = {
  [oauth.allowInsecureRequests]: true,
  [oauth.customFetch]: (url: string, init: RequestInit) => fetch(url.replace(ISSUER, server.url), init),
} as const;

const onTestServer = (url: string) => url.replace(ISSUER, '');

/** The text of the element with this id on a page (HTML-unescaped). */
function elementText(html: string, id: string): string | undefined {
  const match = new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(html);
  return match?.[1]
    ?.replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
}

/** The error shown next to an input (its aria-describedby element), if any. */
const fieldError = (html: string, input: 'name' | 'website' | 'redirect-uri' | 'scope') =>
  elementText(html, `${input}-error`);

/** A new account with two-step on, signed in to the account pages in its own browser. */
async function developer(options: { twoStep?: boolean } = {}) {
  const secret = newTotpSecret();
  const account = await newAccount(server, options.twoStep === false ? {} : { totpSecret: secret });
  const browser = new FormClient(server);
  const signedIn = await browser.submit('/account/sign-in', { username: account.username, password: account.password });
  assert.equal(signedIn.status, 303);
  if (options.twoStep !== false) {
    const verified = await browser.submit('/account/sign-in', { code: totpCode(secret) });
    assert.equal(verified.status, 303, verified.text);
  }
  return { account, browser, secret };
}

/** The create form of /account/apps, submitted with these fields (scope may repeat). */
async function createApp(browser: FormClient, fields: AppFields) {
  const page = await browser.fetch('/account/apps');
  assert.equal(page.status, 200, page.text);
  return postForm(browser, '/account/apps', csrfOf(page.text, '/account/apps'), fields);
}

type AppFields = { name?: string; website?: string; redirect_uri?: string; scope?: string[]; confidential?: boolean };

/** POSTs a form with repeated `scope` fields; `csrf` undefined leaves the token out. */
function postForm(
  browser: FormClient,
  path: string,
  csrf: string | undefined,
  fields: AppFields & Record<string, unknown>,
) {
  const body = new URLSearchParams();
  if (csrf !== undefined) body.append('_csrf', csrf);
  for (const [key, value] of Object.entries(fields)) {
    if (Array.isArray(value)) for (const item of value) body.append(key, String(item));
    else if (key === 'confidential') {
      if (value) body.append('confidential', 'yes');
    } else if (value !== undefined) body.append(key, String(value));
  }
  return browser.fetch(path, { form: body });
}

/** The CSRF token of the form posting to `action` on a page. */
/**
 * A destructive action (new secret, delete): its DESIGN form answers the confirmation page (200),
 * whose form, sent with `confirmed=yes`, acts. Answers the second answer.
 */
async function confirmed(browser: FormClient, path: string, csrf: string, fields: Record<string, string>) {
  const asked = await postForm(browser, path, csrf, fields);
  assert.equal(asked.status, 200, asked.text);
  assert.match(asked.text, /name="confirmed" value="yes"/);
  const [[name, value]] = Object.entries(fields) as [[string, string]];
  assert.ok(asked.text.includes(`name="${name}" value="${value}"`), 'the button keeps its name and value');
  return postForm(browser, path, csrfOf(asked.text, path), { ...fields, confirmed: 'yes' });
}

function csrfOf(html: string, action: string): string {
  const forms = [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)];
  const form = forms.find(([, formAction]) => formAction === action);
  assert.ok(form, `no form posting to ${action}`);
  return /name="_csrf" value="([^"]+)"/.exec(form[2]!)![1]!;
}

/** The user's side: the browser opens the authorization URL, signs in, reads the consent page and approves; answers the callback URL and the consent page. */
async function userAuthorizes(authorizationUrl: URL, user: { username: string; password: string }) {
  const browser = new FormClient(server);
  const start = await browser.fetch(onTestServer(authorizationUrl.href));
  assert.equal(start.status, 302, start.text);
  const page = onTestServer(start.location!);
  const signIn = await browser.fetch(page);
  const signedIn = await browser.submitOn(signIn.text, { username: user.username, password: user.password });
  assert.equal(signedIn.status, 303, signedIn.text);
  const consent = await browser.fetch(page);
  assert.match(consent.text, /name="decision"/);
  const decided = await browser.submitOn(consent.text, { decision: 'approve' }, /consent$/);
  assert.equal(decided.status, 303, decided.text);
  return { callback: new URL(decided.location!), consent: consent.text };
}

/** The token endpoint's 401 invalid_client, as oauth4webapi surfaces it (a Basic challenge comes with it for HTTP Basic). */
async function assertInvalidClient(attempt: Promise<unknown>): Promise<void> {
  const error = await attempt.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (error instanceof oauth.ResponseBodyError)
    return assert.deepEqual([error.status, error.error], [401, 'invalid_client']);
  assert.ok(error instanceof oauth.WWWAuthenticateChallengeError, `not refused with invalid_client: ${String(error)}`);
  assert.deepEqual([error.status, (await error.response.clone().json()).error], [401, 'invalid_client']);
}

const bearer = (token: string) => server.request('GET', '/v4/user', { headers: { authorization: `Bearer ${token}` } });

/** A code flow's authorization URL with PKCE and state, as oauth4webapi builds it, for scope common users:read. */
async function authorizationRequest(as: oauth.AuthorizationServer, clientId: string, redirectUri: string) {
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'common users:read',
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
  }).toString();
  return { url, codeVerifier, state };
}
describe('a developer registers an application and signs a user into it with only what the pages showed', () => {
  test('confidential: discovery, code flow with PKCE through the consent page naming the developer; new secret; delete', async () => {
    const { account: dev, browser } = await developer();
    const created = await createApp(browser, {
      name: 'Loot Planner',
      website: 'https://loot-planner.example/about',
      redirect_uri: `https://loot-planner.example/callback\n${CALLBACK}`,
      scope: ['common', 'users:read'],
      confidential: true,
    });
    assert.equal(created.status, 200, created.text);
    // What the page showed: the client id, the secret once, the discovery URL, PKCE S256 required.
    const clientId = elementText(created.text, 'client-id')!;
    const clientSecret = elementText(created.text, 'client-secret')!;
    const discoveryUrl = elementText(created.text, 'discovery-url')!;
    assert.match(clientId, /^[0-9a-f-]{36}$/);
    assert.ok(clientSecret.length >= 32);
    assert.equal(discoveryUrl, `${ISSUER}/.well-known/oauth-authorization-server`);
    assert.match(created.text, /PKCE is required/);
    assert.match(created.text, /S256/);
    // The secret is shown once: the list does not show it.
    const list = await browser.fetch('/account/apps');
    assert.ok(list.text.includes(clientId));
    assert.ok(!list.text.includes(clientSecret));

    // A standard client configured from the discovery document the page named.
    const issuer = new URL(discoveryUrl.replace('/.well-known/oauth-authorization-server', ''));
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { ...toTestServer, algorithm: 'oauth2' }),
    );
    assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
    const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'client_secret_basic' };
    const { url, codeVerifier, state } = await authorizationRequest(as, clientId, 'http://127.0.0.1:49152/callback');

    const user = await newAccount(server);
    const { callback, consent } = await userAuthorizes(url, user);
    assert.match(consent, /Loot Planner/);
    assert.match(consent, new RegExp(`made by <strong>${dev.username}</strong>`));
    assert.match(
      consent,
      /<a class="app-website" href="https:\/\/loot-planner.example\/about" rel="noopener noreferrer nofollow"/,
    );

    const params = oauth.validateAuthResponse(as, client, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(clientSecret),
        params,
        'http://127.0.0.1:49152/callback',
        codeVerifier,
        toTestServer,
      ),
    );
    assert.equal(tokens.scope, 'common users:read');
    const me = await bearer(tokens.access_token);
    assert.equal(me.status, 200);
    assert.equal(me.body.userId, user.userId);

    // A new secret: shown once; the old one stops working at once (invalid_client), the new one works.
    const renewed = await confirmed(browser, '/account/apps/secret', csrfOf(list.text, '/account/apps/secret'), {
      new_secret: clientId,
    });
    assert.equal(renewed.status, 200, renewed.text);
    const newSecret = elementText(renewed.text, 'client-secret')!;
    assert.equal(elementText(renewed.text, 'client-id'), clientId);
    assert.notEqual(newSecret, clientSecret);
    await assertInvalidClient(
      oauth
        .refreshTokenGrantRequest(
          as,
          client,
          oauth.ClientSecretBasic(clientSecret),
          tokens.refresh_token!,
          toTestServer,
        )
        .then((response) => oauth.processRefreshTokenResponse(as, client, response)),
    );
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(newSecret),
        tokens.refresh_token!,
        toTestServer,
      ),
    );
    assert.equal((await bearer(refreshed.access_token)).status, 200);

    // Delete: every session of the application ends; the client is unknown afterwards.
    const deleted = await confirmed(
      browser,
      '/account/apps/delete',
      csrfOf((await browser.fetch('/account/apps')).text, '/account/apps/delete'),
      { delete_app: clientId },
    );
    assert.equal(deleted.status, 303);
    assert.equal(deleted.location, '/account/apps?done=deleted');
    assert.equal((await bearer(refreshed.access_token)).status, 401);
    const after = await browser.fetch(deleted.location!);
    assert.ok(!after.text.includes(clientId));
    assert.match(after.text, /was deleted/);
    await assertInvalidClient(
      oauth
        .refreshTokenGrantRequest(
          as,
          client,
          oauth.ClientSecretBasic(newSecret),
          refreshed.refresh_token!,
          toTestServer,
        )
        .then((response) => oauth.processRefreshTokenResponse(as, client, response)),
    );

    const events = (await listSecurityEvents(server.app.database.db, { userId: dev.userId }))
      .filter((event) => event.clientId === clientId)
      .map((event) => event.kind);
    assert.deepEqual(events.sort(), ['application_created', 'application_deleted', 'application_secret_renewed']);
  });

  test('public, with a loopback redirect URI: the code flow with PKCE and no secret; an operator application shows no "made by"', async () => {
    const { browser } = await developer();
    const created = await createApp(browser, {
      name: 'Desk Tool',
      redirect_uri: 'http://[::1]/cb',
      scope: ['common', 'users:read'],
    });
    assert.equal(created.status, 200, created.text);
    const clientId = elementText(created.text, 'client-id')!;
    assert.equal(elementText(created.text, 'client-secret'), undefined, 'a public application has no secret');
    const issuer = new URL(ISSUER);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { ...toTestServer, algorithm: 'oauth2' }),
    );
    const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'none' };
    const { url, codeVerifier, state } = await authorizationRequest(as, clientId, 'http://[::1]:50000/cb');
    const user = await newAccount(server);
    const { callback, consent } = await userAuthorizes(url, user);
    assert.match(consent, /made by/);
    assert.doesNotMatch(consent, /class="app-website"/, 'no website given, no link');
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.None(),
        oauth.validateAuthResponse(as, client, callback, state),
        'http://[::1]:50000/cb',
        codeVerifier,
        toTestServer,
      ),
    );
    assert.equal((await bearer(tokens.access_token)).status, 200);

    // The operator's application: its consent page has no "made by" line.
    const { createApplication } = await import('../../src/oauth/clients.ts');
    const operatorApp = await createApplication(server.app.database.db, {
      name: 'Operator Tool',
      redirectUris: [CALLBACK],
      scopes: ['common'],
      confidential: false,
    });
    const url2 = new URL(as.authorization_endpoint!);
    url2.search = new URLSearchParams({
      client_id: operatorApp.clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      scope: 'common',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    }).toString();
    const operatorConsent = await userAuthorizes(url2, await newAccount(server));
    assert.match(operatorConsent.consent, /Operator Tool/);
    assert.doesNotMatch(operatorConsent.consent, /made by/);
  });

  test('device flow only: no redirect URI; the authorization endpoint refuses it, the device flow serves it', async () => {
    const { browser } = await developer();
    const created = await createApp(browser, {
      name: 'Console Thing',
      redirect_uri: '',
      scope: ['common', 'users:read'],
    });
    assert.equal(created.status, 200, created.text);
    const clientId = elementText(created.text, 'client-id')!;
    const authorize = await server.request(
      'GET',
      `/v4/login?${new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: 'code', state: 's', scope: 'common' })}`,
    );
    assert.equal(authorize.status, 400);
    assert.match(authorize.text, /device flow/);
    const device = await server.request('POST', '/v4/device', {
      body: new URLSearchParams({
        client_id: clientId,
        scope: 'common users:read',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.ok(device.status < 300, device.text);
    assert.match(device.body.user_code, /^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
  });
});

test('delete ends pending authorizations too: a login page in progress and a device request', async () => {
  const { browser } = await developer();
  const created = await createApp(browser, { name: 'Short Lived', redirect_uri: CALLBACK, scope: ['common'] });
  const clientId = elementText(created.text, 'client-id')!;
  const started = await server.request(
    'GET',
    `/v4/login?${new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: 'code', state: 's', scope: 'common', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', no_redirect: 'true' })}`,
  );
  assert.equal(started.status, 200, started.text);
  const loginPage = new URL(started.body.login_url).pathname;
  const user = new FormClient(server);
  assert.equal((await user.fetch(loginPage)).status, 200);
  const device = await server.request('POST', '/v4/device', {
    body: new URLSearchParams({
      client_id: clientId,
      scope: 'common',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.ok(device.status < 300, device.text);

  const list = await browser.fetch('/account/apps');
  assert.equal(
    (
      await confirmed(browser, '/account/apps/delete', csrfOf(list.text, '/account/apps/delete'), {
        delete_app: clientId,
      })
    ).status,
    303,
  );
  assert.equal((await user.fetch(loginPage)).status, 404, 'the sign-in in progress has ended');
  const rows = await server.app.database.db
    .selectFrom('device_authorizations')
    .select('device_code')
    .where('client_id', '=', clientId)
    .execute();
  assert.deepEqual(rows, []);
});

describe('the pages of /account/apps', () => {
  test('a signed-out visitor is sent to sign in, and returned to /account/apps afterwards', async () => {
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const browser = new FormClient(server);
    const first = await browser.fetch('/account/apps');
    assert.equal(first.status, 303);
    assert.equal(first.location, '/account/sign-in');
    assert.equal(
      (await browser.submit('/account/sign-in', { username: account.username, password: account.password })).status,
      303,
    );
    assert.equal((await browser.submit('/account/sign-in', { code: totpCode(secret) })).status, 303);
    const landed = await browser.fetch('/account');
    assert.equal(landed.status, 303);
    assert.equal(landed.location, '/account/apps');
    assert.equal((await browser.fetch('/account/apps')).status, 200);
    // Only once: the account page is the account page again afterwards.
    assert.equal((await browser.fetch('/account')).status, 200);
    // A forged return cookie names no target: it sends nowhere.
    const forged = await browser.fetch('/account', {
      headers: { cookie: `${'sid'}=x; after_sign_in=https://evil.example` },
    });
    assert.notEqual(forged.location, 'https://evil.example');
  });

  test('two-step off: a note to turn it on first, no form, and posting anyway creates nothing', async () => {
    const { account, browser } = await developer({ twoStep: false });
    const page = await browser.fetch('/account/apps');
    assert.equal(page.status, 200);
    assert.match(page.text, /id="two-step-required"/);
    assert.match(page.text, /href="\/account"/);
    assert.doesNotMatch(page.text, /name="redirect_uri"/);
    const csrf = csrfOf((await browser.fetch('/account')).text, '/account/password');
    const posted = await postForm(browser, '/account/apps', csrf, {
      name: 'Sneaky App',
      redirect_uri: CALLBACK,
      scope: ['common'],
    });
    assert.equal(posted.status, 403);
    assert.doesNotMatch(posted.text, /id="client-id"/);
    const { listOwnedApplications } = await import('../../src/oauth/developer-applications.ts');
    assert.deepEqual(await listOwnedApplications(server.app.database.db, account.userId), []);
  });

  test('refusals: each error next to its input, with what was typed kept; nothing created', async () => {
    const { account, browser } = await developer();
    const cases: { fields: AppFields; input: 'name' | 'website' | 'redirect-uri' | 'scope'; message: RegExp }[] = [
      { fields: { name: 'ab', redirect_uri: CALLBACK }, input: 'name', message: /3 to 64 characters/ },
      { fields: { name: 'x'.repeat(65), redirect_uri: CALLBACK }, input: 'name', message: /3 to 64 characters/ },
      { fields: { name: 'Line\r\nBreak', redirect_uri: CALLBACK }, input: 'name', message: /control characters/ },
      { fields: { name: 'Evil \u202egnp.exe', redirect_uri: CALLBACK }, input: 'name', message: /control characters/ },
      { fields: { name: 'Good Name', website: 'javascript:alert(1)' }, input: 'website', message: /https:\/\// },
      { fields: { name: 'Good Name', website: 'http://example.com' }, input: 'website', message: /https:\/\// },
      {
        fields: { name: 'Good Name', redirect_uri: 'http://example.com/callback' },
        input: 'redirect-uri',
        message: /must use https/,
      },
      {
        fields: { name: 'Good Name', redirect_uri: 'http://localhost:8000/callback' },
        input: 'redirect-uri',
        message: /must use https/,
      },
      {
        fields: { name: 'Good Name', redirect_uri: 'javascript:alert(1)' },
        input: 'redirect-uri',
        message: /forbidden scheme/,
      },
      {
        fields: { name: 'Good Name', redirect_uri: 'https://example.com/cb#frag' },
        input: 'redirect-uri',
        message: /fragment/,
      },
      {
        fields: { name: 'Good Name', redirect_uri: 'com.example.app:/callback' },
        input: 'redirect-uri',
        message: /must use https/,
      },
      {
        fields: { name: 'Good Name', redirect_uri: 'https://exa\tmple.com/cb' },
        input: 'redirect-uri',
        message: /control characters/,
      },
      {
        fields: { name: 'Good Name', redirect_uri: CALLBACK, scope: ['common', 'users:update'] },
        input: 'scope',
        message: /operator only/,
      },
      {
        fields: { name: 'Good Name', redirect_uri: CALLBACK, scope: ['users.private_key:read'] },
        input: 'scope',
        message: /operator only/,
      },
      {
        fields: { name: 'Good Name', redirect_uri: CALLBACK, scope: ['__proto__'] },
        input: 'scope',
        message: /no scope/,
      },
    ];
    for (const { fields, input, message } of cases) {
      const refused = await createApp(browser, fields);
      assert.equal(refused.status, 400, `${JSON.stringify(fields)}: ${refused.status}`);
      assert.match(fieldError(refused.text, input) ?? '', message, JSON.stringify(fields));
      assert.doesNotMatch(refused.text, /id="client-id"/);
    }
    // NUL never reaches the service (the input guard refuses it first, PostgreSQL cannot store it).
    for (const fields of [
      { name: 'Bad\0Name' },
      { name: 'Good Name', redirect_uri: 'https://exa\0mple.com/cb' },
      { name: 'Good Name', website: 'https://a\0b.example' },
    ]) {
      const refused = await createApp(browser, fields);
      assert.equal(refused.status, 400);
      assert.match(refused.text, /NUL character/);
    }
    // A field sent twice arrives as a list: not a name.
    const page = await browser.fetch('/account/apps');
    const twice = await postForm(browser, '/account/apps', csrfOf(page.text, '/account/apps'), {
      name: ['Good Name', 'Other Name'],
    } as never);
    assert.equal(twice.status, 400);
    assert.match(fieldError(twice.text, 'name') ?? '', /3 to 64/);
    // What was typed stays in the form.
    const kept = await createApp(browser, {
      name: 'Kept Name',
      website: 'ftp://x',
      redirect_uri: 'https://ok.example/cb',
    });
    assert.match(kept.text, /value="Kept Name"/);
    assert.match(kept.text, /https:\/\/ok.example\/cb<\/textarea>/);
    const { listOwnedApplications } = await import('../../src/oauth/developer-applications.ts');
    assert.deepEqual(await listOwnedApplications(server.app.database.db, account.userId), []);
    // Names of exactly 3 and 64 characters (counted as characters, not bytes) are fine.
    assert.equal((await createApp(browser, { name: 'abc' })).status, 200);
    assert.equal((await createApp(browser, { name: '€'.repeat(64) })).status, 200);
  });

  test('CSRF: every form without its token is refused and changes nothing', async () => {
    const { account, browser } = await developer();
    const created = await createApp(browser, { name: 'Guarded', redirect_uri: CALLBACK, confidential: true });
    const clientId = elementText(created.text, 'client-id')!;
    const secretBefore = (
      await server.app.database.db
        .selectFrom('applications')
        .select('secret_hash')
        .where('client_id', '=', clientId)
        .executeTakeFirstOrThrow()
    ).secret_hash;
    for (const [path, fields] of [
      ['/account/apps', { name: 'No Token' }],
      ['/account/apps/secret', { new_secret: clientId }],
      ['/account/apps/delete', { delete_app: clientId }],
      [`/account/apps/${clientId}`, { name: 'Renamed' }],
    ] as const) {
      const refused = await postForm(browser, path, undefined, fields);
      assert.equal(refused.status, 403, path);
      const forged = await postForm(browser, path, 'not-a-token', fields);
      assert.equal(forged.status, 403, path);
    }
    const { listOwnedApplications } = await import('../../src/oauth/developer-applications.ts');
    const apps = await listOwnedApplications(server.app.database.db, account.userId);
    assert.deepEqual(
      apps.map((app) => [app.name, app.secretHash]),
      [['Guarded', secretBefore]],
    );
  });

  test("another user's application: edit, new secret and delete answer as for an unknown one, and leak nothing", async () => {
    const owner = await developer();
    const created = await createApp(owner.browser, {
      name: 'Owner Secret Project',
      redirect_uri: CALLBACK,
      confidential: true,
    });
    const clientId = elementText(created.text, 'client-id')!;
    const other = await developer();
    const list = (await other.browser.fetch('/account/apps')).text;
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const id of [clientId, unknown, clientId.toUpperCase(), 'not-a-uuid']) {
      const edit = await other.browser.fetch(`/account/apps/${id}`);
      assert.equal(edit.status, 404, id);
      assert.doesNotMatch(edit.text, /Owner Secret Project/);
      const update = await postForm(other.browser, `/account/apps/${id}`, csrfOf(list, '/account/apps'), {
        name: 'Taken Over',
        redirect_uri: CALLBACK,
      });
      assert.equal(update.status, 404);
      const renew = await postForm(other.browser, '/account/apps/secret', csrfOf(list, '/account/apps'), {
        new_secret: id,
      });
      assert.equal(renew.status, 404);
      assert.doesNotMatch(renew.text, /id="client-secret"/);
      const del = await postForm(other.browser, '/account/apps/delete', csrfOf(list, '/account/apps'), {
        delete_app: id,
      });
      assert.equal(del.status, 404);
    }
    const edit = await owner.browser.fetch(`/account/apps/${clientId}`);
    assert.equal(edit.status, 200);
    assert.match(edit.text, /value="Owner Secret Project"/);
  });

  test('edit: renames, narrows scopes (sessions holding a removed scope end), turns public (every session ends, the secret goes)', async () => {
    const { account: dev, browser } = await developer();
    const created = await createApp(browser, {
      name: 'Map Maker',
      redirect_uri: CALLBACK,
      scope: ['common', 'users:read', 'monitor:read'],
      confidential: true,
    });
    const clientId = elementText(created.text, 'client-id')!;
    const clientSecret = elementText(created.text, 'client-secret')!;
    const { tokensThroughPages } = await import('../helpers/oauth.ts');
    const wide = await tokensThroughPages(
      server,
      { clientId, clientSecret },
      await newAccount(server),
      'common users:read monitor:read',
    );
    const narrow = await tokensThroughPages(
      server,
      { clientId, clientSecret },
      await newAccount(server),
      'common users:read',
    );

    const editPage = await browser.fetch(`/account/apps/${clientId}`);
    assert.match(editPage.text, /value="Map Maker"/);
    assert.match(editPage.text, /value="monitor:read" checked/);
    const csrf = csrfOf(editPage.text, `/account/apps/${clientId}`);
    const invalid = await postForm(browser, `/account/apps/${clientId}`, csrf, {
      name: 'M',
      redirect_uri: CALLBACK,
      scope: ['common'],
      confidential: true,
    });
    assert.equal(invalid.status, 400);
    assert.match(fieldError(invalid.text, 'name') ?? '', /3 to 64/);
    const saved = await postForm(browser, `/account/apps/${clientId}`, csrf, {
      name: 'Map Maker 2',
      website: 'https://maps.example',
      redirect_uri: CALLBACK,
      scope: ['common', 'users:read'],
      confidential: true,
    });
    assert.equal(saved.status, 303, saved.text);
    assert.equal(saved.location, '/account/apps?done=updated');
    const list = await browser.fetch(saved.location!);
    assert.match(list.text, /Map Maker 2/);
    assert.match(list.text, /was saved/);
    assert.equal((await bearer(wide.access_token)).status, 401, 'the session holding monitor:read ended');
    assert.equal((await bearer(narrow.access_token)).status, 200, 'the other one did not');

    // Public now: every session ends, the old secret is refused, no secret needed.
    const toPublic = await postForm(browser, `/account/apps/${clientId}`, csrf, {
      name: 'Map Maker 2',
      redirect_uri: CALLBACK,
      scope: ['common', 'users:read'],
    });
    assert.equal(toPublic.status, 303);
    assert.equal((await bearer(narrow.access_token)).status, 401);
    const listAfter = await browser.fetch('/account/apps');
    assert.match(listAfter.text, /Public \(no secret\)/);
    assert.doesNotMatch(listAfter.text, /name="new_secret"/);
    // And confidential again: a new secret, shown once.
    const toConfidential = await postForm(browser, `/account/apps/${clientId}`, csrf, {
      name: 'Map Maker 2',
      redirect_uri: CALLBACK,
      scope: ['common', 'users:read'],
      confidential: true,
    });
    assert.equal(toConfidential.status, 200);
    const again = elementText(toConfidential.text, 'client-secret')!;
    assert.ok(again && again !== clientSecret);
    const kinds = (await listSecurityEvents(server.app.database.db, { userId: dev.userId }))
      .filter((event) => event.clientId === clientId)
      .map((event) => event.kind);
    assert.equal(kinds.filter((kind) => kind === 'application_updated').length, 3);
  });

  test('OpenID Connect fields: post-logout redirect URIs, the back-channel URI and the ID token algorithm are stored, shown on edit, and bad ones refused next to their inputs', async () => {
    const { browser } = await developer();
    const oidcFields = {
      post_logout_redirect_uri: 'https://maps.example/bye\nhttp://127.0.0.1:9/bye',
      backchannel_logout_uri: 'https://maps.example/backchannel',
      id_token_signed_response_alg: 'ES256',
    };
    const created = await createApp(browser, {
      name: 'Logout Maker',
      redirect_uri: CALLBACK,
      scope: ['common', 'openid'],
      ...oidcFields,
    });
    assert.equal(created.status, 200, created.text);
    const clientId = elementText(created.text, 'client-id')!;
    const stored = () =>
      server.app.database.db
        .selectFrom('applications')
        .select(['post_logout_redirect_uris', 'backchannel_logout_uri', 'id_token_signed_response_alg'])
        .where('client_id', '=', clientId)
        .executeTakeFirstOrThrow();
    const row = await stored();
    assert.deepEqual(JSON.parse(row.post_logout_redirect_uris!), [
      'https://maps.example/bye',
      'http://127.0.0.1:9/bye',
    ]);
    assert.equal(row.backchannel_logout_uri, 'https://maps.example/backchannel');
    assert.equal(row.id_token_signed_response_alg, 'ES256');

    const editPage = await browser.fetch(`/account/apps/${clientId}`);
    assert.match(editPage.text, /https:\/\/maps\.example\/bye/);
    assert.match(editPage.text, /value="https:\/\/maps\.example\/backchannel"/);
    assert.match(editPage.text, /value="ES256" selected/);
    const csrf = csrfOf(editPage.text, `/account/apps/${clientId}`);
    const base = { name: 'Logout Maker', redirect_uri: CALLBACK, scope: ['common', 'openid'], ...oidcFields };
    for (const [input, bad, message] of [
      ['post-logout-redirect-uri', { post_logout_redirect_uri: 'https://maps.example/#x' }, /fragment/],
      ['post-logout-redirect-uri', { post_logout_redirect_uri: 'http://maps.example/bye' }, /https/],
      ['backchannel-logout-uri', { backchannel_logout_uri: 'http://maps.example/bc' }, /https/],
      ['backchannel-logout-uri', { backchannel_logout_uri: `https://maps.example/${'x'.repeat(3000)}` }, /at most/],
      ['id-token-alg', { id_token_signed_response_alg: 'none' }, /RS256, ES256/],
      ['id-token-alg', { id_token_signed_response_alg: 'HS256' }, /RS256, ES256/],
    ] as const) {
      const refused = await postForm(browser, `/account/apps/${clientId}`, csrf, { ...base, ...bad });
      assert.equal(refused.status, 400, `${JSON.stringify(bad)}: ${refused.status}`);
      assert.match(elementText(refused.text, `${input}-error`) ?? '', message, JSON.stringify(bad));
      assert.deepEqual(await stored(), row, 'a refused edit changes nothing');
    }
    const saved = await postForm(browser, `/account/apps/${clientId}`, csrf, {
      ...base,
      post_logout_redirect_uri: '',
      backchannel_logout_uri: '',
      id_token_signed_response_alg: 'EdDSA',
    });
    assert.equal(saved.status, 303, saved.text);
    const cleared = await stored();
    assert.deepEqual(JSON.parse(cleared.post_logout_redirect_uris ?? '[]'), []);
    assert.equal(cleared.backchannel_logout_uri, null);
    assert.equal(cleared.id_token_signed_response_alg, 'EdDSA');
  });

  test(`at most ${MAX_APPLICATIONS_PER_USER} applications, even under a burst of simultaneous creates`, async () => {
    const { account, browser } = await developer();
    const page = await browser.fetch('/account/apps');
    const csrf = csrfOf(page.text, '/account/apps');
    const burst = await Promise.all(
      Array.from({ length: MAX_APPLICATIONS_PER_USER + 8 }, (_, i) =>
        postForm(browser, '/account/apps', csrf, { name: `Burst ${i}`, redirect_uri: CALLBACK, scope: ['common'] }),
      ),
    );
    const statuses = burst.map((reply) => reply.status);
    assert.equal(statuses.filter((status) => status === 200).length, MAX_APPLICATIONS_PER_USER, statuses.join(','));
    assert.equal(statuses.filter((status) => status === 409).length, 8, statuses.join(','));
    const { listOwnedApplications } = await import('../../src/oauth/developer-applications.ts');
    assert.equal(
      (await listOwnedApplications(server.app.database.db, account.userId)).length,
      MAX_APPLICATIONS_PER_USER,
    );
    // The 26th, later: refused with a clear message; the page offers no form.
    const full = await browser.fetch('/account/apps');
    assert.doesNotMatch(full.text, /name="redirect_uri"/);
    assert.match(full.text, /25 of 25/);
    const late = await postForm(browser, '/account/apps', csrf, { name: 'One Too Many', redirect_uri: CALLBACK });
    assert.equal(late.status, 409);
    assert.match(late.text, /the most one account may register/);
  });
});
