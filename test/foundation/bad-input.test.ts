/**
 * Hostile input named in issue 11, through real HTTP: repeated query parameters, Object.prototype
 * names, NUL characters (which PostgreSQL refuses), empty lists, deeply nested JSON, a non-Latin-1
 * character copied into a Location; and the headers every answer carries. (Errors raised before
 * routing are in test/fuzz/raw-http.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSession } from '../../src/oauth/sessions.ts';
import type { TestUser } from '../helpers/keys.ts';
import { FormClient, newAccount, newApp, startLogin, tokenRequest } from '../helpers/oauth.ts';
import { type Reply, startServer, type TestServer } from '../helpers/server.ts';
import { confirmedMod, registerUser, signed } from '../helpers/v1.ts';
import { FakeWorkshop } from '../helpers/workshop.ts';

const workshop = new FakeWorkshop();
let server: TestServer;
let token: string;
let clientId: string;
let v1User: TestUser;
let modId: string;

before(async () => {
  await workshop.start();
  server = await startServer({ env: { WORKSHOP_URL: workshop.template } });
  const account = await newAccount(server);
  const app = await newApp(server, { scopes: ['common', 'users:read', 'users.private_key:read'] });
  clientId = app.clientId;
  ({ accessToken: token } = await createSession(server.app.database.db, {
    userId: account.userId,
    clientId,
    scope: 'common users:read users.private_key:read',
  }));
  v1User = await registerUser(server);
  modId = String((await confirmedMod(server, workshop, v1User)).mod_id);
});
after(async () => {
  await server.close();
  await workshop.stop();
});

const bearer = () => ({ authorization: `Bearer ${token}` });

function assertApiError(reply: Reply, status: number) {
  assert.equal(reply.status, status, reply.text);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(typeof reply.body?.code, 'string', reply.text);
  assert.equal(typeof reply.body?.message, 'string', reply.text);
  assert.deepEqual(
    Object.keys(reply.body).filter((key) => !['code', 'message', 'details'].includes(key)),
    [],
    reply.text,
  );
}

describe('repeated query parameters', () => {
  test('a repeated v1 parameter is a 400 naming it, not a 500', async () => {
    const reply = await server.request('GET', '/v1/engram.php?mod_id=1&mod_id=2');
    assertApiError(reply, 400);
    assert.equal(reply.body.details.parameter, 'mod_id');
  });

  test('a repeated v4 parameter is a 400', async () => {
    const reply = await server.request('GET', '/v4/projects?page=1&page=2', { headers: bearer() });
    assertApiError(reply, 400);
    assert.equal(reply.body.details.parameter, 'page');
  });

  test('a repeated parameter of the authorization endpoint is invalid_request', async () => {
    const reply = await server.request(
      'GET',
      `/v4/login?client_id=${clientId}&client_id=${clientId}&response_type=code`,
    );
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.error, 'invalid_request');
  });
});

describe('Object.prototype names as input', () => {
  for (const grantType of ['toString', '__proto__', 'constructor', 'valueOf', 'hasOwnProperty']) {
    test(`grant_type=${grantType} is unsupported_grant_type`, async () => {
      const reply = await tokenRequest(server, { grant_type: grantType, client_id: clientId });
      assert.equal(reply.status, 400, reply.text);
      assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'error_description']);
      assert.equal(reply.body.error, 'unsupported_grant_type');
    });
  }
});

describe('the sign-in switch keeps its Location a valid header', () => {
  async function browserOnLoginPage() {
    const page = await startLogin(server, {
      client_id: clientId,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    });
    const browser = new FormClient(server);
    const html = (await browser.fetch(page)).text;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
    assert.ok(csrf);
    return { page, browser, csrf };
  }

  test('a NUL in the interaction id is a 400, not a 500', async () => {
    const { page, browser, csrf } = await browserOnLoginPage();
    const reply = await browser.fetch(`${page}%00/switch`, { form: { _csrf: csrf } });
    assert.equal(reply.status, 400, reply.text);
  });

  test('a non-Latin-1 character in the interaction id is percent-encoded in Location', async () => {
    const { page, browser, csrf } = await browserOnLoginPage();
    const reply = await browser.fetch(`${page}%E2%82%AC/switch`, { form: { _csrf: csrf } });
    assert.equal(reply.status, 303, reply.text);
    assert.equal(reply.location, `${page}%E2%82%AC`);
  });
});

describe('NUL characters are refused before they reach the database', () => {
  test('in a v4 body (project title)', async () => {
    assertApiError(
      await server.request('POST', '/v4/projects', { headers: bearer(), body: { title: 'a\u0000b', gameId: 'ark' } }),
      400,
    );
  });

  test('the refusal names where the NUL is: a value or a key, inside an element of a bulk POST', async () => {
    const inValue = await server.request('POST', '/v4/projects', {
      headers: bearer(),
      body: [{ title: 'fine' }, { title: 'a\u0000b' }],
    });
    assertApiError(inValue, 400);
    assert.match(inValue.body.message, /\(at \/1\/title\)$/, inValue.text);
    const inKey = await server.request('POST', '/v4/projects', {
      headers: bearer(),
      body: [{ title: 'fine', extra: { 'k\u0000ey': 1 } }],
    });
    assertApiError(inKey, 400);
    assert.match(inKey.body.message, /\(at \/0\/extra\/k\\0ey\)$/, inKey.text);
    const whole = await server.request('POST', '/v4/projects', {
      headers: { ...bearer(), 'content-type': 'application/json' },
      body: '"a\\u0000b"',
    });
    assertApiError(whole, 400);
    assert.match(whole.body.message, /\(at \/\)$/, whole.text);
  });

  test('in a v4 filter, raw or percent-encoded', async () => {
    assertApiError(await server.request('GET', '/v4/projects?title=%00', { headers: bearer() }), 400);
    assertApiError(await server.request('GET', '/v4/projects?title=a%00b&gameId=x', { headers: bearer() }), 400);
  });

  test('in a path parameter', async () => {
    assertApiError(await server.request('GET', '/v4/users/%00', { headers: bearer() }), 400);
    assertApiError(await server.request('GET', '/v1/engram.php/PrimalItem%00_C'), 400);
    assertApiError(await server.request('GET', '/v1/engram.php/%2FGame%2FMods%2FA%00.B'), 400);
  });

  // GET and HEAD routes are guarded before parsing, the others after (src/http/input-guard.ts).
  test('in a HEAD, a DELETE and a path of no route, as in a GET', async () => {
    const head = await server.request('HEAD', '/v1/engram.php/PrimalItem%00_C');
    assert.equal(head.status, 400);
    assert.equal((await server.request('HEAD', '/v4/projects?title=%00', { headers: bearer() })).status, 400);
    assertApiError(await server.request('DELETE', '/v4/projects/%00', { headers: bearer() }), 400);
    assertApiError(await server.request('GET', '/no-such-page%00'), 400);
    assertApiError(await server.request('GET', '/v4/no-such-class?a=1&a=2', { headers: bearer() }), 400);
  });

  test('a refused token is answered before bad input, on a GET as on a POST', async () => {
    const refused = { authorization: 'Bearer not-a-token' };
    assertApiError(await server.request('GET', '/v4/users/%00', { headers: refused }), 401);
    assertApiError(await server.request('GET', '/v4/projects?title=%00', { headers: refused }), 401);
    assertApiError(
      await server.request('POST', '/v4/projects', { headers: refused, body: { title: 'a\u0000b', gameId: 'ark' } }),
      401,
    );
  });

  test('in a sign-in username', async () => {
    const page = await startLogin(server, {
      client_id: clientId,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    });
    const browser = new FormClient(server);
    const reply = await browser.submit(page, { username: 'a\u0000b', password: 'whatever1' });
    assert.equal(reply.status, 400, reply.text);
  });

  test('in the client id of HTTP Basic at the token endpoint', async () => {
    const reply = await tokenRequest(
      server,
      { grant_type: 'refresh_token', refresh_token: 'x' },
      { authorization: `Basic ${Buffer.from('a%00b:secret').toString('base64')}` },
    );
    assert.ok(reply.status === 400 || reply.status === 401, reply.text);
    assert.equal(typeof reply.body.error, 'string');
  });

  test('as a \\u0000 escape in a v1 document title', async () => {
    const id = crypto.randomUUID();
    const reply = await signed(
      server,
      v1User,
      'POST',
      '/v1/document.php',
      `{"Identifier":"${id}","Title":"a\\u0000b","Description":"","LootSources":[]}`,
    );
    assertApiError(reply, 400);
    assert.equal((await server.request('GET', `/v1/document.php/${id}`)).status, 404);
  });

  test('in a v1 engram write', async () => {
    const reply = await signed(server, v1User, 'POST', '/v1/engram.php', {
      path: '/Game/Mods/A/B\u0000.B',
      label: 'x',
      mod_id: modId,
      availability: 1,
      can_blueprint: true,
    });
    assertApiError(reply, 400);
  });
});

describe('empty lists', () => {
  test('GET /v1/engram.php?mod_id= is the engrams of no mod', async () => {
    for (const query of ['mod_id=', 'mod_id=,', 'mod_id=%20']) {
      const reply = await server.request('GET', `/v1/engram.php?${query}`);
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual(reply.body, []);
    }
  });
});

describe('deeply nested JSON', () => {
  const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

  test('a v1 body 20,000 levels deep answers 400 in our shape without echoing it', async () => {
    for (const [path, body] of [
      ['/v1/mod.php', `{"mod_id":${nested(20_000)}}`],
      [
        '/v1/engram.php',
        `{"path":"/Game/A.B","label":"x","mod_id":"${modId}","availability":1,"can_blueprint":true,"environments":${nested(20_000)}}`,
      ],
      ['/v1/user.php', `{"user_id":"${v1User.userId}","public_key":${nested(20_000)}}`],
    ] as const) {
      const reply = await signed(server, v1User, 'POST', path, body);
      assertApiError(reply, 400);
      assert.ok(reply.text.length < 2000, `${path} echoed the input: ${reply.text.length} bytes`);
    }
  });

  test('a v4 body 20,000 levels deep answers 400 in our shape', async () => {
    const reply = await server.request('POST', '/v4/projects', {
      headers: { ...bearer(), 'content-type': 'application/json' },
      body: `{"title":${nested(20_000)}}`,
    });
    assertApiError(reply, 400);
  });
});

describe('headers of every answer', () => {
  test('API answers, errors and pages carry X-Content-Type-Options: nosniff and X-Request-Id', async () => {
    for (const [method, path] of [
      ['GET', '/healthz'],
      ['GET', '/v1/engram.php'],
      ['GET', '/v4/projects'],
      ['GET', '/no/such/path'],
      ['DELETE', '/healthz'],
      ['GET', '/v4/openapi.json'],
      ['GET', '/device'],
    ]) {
      const reply = await server.request(method!, path!);
      assert.equal(reply.headers.get('x-content-type-options'), 'nosniff', `${method} ${path}`);
      assert.ok(reply.headers.get('x-request-id'), `${method} ${path}`);
    }
  });

  test('a v4 answer to a token (with privateKey) is not cacheable', async () => {
    const reply = await server.request('GET', '/v4/user', { headers: bearer() });
    assert.equal(reply.status, 200, reply.text);
    assert.ok('privateKey' in reply.body);
    assert.equal(reply.headers.get('cache-control'), 'no-store');
  });

  test('a signed v1 answer is not cacheable; the public engram list still is', async () => {
    const mine = await signed(server, v1User, 'GET', '/v1/mod.php');
    assert.equal(mine.status, 200, mine.text);
    assert.equal(mine.headers.get('cache-control'), 'no-store');
    const list = await server.request('GET', '/v1/engram.php');
    assert.notEqual(list.headers.get('cache-control'), 'no-store');
  });
});
