/**
 * The authorization endpoint, GET /v4/login, and the browser flow behind it (DESIGN "v4 login",
 * RFC 6749 §4.1, RFC 7636): every validation of the request, where its error goes (400 JSON
 * while the client or the redirect URI is not established, a redirect to the client with
 * `error` and `state` after that, RFC 6749 §4.1.2.1), the scopes granted, and the consent
 * decision coming back to the client.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  authorize,
  FormClient,
  newAccount,
  newApp,
  pkcePair,
  REDIRECT_URI,
  tokensThroughPages,
} from '../helpers/oauth.ts';
import { type Reply, startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let app: { clientId: string };
let account: Awaited<ReturnType<typeof newAccount>>;

const CHALLENGE = pkcePair().challenge;

/** A valid authorization request for `app`, with `changes` applied (undefined removes a parameter). */
function query(changes: Record<string, string | undefined> = {}) {
  const params: Record<string, string | undefined> = {
    client_id: app.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: 'common users:read',
    state: 'xyz-state',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    ...changes,
  };
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, value);
  return search.toString();
}

const start = (changes: Record<string, string | undefined> = {}) =>
  server.request('GET', `/v4/login?${query(changes)}`);

/** A 400 JSON OAuth error that does not send the browser anywhere. */
function assertJsonError(reply: Reply, error: string) {
  assert.equal(reply.status, 400, reply.text);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(reply.headers.get('location'), null);
  assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'error_description']);
  assert.equal(reply.body.error, error);
  assert.ok(reply.body.error_description.length > 0);
}

/** A 302 back to `redirectUri` with `error` (and `state` when given) and `iss` (RFC 9207), never with a code. */
function assertErrorRedirect(reply: Reply, error: string, state: string | null, redirectUri = REDIRECT_URI) {
  assert.equal(reply.status, 302, reply.text);
  assert.equal(reply.headers.get('cache-control'), 'no-store');
  const location = new URL(reply.headers.get('location')!);
  assert.equal(location.origin + location.pathname, redirectUri.split('?')[0]);
  assert.equal(location.searchParams.get('error'), error);
  assert.ok((location.searchParams.get('error_description') ?? '').length > 0);
  assert.equal(location.searchParams.get('state'), state);
  assert.equal(location.searchParams.get('iss'), `https://${TEST_HOST}`);
  assert.equal(location.searchParams.get('code'), null);
  return location;
}

describe('GET /v4/login', () => {
  before(async () => {
    server = await startServer();
    app = await newApp(server, { scopes: ['common', 'users:read'] });
    account = await newAccount(server);
  });
  after(() => server.close());

  describe('a valid authorization request', () => {
    test('answers 302 to a login page of the service under BASE_URL', async () => {
      const reply = await start();
      assert.equal(reply.status, 302, reply.text);
      const location = new URL(reply.headers.get('location')!);
      assert.equal(location.origin, `https://${TEST_HOST}`);
      assert.match(location.pathname, /^\/login\/[A-Za-z0-9_-]{43}$/);
      assert.equal(reply.headers.get('cache-control'), 'no-store');
    });

    test('with no_redirect=true answers 200 {login_url}, and the page it names is the sign-in form', async () => {
      const reply = await server.request('GET', `/v4/login?${query()}&no_redirect=true`);
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual(Object.keys(reply.body), ['login_url']);
      const loginUrl = new URL(reply.body.login_url);
      assert.equal(loginUrl.origin, `https://${TEST_HOST}`);
      assert.match(loginUrl.pathname, /^\/login\/[A-Za-z0-9_-]{43}$/);
      const page = await new FormClient(server).fetch(loginUrl.pathname);
      assert.equal(page.status, 200);
      assert.match(page.text, /name="username"/);
      assert.match(page.text, /name="password"/);
    });

    test('each request gets its own login page', async () => {
      const first = (await server.request('GET', `/v4/login?${query()}&no_redirect=true`)).body.login_url;
      const second = (await server.request('GET', `/v4/login?${query()}&no_redirect=true`)).body.login_url;
      assert.notEqual(first, second);
    });

    test('the client_id is case-insensitive', async () => {
      const reply = await start({ client_id: app.clientId.toUpperCase() });
      assert.equal(reply.status, 302, reply.text);
      assert.match(new URL(reply.headers.get('location')!).pathname, /^\/login\//);
    });
  });

  describe('errors before the client and redirect URI are established: 400 JSON, no redirect', () => {
    test('a missing client_id is invalid_request', async () => {
      assertJsonError(await start({ client_id: undefined }), 'invalid_request');
    });

    test('an unknown client_id is invalid_request, and so is one that is not a UUID', async () => {
      assertJsonError(await start({ client_id: randomUUID() }), 'invalid_request');
      assertJsonError(await start({ client_id: 'not-a-uuid' }), 'invalid_request');
    });

    test('a client_id given twice is invalid_request', async () => {
      const reply = await server.request('GET', `/v4/login?${query()}&client_id=${app.clientId}`);
      assertJsonError(reply, 'invalid_request');
    });

    test('a missing redirect_uri is invalid_request', async () => {
      assertJsonError(await start({ redirect_uri: undefined }), 'invalid_request');
    });

    for (const [name, uri] of [
      ['another path', 'http://127.0.0.1:9/other'],
      ['a prefix of the registered URI', 'http://127.0.0.1:9/callbac'],
      ['the registered URI with a suffix', `${REDIRECT_URI}x`],
      ['the registered URI with a sub-path', `${REDIRECT_URI}/more`],
      ['the registered URI with a trailing slash', `${REDIRECT_URI}/`],
      ['the registered URI with a query added', `${REDIRECT_URI}?next=1`],
      ['the registered URI with a fragment', `${REDIRECT_URI}#frag`],
      ['a loopback IP literal with a port but another path', 'http://127.0.0.1:10/callbac'],
      ['another host', 'http://localhost:9/callback'],
      ['another case in the path', 'http://127.0.0.1:9/Callback'],
      ['https instead of http', 'https://127.0.0.1:9/callback'],
    ] as const) {
      test(`a redirect_uri that is not registered exactly (${name}) is invalid_request`, async () => {
        assertJsonError(await start({ redirect_uri: uri }), 'invalid_request');
      });
    }

    test("another application's redirect URI is refused", async () => {
      const other = await newApp(server, { redirectUris: ['http://127.0.0.1:9/other-app'] });
      assert.equal(
        (await start({ client_id: other.clientId, redirect_uri: 'http://127.0.0.1:9/other-app' })).status,
        302,
      );
      assertJsonError(await start({ redirect_uri: 'http://127.0.0.1:9/other-app' }), 'invalid_request');
    });

    test('with an unregistered redirect_uri, later errors are 400 JSON too: the browser is never sent there', async () => {
      const reply = await start({
        redirect_uri: 'https://attacker.example/cb',
        response_type: 'token',
        code_challenge: undefined,
        scope: 'monitor:write',
      });
      assertJsonError(reply, 'invalid_request');
    });
  });

  describe('errors once the client and redirect URI are known: 302 to redirect_uri with error and state', () => {
    test('a missing response_type is invalid_request', async () => {
      assertErrorRedirect(await start({ response_type: undefined }), 'invalid_request', 'xyz-state');
    });

    test('response_type other than code is unsupported_response_type', async () => {
      for (const responseType of ['token', 'code id_token', 'CODE']) {
        assertErrorRedirect(await start({ response_type: responseType }), 'unsupported_response_type', 'xyz-state');
      }
    });

    test('a missing code_challenge is invalid_request', async () => {
      assertErrorRedirect(await start({ code_challenge: undefined }), 'invalid_request', 'xyz-state');
    });

    for (const [name, challenge] of [
      ['42 characters (too short)', CHALLENGE.slice(0, 42)],
      ['44 characters (too long)', `${CHALLENGE}A`],
      ['padded with =', `${CHALLENGE.slice(0, 42)}=`],
      ['standard base64 + and /', `+/${CHALLENGE.slice(2)}`],
      ['a space inside', `${CHALLENGE.slice(0, 20)} ${CHALLENGE.slice(21)}`],
      ['empty', ''],
    ] as const) {
      test(`a code_challenge that is ${name} is invalid_request`, async () => {
        assertErrorRedirect(await start({ code_challenge: challenge }), 'invalid_request', 'xyz-state');
      });
    }

    test('code_challenge_method plain, s256 or missing is invalid_request: only S256', async () => {
      for (const method of ['plain', 's256', undefined]) {
        assertErrorRedirect(await start({ code_challenge_method: method }), 'invalid_request', 'xyz-state');
      }
    });

    test('a scope the application was not registered with is invalid_scope', async () => {
      assertErrorRedirect(await start({ scope: 'common users:read users:update' }), 'invalid_scope', 'xyz-state');
      assertErrorRedirect(await start({ scope: 'monitor:read' }), 'invalid_scope', 'xyz-state');
    });

    test('an unknown scope is invalid_scope', async () => {
      assertErrorRedirect(await start({ scope: 'common admin' }), 'invalid_scope', 'xyz-state');
    });

    test('a missing or blank scope is invalid_request', async () => {
      assertErrorRedirect(await start({ scope: undefined }), 'invalid_request', 'xyz-state');
      assertErrorRedirect(await start({ scope: '  ' }), 'invalid_request', 'xyz-state');
    });

    test('a missing state is invalid_request, and the redirect then carries no state', async () => {
      assertErrorRedirect(await start({ state: undefined }), 'invalid_request', null);
    });

    test('an empty device_id is invalid_request', async () => {
      assertErrorRedirect(await start({ device_id: '' }), 'invalid_request', 'xyz-state');
    });

    test('the state comes back byte for byte, however it needs encoding', async () => {
      const state = 'a b&c=d/é+%20?#';
      assertErrorRedirect(await start({ state, response_type: 'token' }), 'unsupported_response_type', state);
    });

    test('a registered redirect URI with a query keeps it, and gets error and state added', async () => {
      const withQuery = 'http://127.0.0.1:9/cb?tenant=7';
      const client = await newApp(server, { redirectUris: [withQuery] });
      const location = assertErrorRedirect(
        await start({ client_id: client.clientId, redirect_uri: withQuery, code_challenge_method: 'plain' }),
        'invalid_request',
        'xyz-state',
        withQuery,
      );
      assert.equal(location.searchParams.get('tenant'), '7');
    });

    test('with no_redirect=true an error still redirects to the client (it is not JSON)', async () => {
      const reply = await server.request('GET', `/v4/login?${query({ response_type: 'token' })}&no_redirect=true`);
      assertErrorRedirect(reply, 'unsupported_response_type', 'xyz-state');
    });
  });

  describe('scopes granted', () => {
    /** The browser flow and the code exchange; answers the scope of the token response. */
    async function grantedScope(client: { clientId: string }, scope: string) {
      return (await tokensThroughPages(server, client, account, scope)).scope as string;
    }

    test('common is always granted, even when not asked for', async () => {
      assert.equal(await grantedScope(app, 'users:read'), 'common users:read');
    });

    test('common is granted to an application registered without it', async () => {
      const client = await newApp(server, { scopes: ['users:read'] });
      assert.equal(await grantedScope(client, 'common'), 'common');
      assert.equal(await grantedScope(client, 'users:read'), 'common users:read');
    });

    test('a scope asked twice is granted once', async () => {
      assert.equal(await grantedScope(app, 'users:read common users:read'), 'common users:read');
    });

    test('the consent page names what each scope allows', async () => {
      const browser = new FormClient(server);
      const reply = await server.request('GET', `/v4/login?${query()}&no_redirect=true`);
      const page = new URL(reply.body.login_url).pathname;
      const form = await browser.fetch(page);
      assert.equal(
        (await browser.submitOn(form.text, { username: account.username, password: account.password })).status,
        303,
      );
      const consent = await browser.fetch(page);
      assert.match(consent.text, /name="decision" value="approve"/);
      assert.match(consent.text, /Use common features/);
      assert.match(consent.text, /See your account and other users/);
      assert.doesNotMatch(consent.text, /Change your username/);
    });
  });

  describe('the decision at consent', () => {
    test('approve redirects to redirect_uri with a code, the state and the issuer', async () => {
      const back = await authorize(server, {
        clientId: app.clientId,
        challenge: CHALLENGE,
        username: account.username,
        password: account.password,
      });
      assert.equal(back.origin + back.pathname, REDIRECT_URI);
      assert.match(back.searchParams.get('code')!, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(back.searchParams.get('state'), 'st4te');
      assert.equal(back.searchParams.get('iss'), `https://${TEST_HOST}`);
      assert.equal(back.searchParams.get('error'), null);
    });

    test('deny redirects with access_denied, the state and the issuer, without a code, and ends the login page', async () => {
      const browser = new FormClient(server);
      const reply = await server.request('GET', `/v4/login?${query({ state: 'deny-state' })}&no_redirect=true`);
      const page = new URL(reply.body.login_url).pathname;
      const form = await browser.fetch(page);
      assert.equal(
        (await browser.submitOn(form.text, { username: account.username, password: account.password })).status,
        303,
      );
      const consent = await browser.fetch(page);
      const denied = await browser.submitOn(consent.text, { decision: 'deny' }, /consent$/);
      assert.equal(denied.status, 302, denied.text);
      const back = new URL(denied.location!);
      assert.equal(back.origin + back.pathname, REDIRECT_URI);
      assert.equal(back.searchParams.get('error'), 'access_denied');
      assert.equal(back.searchParams.get('state'), 'deny-state');
      assert.equal(back.searchParams.get('iss'), `https://${TEST_HOST}`);
      assert.equal(back.searchParams.get('code'), null);
      // The interaction is over: its page is now the expired page.
      assert.equal((await browser.fetch(page)).status, 404);
    });
  });
});
