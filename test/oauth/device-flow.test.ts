/**
 * The device flow (RFC 8628 with PKCE; DESIGN "v4 login", docs/decisions/0057):
 * POST /v4/device and its answer, the device page where the person types the user code, and
 * the polls of POST /v4/login with the device_code grant: authorization_pending, slow_down with
 * its growing interval, expired_token, access_denied, success once, invalid_grant.
 *
 * Waiting is avoided: where a poll must come "later", the stored last poll time of the request
 * is moved back through the database handle (server.app.database.db), and expiry is made by
 * moving its expires_at into the past.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { assertOAuthError, FormClient, newAccount, newApp, pkcePair, tokenRequest } from '../helpers/oauth.ts';
import { startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';

const ALPHABET = '23456789ABCDEFGHJKLMNPRSTUVWXYZ';
const USER_CODE = new RegExp(`^[${ALPHABET}]{4}-[${ALPHABET}]{4}$`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

type App = Awaited<ReturnType<typeof newApp>>;
type Account = Awaited<ReturnType<typeof newAccount>>;

interface DeviceLogin {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  interval: number;
  expires_in: number;
}

const form = (params: Record<string, string>) => ({
  body: new URLSearchParams(params).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
});

/** POST /v4/device for `app`; answers the reply and the verifier of its challenge. */
async function startDevice(
  server: TestServer,
  app: App,
  params: Record<string, string | undefined> = {},
  headers: Record<string, string> = {},
) {
  const { verifier, challenge } = pkcePair();
  const body: Record<string, string> = {};
  for (const [name, value] of Object.entries({
    client_id: app.clientId,
    scope: 'common users:read',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...params,
  })) {
    if (value !== undefined) body[name] = value;
  }
  const request = form(body);
  const reply = await server.request('POST', '/v4/device', {
    body: request.body,
    headers: { ...request.headers, ...headers },
  });
  return { reply, verifier };
}

async function deviceLogin(server: TestServer, app: App, params: Record<string, string | undefined> = {}) {
  const { reply, verifier } = await startDevice(server, app, params);
  assert.equal(reply.status, 201, reply.text);
  return { device: reply.body as DeviceLogin, verifier };
}

const poll = (server: TestServer, app: App, deviceCode: string, verifier: string, extra: Record<string, string> = {}) =>
  tokenRequest(server, {
    grant_type: DEVICE_GRANT,
    client_id: app.clientId,
    device_code: deviceCode,
    code_verifier: verifier,
    ...extra,
  });

/** Makes the last poll of a request `ms` older, instead of sleeping. */
async function movePollBack(server: TestServer, deviceCode: string, ms: number) {
  const row = await server.app.database.db
    .selectFrom('device_authorizations')
    .select('last_polled_at')
    .where('device_code', '=', deviceCode)
    .executeTakeFirstOrThrow();
  assert.notEqual(row.last_polled_at, null, 'the request was polled');
  await server.app.database.db
    .updateTable('device_authorizations')
    .set({ last_polled_at: Number(row.last_polled_at) - ms })
    .where('device_code', '=', deviceCode)
    .execute();
}

/**
 * The person on the device page: types `typed`, signs in, and decides. Answers the final page.
 * The consent page must show the device's code.
 */
async function decideOnDevicePage(
  server: TestServer,
  typed: string,
  userCode: string,
  account: Account,
  decision: 'approve' | 'deny',
) {
  const browser = new FormClient(server);
  const entered = await browser.submit('/device', { user_code: typed });
  assert.equal(entered.status, 303, entered.text);
  assert.match(entered.location!, /^\/login\/[A-Za-z0-9_-]{43}$/);
  const signIn = await browser.fetch(entered.location!);
  assert.equal(signIn.status, 200, signIn.text);
  assert.equal(
    (await browser.submitOn(signIn.text, { username: account.username, password: account.password })).status,
    303,
  );
  const consent = await browser.fetch(entered.location!);
  assert.match(consent.text, /name="decision"/, consent.text);
  assert.ok(consent.text.includes(`<strong>${userCode}</strong>`), 'the consent page shows the code to compare');
  return browser.submitOn(consent.text, { decision }, /consent$/);
}

describe('device flow', () => {
  let server: TestServer;
  let app: App;
  let account: Account;
  before(async () => {
    server = await startServer();
    app = await newApp(server, { scopes: ['common', 'users:read'] });
    account = await newAccount(server);
  });
  after(() => server.close());

  describe('POST /v4/device', () => {
    test('answers 201 with a UUID device_code, an XXXX-XXXX user code, the device page URIs, interval 5 and expires_in 600', async () => {
      const { reply } = await startDevice(server, app);
      assert.equal(reply.status, 201, reply.text);
      assert.equal(reply.headers.get('cache-control'), 'no-store');
      assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
      const device = reply.body as DeviceLogin;
      assert.deepEqual(Object.keys(device).sort(), [
        'device_code',
        'expires_in',
        'interval',
        'user_code',
        'verification_uri',
        'verification_uri_complete',
      ]);
      assert.match(device.device_code, UUID);
      assert.match(device.user_code, USER_CODE);
      assert.equal(device.verification_uri, `https://${TEST_HOST}/device`);
      assert.equal(device.verification_uri_complete, `https://${TEST_HOST}/device?user_code=${device.user_code}`);
      assert.equal(device.interval, 5);
      assert.equal(device.expires_in, 600);
    });

    test('user codes use only the alphabet without look-alikes, and each request gets its own codes', async () => {
      const devices = await Promise.all(
        Array.from({ length: 12 }, async () => (await deviceLogin(server, app)).device),
      );
      for (const device of devices) assert.match(device.user_code, USER_CODE);
      assert.equal(new Set(devices.map((d) => d.user_code)).size, devices.length);
      assert.equal(new Set(devices.map((d) => d.device_code)).size, devices.length);
      const used = new Set(devices.flatMap((d) => [...d.user_code.replace('-', '')]));
      for (const lookAlike of ['0', 'O', '1', 'I', 'Q']) assert.ok(!used.has(lookAlike), lookAlike);
    });

    test('verification_uri_complete opens the device page with the code filled in', async () => {
      const { device } = await deviceLogin(server, app);
      const page = await new FormClient(server).fetch(
        new URL(device.verification_uri_complete).pathname + new URL(device.verification_uri_complete).search,
      );
      assert.equal(page.status, 200);
      assert.ok(page.text.includes(`name="user_code" class="code" value="${device.user_code}"`), page.text);
    });

    test('code_challenge missing or malformed, or code_challenge_method other than S256, is invalid_request', async () => {
      assertOAuthError((await startDevice(server, app, { code_challenge: undefined })).reply, 'invalid_request');
      assertOAuthError((await startDevice(server, app, { code_challenge: 'short' })).reply, 'invalid_request');
      assertOAuthError((await startDevice(server, app, { code_challenge_method: 'plain' })).reply, 'invalid_request');
      assertOAuthError((await startDevice(server, app, { code_challenge_method: undefined })).reply, 'invalid_request');
    });

    test('a scope the application was not registered with is invalid_scope', async () => {
      assertOAuthError((await startDevice(server, app, { scope: 'common users:update' })).reply, 'invalid_scope');
    });

    test('an unknown client is 401 invalid_client; a missing client_id is invalid_request', async () => {
      assertOAuthError(
        (await startDevice(server, { clientId: randomUUID(), clientSecret: null })).reply,
        'invalid_client',
        401,
      );
      assertOAuthError((await startDevice(server, app, { client_id: undefined })).reply, 'invalid_request');
    });

    test('a confidential client needs its secret (401 invalid_client without it) and may use Basic', async () => {
      const confidential = await newApp(server, { confidential: true });
      assertOAuthError((await startDevice(server, confidential, { scope: 'common' })).reply, 'invalid_client', 401);
      assert.equal(
        (await startDevice(server, confidential, { scope: 'common', client_secret: confidential.clientSecret! })).reply
          .status,
        201,
      );
      const basic = `Basic ${Buffer.from(`${confidential.clientId}:${confidential.clientSecret}`).toString('base64')}`;
      const { reply } = await startDevice(
        server,
        confidential,
        { scope: 'common', client_id: undefined },
        { authorization: basic },
      );
      assert.equal(reply.status, 201, reply.text);
    });
  });

  describe('polling POST /v4/login', () => {
    test('a pending request is authorization_pending', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'authorization_pending');
    });

    test('polling sooner than the interval is slow_down, and the interval grows by 5 s each time', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'authorization_pending');
      // At once: too soon for 5 s. The interval becomes 10 s.
      const slow = await poll(server, app, device.device_code, verifier);
      assertOAuthError(slow, 'slow_down');
      assert.match(slow.body.error_description, /10 seconds/);
      // 6 s later would have been fine before, but is too soon for 10 s. The interval becomes 15 s.
      await movePollBack(server, device.device_code, 6_000);
      const slower = await poll(server, app, device.device_code, verifier);
      assertOAuthError(slower, 'slow_down');
      assert.match(slower.body.error_description, /15 seconds/);
      // 14 s is still too soon for 15 s (interval 20 s now) ...
      await movePollBack(server, device.device_code, 14_000);
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'slow_down');
      // ... and 21 s later is pending again.
      await movePollBack(server, device.device_code, 21_000);
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'authorization_pending');
    });

    test('a poll after the interval has passed is authorization_pending, not slow_down', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'authorization_pending');
      await movePollBack(server, device.device_code, 5_000);
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'authorization_pending');
    });

    test('an expired request is expired_token, and its user code is no longer accepted on the device page', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      // Ten minutes are not waited for: the request's expiry is moved into the past.
      await server.app.database.db
        .updateTable('device_authorizations')
        .set({ expires_at: Date.now() - 1 })
        .where('device_code', '=', device.device_code)
        .execute();
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'expired_token');
      const typed = await new FormClient(server).submit('/device', { user_code: device.user_code });
      assert.equal(typed.status, 400, typed.text);
      assert.match(typed.text, /That code is not valid or has expired/);
    });

    test('after the user denies on the device page, polls are access_denied', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      const denied = await decideOnDevicePage(server, device.user_code, device.user_code, account, 'deny');
      assert.equal(denied.status, 200, denied.text);
      assert.match(denied.text, /Request denied/);
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'access_denied');
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'access_denied');
    });

    test('approval with the code typed in lower case and without the hyphen: the next poll gets tokens, once', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'authorization_pending');
      const typed = device.user_code.replace('-', '').toLowerCase();
      const approved = await decideOnDevicePage(server, typed, device.user_code, account, 'approve');
      assert.equal(approved.status, 200, approved.text);
      assert.match(approved.text, /Device connected/);

      await movePollBack(server, device.device_code, 5_000);
      const reply = await poll(server, app, device.device_code, verifier);
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.headers.get('cache-control'), 'no-store');
      assert.equal(reply.body.token_type, 'Bearer');
      assert.equal(reply.body.scope, 'common users:read');
      assert.equal(reply.body.expires_in, 3600);
      const me = await server.request('GET', '/v4/user', {
        headers: { authorization: `Bearer ${reply.body.access_token}` },
      });
      assert.equal(me.status, 200, me.text);
      assert.equal(me.body.userId, account.userId);

      // Single use: later polls are invalid_grant, and the code cannot be typed again.
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'invalid_grant');
      const again = await new FormClient(server).submit('/device', { user_code: device.user_code });
      assert.equal(again.status, 400, again.text);
    });

    test('grant_type device_code is the same as the URN, a JSON body works, and scope omitted at the start is common', async () => {
      const { device, verifier } = await deviceLogin(server, app, { scope: undefined });
      assert.equal(
        (await decideOnDevicePage(server, device.user_code, device.user_code, account, 'approve')).status,
        200,
      );
      const reply = await server.request('POST', '/v4/login', {
        body: {
          grant_type: 'device_code',
          client_id: app.clientId,
          device_code: device.device_code,
          code_verifier: verifier,
        },
      });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.scope, 'common');
    });

    test('a wrong code_verifier is invalid_grant and changes nothing: the right one is still pending, not slow_down', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      assertOAuthError(await poll(server, app, device.device_code, pkcePair().verifier), 'invalid_grant');
      assertOAuthError(await poll(server, app, device.device_code, 'x'.repeat(42)), 'invalid_grant');
      assertOAuthError(await poll(server, app, device.device_code, verifier), 'authorization_pending');
    });

    test('a wrong code_verifier after approval is invalid_grant and issues nothing', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      assert.equal(
        (await decideOnDevicePage(server, device.user_code, device.user_code, account, 'approve')).status,
        200,
      );
      assertOAuthError(await poll(server, app, device.device_code, pkcePair().verifier), 'invalid_grant');
      assert.equal((await poll(server, app, device.device_code, verifier)).status, 200);
    });

    test('an unknown device_code, or one of another client, is invalid_grant', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      assertOAuthError(await poll(server, app, randomUUID(), verifier), 'invalid_grant');
      assertOAuthError(await poll(server, app, 'not-a-uuid', verifier), 'invalid_grant');
      const other = await newApp(server);
      assertOAuthError(await poll(server, other, device.device_code, verifier), 'invalid_grant');
    });

    test('a missing device_code or code_verifier is invalid_request', async () => {
      const { device, verifier } = await deviceLogin(server, app);
      assertOAuthError(
        await tokenRequest(server, { grant_type: DEVICE_GRANT, client_id: app.clientId, code_verifier: verifier }),
        'invalid_request',
      );
      assertOAuthError(
        await tokenRequest(server, {
          grant_type: DEVICE_GRANT,
          client_id: app.clientId,
          device_code: device.device_code,
        }),
        'invalid_request',
      );
    });

    test('a confidential client polls with its secret; without it the poll is 401 invalid_client', async () => {
      const confidential = await newApp(server, { confidential: true });
      const { device, verifier } = await deviceLogin(server, confidential, {
        scope: 'common',
        client_secret: confidential.clientSecret!,
      });
      assertOAuthError(await poll(server, confidential, device.device_code, verifier), 'invalid_client', 401);
      assertOAuthError(
        await poll(server, confidential, device.device_code, verifier, { client_secret: confidential.clientSecret! }),
        'authorization_pending',
      );
    });
  });
});

describe('wrong user codes on the device page', () => {
  // Its own server: the limit counts per IP, and every test browser comes from 127.0.0.1.
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('the first five wrong codes are 400 with the form again; the sixth is 429', async () => {
    const browser = new FormClient(server);
    for (let attempt = 1; attempt <= 5; attempt++) {
      const reply = await browser.submit('/device', { user_code: 'ZZZZ-ZZZZ' });
      assert.equal(reply.status, 400, `attempt ${attempt}: ${reply.text}`);
      assert.match(reply.text, /That code is not valid or has expired/);
      assert.match(reply.text, /name="user_code"/);
    }
    const sixth = await browser.submit('/device', { user_code: 'ZZZZ-ZZZZ' });
    assert.equal(sixth.status, 429, sixth.text);
    assert.match(sixth.text, /Too many wrong codes/);
    assert.equal(sixth.location, null);
  });
});
