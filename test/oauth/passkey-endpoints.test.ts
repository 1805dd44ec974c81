/**
 * The passkey endpoints as an HTTP client meets them (DESIGN "Passkeys"): what the sign-in pages
 * offer, the options, bad answers (each a clear 4xx in the API's error shape), and a BASE_URL on
 * an IP address, where passkeys are not offered. The ceremonies themselves run in a real browser
 * in test/browser/passkeys.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FormClient, newAccount, newApp, pkcePair, startLogin } from '../helpers/oauth.ts';
import { startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';

/** A browser for JSON calls: keeps cookies, knows the last page's CSRF token. */
class JsonClient {
  private readonly cookies = new Map<string, string>();
  token = '';
  constructor(private readonly server: TestServer) {}

  async request(
    method: string,
    path: string,
    options: { body?: string; form?: Record<string, string>; csrf?: boolean } = {},
  ) {
    const headers: Record<string, string> = { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
    let body = options.body;
    if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams({ _csrf: this.token, ...options.form }).toString();
    } else if (body !== undefined) headers['content-type'] = 'application/json';
    if (options.csrf ?? true) headers['x-csrf-token'] = this.token;
    const response = await fetch(this.server.url + path, { method, headers, body, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [name, ...value] = line.split(';')[0]!.split('=');
      this.cookies.set(name!.trim(), value.join('='));
    }
    const text = await response.text();
    const token = /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
    if (token) this.token = token;
    return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
  }
}

describe('passkey endpoints (BASE_URL on https)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server?.close());

  test('both sign-in pages offer a passkey: the hidden button, the script served by the service, autofill on the username', async () => {
    const app = await newApp(server);
    const login = await startLogin(server, { client_id: app.clientId, code_challenge: pkcePair().challenge });
    const browser = new FormClient(server);
    for (const [path, verifyUrl] of [
      [login, `${login}/passkey`],
      ['/account/sign-in', '/account/sign-in/passkey'],
    ] as const) {
      const { text } = await browser.fetch(path);
      assert.match(
        text,
        /<button type="button" class="secondary" id="passkey-sign-in">Sign in with a passkey<\/button>/,
      );
      assert.match(text, new RegExp(`data-verify-url="${verifyUrl}"`));
      assert.match(text, /id="passkey-box"[^>]* hidden>/, 'hidden until the script shows it');
      assert.match(text, /<script src="\/assets\/passkeys.js" defer><\/script>/);
      assert.match(text, /autocomplete="username webauthn"/);
      assert.doesNotMatch(text, /<script>|onclick=/i, 'no inline script');
      // Still one submit button in the password form.
      assert.equal([...text.matchAll(/type="submit"/g)].length, 1);
    }
    const script = await server.request('GET', '/assets/passkeys.js');
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.match(script.text, /navigator\.credentials/);
  });

  test('sign-in options: CSRF required; a challenge bound to a cookie of its own; user verification required', async () => {
    const browser = new JsonClient(server);
    await browser.request('GET', '/account/sign-in');
    const noToken = await browser.request('POST', '/passkeys/sign-in-options', { body: '{}', csrf: false });
    assert.equal(noToken.status, 403);
    assert.equal(noToken.json().code, 'forbidden');
    const reply = await browser.request('POST', '/passkeys/sign-in-options', { body: '{}' });
    assert.equal(reply.status, 200, reply.text);
    const options = reply.json();
    assert.equal(options.rpId, TEST_HOST);
    assert.equal(options.userVerification, 'required');
    assert.match(options.challenge, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(options.allowCredentials, undefined, 'discoverable credentials: the browser offers what it holds');
    const cookie = reply.headers.getSetCookie().find((c) => c.startsWith('passkey_binding='));
    assert.ok(cookie && /HttpOnly/i.test(cookie) && /SameSite=Strict/i.test(cookie) && /Secure/i.test(cookie), cookie);
    const stored = await server.app.database.db
      .selectFrom('passkey_challenges')
      .selectAll()
      .where('challenge', '=', options.challenge)
      .executeTakeFirstOrThrow();
    assert.equal(stored.purpose, 'sign_in');
    assert.ok(stored.expires_at > Date.now() + 4 * 60_000 && stored.expires_at <= Date.now() + 5 * 60_000);
  });

  test('bad answers get a clear 4xx in the API error shape, never a 500', async () => {
    const browser = new JsonClient(server);
    await browser.request('GET', '/account/sign-in');
    await browser.request('POST', '/passkeys/sign-in-options', { body: '{}' });
    const id = 'AAAAAAAAAAAAAAAAAAAAAA';
    const bodies = [
      '{}',
      '[]',
      '"x"',
      '{"id":"abc"',
      `{"__proto__":{"x":1},"id":"${id}"}`,
      `{"constructor":{"prototype":{"x":1}},"id":"${id}"}`,
      JSON.stringify({
        id,
        rawId: id,
        type: 'public-key',
        response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' },
      }),
      JSON.stringify({
        id,
        rawId: id,
        type: 'public-key',
        response: { clientDataJSON: 'not base64!', authenticatorData: 'AAAA', signature: 'AAAA' },
      }),
      JSON.stringify({ id: 'A\u0000A', rawId: 'A\u0000A', type: 'public-key', response: {} }),
      JSON.stringify({ id, rawId: [id, id], type: 'public-key', response: { clientDataJSON: ['e30'] } }),
      JSON.stringify({ id: 'A'.repeat(70_000) }),
    ];
    for (const body of bodies) {
      const reply = await browser.request('POST', '/account/sign-in/passkey', { body });
      assert.ok(reply.status >= 400 && reply.status < 500, `${body.slice(0, 40)} → ${reply.status} ${reply.text}`);
      const error = reply.json();
      assert.equal(typeof error.code, 'string');
      assert.equal(typeof error.message, 'string');
    }
    const gone = await browser.request('POST', '/login/no-such-interaction/passkey', { body: '{}' });
    assert.equal(gone.status, 404);
    assert.equal(gone.json().code, 'notFound');
  });

  test('the account page: the passkeys section, registration options for a recent sign-in, unknown passkeys refused', async () => {
    const account = await newAccount(server);
    const browser = new JsonClient(server);
    await browser.request('GET', '/account/sign-in');
    const signedIn = await browser.request('POST', '/account/sign-in', {
      form: { username: account.username, password: account.password },
    });
    assert.equal(signedIn.status, 303);
    const page = await browser.request('GET', '/account');
    assert.match(page.text, /<h3 id="passkeys-heading">Passkeys<\/h3>/);
    assert.match(page.text, /You have no passkeys\./);
    assert.match(page.text, /id="passkey-add"/);
    const options = await browser.request('POST', '/account/passkeys/options', { body: '{}' });
    assert.equal(options.status, 200, options.text);
    const body = options.json();
    assert.equal(body.rp.id, TEST_HOST);
    assert.equal(body.user.name, account.username);
    assert.equal(body.authenticatorSelection.residentKey, 'required');
    assert.equal(body.authenticatorSelection.userVerification, 'required');
    const added = await browser.request('POST', '/account/passkeys', {
      body: JSON.stringify({ response: { id: 'x' } }),
    });
    assert.equal(added.status, 400);
    for (const [path, form] of [
      ['/account/passkeys/remove', { remove_passkey: 'AAAAAAAAAAAAAAAAAAAAAA' }],
      ['/account/passkeys/rename', { rename_passkey: 'AAAAAAAAAAAAAAAAAAAAAA', passkey_name: 'x' }],
    ] as const) {
      const reply = await browser.request('POST', path, { form });
      assert.equal(reply.status, 404, reply.text);
      assert.match(reply.text, /That passkey is not on your account \(any more\)\./);
    }
    const badName = await browser.request('POST', '/account/passkeys/rename', {
      form: { rename_passkey: 'AAAAAAAAAAAAAAAAAAAAAA', passkey_name: 'a\u0007b' },
    });
    assert.equal(badName.status, 400);
    // Signed out: the JSON endpoints answer 401 in the API shape.
    const stranger = new JsonClient(server);
    await stranger.request('GET', '/account/sign-in');
    const refused = await stranger.request('POST', '/account/passkeys/options', { body: '{}' });
    assert.equal(refused.status, 401);
  });
});

describe('passkeys with BASE_URL on an IP address', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ baseUrlIsOwnAddress: true });
  });
  after(() => server?.close());

  test('are not offered: no button on the sign-in page, a note on the account page, the endpoints answer 404', async () => {
    const browser = new JsonClient(server);
    const signIn = await browser.request('GET', '/account/sign-in');
    assert.doesNotMatch(signIn.text, /passkey/i);
    assert.match(signIn.text, /autocomplete="username"/);
    const account = await newAccount(server);
    await browser.request('POST', '/account/sign-in', {
      form: { username: account.username, password: account.password },
    });
    const page = await browser.request('GET', '/account');
    assert.match(
      page.text,
      /id="passkeys-unavailable">Passkeys are not available here: this server&#39;s address \(BASE_URL http:\/\/127\.0\.0\.1:\d+\) is an IP address/,
    );
    assert.doesNotMatch(page.text, /id="passkey-add"/);
    const options = await browser.request('POST', '/passkeys/sign-in-options', { body: '{}' });
    assert.equal(options.status, 404);
    assert.match(options.json().message, /IP address/);
  });
});
