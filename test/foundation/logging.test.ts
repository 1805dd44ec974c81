/**
 * Request logging: one JSON line per request with its id, method, path and status; and no
 * secret a client sends (signatures, passwords, tokens, client secrets, codes) in any log line.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { SECRET_KEYS, writeRequestLine } from '../../src/http/request-log.ts';
import { newUser, signedHeaders } from '../helpers/keys.ts';
import {
  authorize,
  FormClient,
  newAccount,
  newApp,
  pkcePair,
  REDIRECT_URI,
  signedInTokens,
  tokenRequest,
} from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const parsed = (server: TestServer, from = 0) =>
  server.logs.slice(from).map((line) => JSON.parse(line) as Record<string, any>);

describe('one log line per request', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('every log line is a JSON object with level and time', () => {
    assert.ok(server.logs.length > 0);
    for (const line of parsed(server)) {
      assert.equal(typeof line.level, 'number');
      assert.equal(typeof line.time, 'number');
    }
  });

  for (const [method, path, status] of [
    ['GET', '/v1/user.php/00000000-0000-4000-8000-000000000000', 404],
    ['POST', '/v1/user.php', 400],
    ['GET', '/v4/projects', 401],
    ['GET', '/v4/openapi.json', 200],
    ['DELETE', '/nothing', 404],
  ] as const) {
    test(`${method} ${path} (${status}) writes exactly one line with the request id, method, path and status`, async () => {
      const before = server.logs.length;
      const reply = await server.request(method, path, method === 'POST' ? { body: {} } : {});
      assert.equal(reply.status, status, reply.text);
      const requestId = reply.headers.get('x-request-id');
      assert.match(requestId ?? '', UUID);
      const lines = parsed(server, before).filter((line) => line.reqId === requestId);
      assert.equal(lines.length, 1, server.logs.slice(before).join('\n'));
      const [line] = lines;
      assert.equal(line!.msg, 'request');
      assert.equal(line!.level, 30);
      assert.equal(line!.method, method);
      assert.equal(line!.path, path);
      assert.equal(line!.status, status);
      assert.equal(typeof line!.ms, 'number');
      assert.equal(line!.ip, '127.0.0.1');
    });
  }

  test("the request line is the JSON pino writes: its fields in pino's order, nothing else on the line", async () => {
    const before = server.logs.length;
    const sentAt = Date.now();
    const path = '/no%22th%5Cing';
    const reply = await server.request('GET', path);
    assert.equal(reply.status, 404);
    const text = server.logs.slice(before).find((line) => line.includes(reply.headers.get('x-request-id')!))!;
    const line = JSON.parse(text) as Record<string, unknown>;
    assert.equal(text.trimEnd(), JSON.stringify(line));
    assert.deepEqual(Object.keys(line), [
      'level',
      'time',
      'pid',
      'hostname',
      'reqId',
      'method',
      'path',
      'status',
      'ms',
      'ip',
      'msg',
    ]);
    assert.equal(line.path, path);
    assert.ok((line.time as number) >= sentAt && (line.time as number) <= Date.now());
    assert.equal(line.pid, process.pid);
  });

  test("writeRequestLine writes pino's own text for the line, and leaves a logger with a mixin to info()", () => {
    const written: string[] = [];
    const logger = pino({ timestamp: () => ',"time":1' }, { write: (text: string) => void written.push(text) }).child({
      reqId: 'r1',
    });
    assert.equal(writeRequestLine(logger, 'GET', '/a"b\\c', 200, 1.5, '127.0.0.1'), true);
    logger.info({ method: 'GET', path: '/a"b\\c', status: 200, ms: 1.5, ip: '127.0.0.1' }, 'request');
    assert.equal(written.length, 2);
    assert.equal(written[0], written[1]);
    const mixed = pino({ mixin: () => ({ extra: 1 }) }, { write: () => {} });
    assert.equal(writeRequestLine(mixed, 'GET', '/', 200, 1, '127.0.0.1'), false);
  });

  test('each request gets its own id', async () => {
    const replies = await Promise.all(Array.from({ length: 5 }, () => server.request('GET', '/nothing')));
    const ids = replies.map((reply) => reply.headers.get('x-request-id'));
    assert.equal(new Set(ids).size, 5);
  });

  test('a request id sent by the client is not trusted as the log id', async () => {
    const reply = await server.request('GET', '/nothing', { headers: { 'x-request-id': 'forged-id' } });
    assert.match(reply.headers.get('x-request-id') ?? '', UUID);
    assert.ok(!server.logs.some((line) => line.includes('forged-id')));
  });

  test('the logged path leaves out the query string', async () => {
    const before = server.logs.length;
    const reply = await server.request('GET', '/v1/engram.php?mod_id=123&secret=query-value-42');
    const [line] = parsed(server, before).filter((entry) => entry.reqId === reply.headers.get('x-request-id'));
    assert.equal(line!.path, '/v1/engram.php');
    assert.ok(!server.logs.slice(before).some((entry) => entry.includes('query-value-42')));
  });
});

describe("a request's logger", () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({
      beforeListen: (app) => {
        app.get('/test/logs', async (request) => {
          request.log.warn({ step: 'handler' }, 'a handler line');
          return { ok: true };
        });
      },
    });
  });
  after(() => server.close());

  test("a handler's own line carries the request id, and the request line follows it", async () => {
    const before = server.logs.length;
    const reply = await server.request('GET', '/test/logs');
    assert.equal(reply.status, 200, reply.text);
    const requestId = reply.headers.get('x-request-id');
    const lines = parsed(server, before).filter((line) => line.reqId === requestId);
    assert.deepEqual(
      lines.map((line) => [line.level, line.msg, line.step, line.status]),
      [
        [40, 'a handler line', 'handler', undefined],
        [30, 'request', undefined, 200],
      ],
    );
    assert.equal(Object.keys(lines[1]!).join(','), 'level,time,pid,hostname,reqId,method,path,status,ms,ip,msg');
  });

  test('the request line of a request that logged nothing has the same fields in the same order', async () => {
    const before = server.logs.length;
    const reply = await server.request('GET', '/v4/openapi.json');
    const [line] = parsed(server, before).filter((entry) => entry.reqId === reply.headers.get('x-request-id'));
    assert.equal(Object.keys(line!).join(','), 'level,time,pid,hostname,reqId,method,path,status,ms,ip,msg');
  });

  test('a route with its own level (GET /healthz logs warnings only) writes no request line', async () => {
    const before = server.logs.length;
    const reply = await server.request('GET', '/healthz');
    assert.equal(reply.status, 200);
    assert.deepEqual(
      parsed(server, before).filter((line) => line.reqId === reply.headers.get('x-request-id')),
      [],
    );
  });
});

describe('secrets never reach the logs', () => {
  let server: TestServer;
  /** Every secret value a client sent during the suite. */
  const secrets: Array<[string, string]> = [];
  const remember = (name: string, value: string | undefined | null) => {
    assert.ok(value, `${name} is set`);
    secrets.push([name, value]);
  };

  before(async () => {
    // The most verbose level: nothing secret even at trace.
    server = await startServer({ env: { LOG_LEVEL: 'trace' } });
  });
  after(() => server.close());

  test('a signed v1 request: neither the Authorization header nor the signature is logged', async () => {
    const user = newUser('rsa-sha1');
    const created = await server.request('POST', '/v1/user.php', {
      body: { user_id: user.userId, public_key: user.publicPem },
    });
    assert.equal(created.status, 200, created.text);
    const path = `/v1/user.php/${user.userId}`;
    const headers = signedHeaders(user, 'DELETE', path);
    remember('Basic credentials', headers.authorization!.slice('Basic '.length));
    remember(
      'signature',
      Buffer.from(headers.authorization!.slice('Basic '.length), 'base64').toString().split(':')[1],
    );
    const reply = await server.request('DELETE', path, { headers });
    assert.equal(reply.status, 200, reply.text);
    // A rejected signature is logged as a 403 and no more.
    const wrong = await server.request('DELETE', path, { headers: { authorization: headers.authorization! } });
    assert.equal(wrong.status, 403);
  });

  test('a v4 login with a password and the code exchange, then Bearer and X-Service-Token requests', async () => {
    const { account, tokens } = await signedInTokens(server, 'common users:read');
    remember('password', account.password);
    remember('access token', tokens.access_token);
    remember('refresh token', tokens.refresh_token);
    const bearer = await server.request('GET', '/v4/user', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    assert.equal(bearer.status, 200, bearer.text);
    const service = await server.request('GET', '/v4/user', { headers: { 'x-service-token': tokens.access_token } });
    assert.equal(service.status, 200, service.text);
    const unknown = await server.request('GET', '/v4/user', {
      headers: { authorization: 'Bearer not-a-real-token-0123456789' },
    });
    assert.equal(unknown.status, 401);
    remember('unknown bearer token', 'not-a-real-token-0123456789');
  });

  test('a confidential client: its secret, the authorization code, the verifier and a refresh', async () => {
    const app = await newApp(server, { confidential: true, scopes: ['common'] });
    remember('client secret', app.clientSecret);
    const account = await newAccount(server, { password: 'another secret passphrase' });
    remember('second password', account.password);
    const { challenge, verifier } = pkcePair();
    remember('code verifier', verifier);
    const back = await authorize(server, {
      clientId: app.clientId,
      challenge,
      username: account.username,
      password: account.password,
      scope: 'common',
    });
    const code = back.searchParams.get('code');
    remember('authorization code', code);
    const exchanged = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      client_secret: app.clientSecret!,
      code: code!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    assert.equal(exchanged.status, 200, exchanged.text);
    remember('confidential access token', exchanged.body.access_token);
    const refreshed = await tokenRequest(
      server,
      { grant_type: 'refresh_token', refresh_token: exchanged.body.refresh_token },
      { authorization: `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64')}` },
    );
    assert.equal(refreshed.status, 200, refreshed.text);
    remember('old refresh token', exchanged.body.refresh_token);
    remember('new refresh token', refreshed.body.refresh_token);
    // A replayed code and a wrong secret are refused; their values are not logged either.
    const replay = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      client_secret: 'wrong-client-secret-xyz',
      code: code!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    assert.equal(replay.status, 401, replay.text);
    remember('wrong client secret', 'wrong-client-secret-xyz');
  });

  test('a failed password sign-in', async () => {
    const app = await newApp(server);
    const account = await newAccount(server);
    const { challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: app.clientId,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      redirect_uri: REDIRECT_URI,
      scope: 'common',
      state: 's',
    });
    const started = await server.request('GET', `/v4/login?${query}&no_redirect=true`);
    assert.equal(started.status, 200, started.text);
    const browser = new FormClient(server);
    const reply = await browser.submit(new URL(started.body.login_url).pathname, {
      username: account.username,
      password: 'wrong-password-do-not-log',
    });
    assert.equal(reply.status, 401);
    remember('failed password', 'wrong-password-do-not-log');
  });

  test('a device login: the device code sent when polling', async () => {
    const app = await newApp(server);
    const { challenge, verifier } = pkcePair();
    const started = await server.request('POST', '/v4/device', {
      body: new URLSearchParams({
        client_id: app.clientId,
        scope: 'common',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(started.status, 201, started.text);
    remember('device code', started.body.device_code);
    remember('device verifier', verifier);
    const poll = await tokenRequest(server, {
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      client_id: app.clientId,
      device_code: started.body.device_code,
      code_verifier: verifier,
    });
    assert.equal(poll.status, 400);
    assert.equal(poll.body.error, 'authorization_pending');
  });

  test('a log call elsewhere in the code that passes a secret-named field or request headers is censored', () => {
    const before = server.logs.length;
    server.app.log.warn({ password: 'stray-password-1', client_secret: 'stray-secret-2', detail: 'kept' }, 'stray');
    const headers = { authorization: 'Bearer stray-token-3', cookie: 'sid=stray-cookie-4', accept: 'text/html' };
    server.app.log.warn({ headers }, 'stray headers');
    server.app.log.warn({ req: { method: 'GET', headers } }, 'stray request');
    const [fields, headerLine, request] = parsed(server, before);
    assert.equal(fields!.password, '[redacted]');
    assert.equal(fields!.client_secret, '[redacted]');
    assert.equal(fields!.detail, 'kept');
    assert.deepEqual(headerLine!.headers, { authorization: '[redacted]', cookie: '[redacted]', accept: 'text/html' });
    assert.equal(request!.req.method, 'GET');
    for (const value of ['stray-password-1', 'stray-secret-2', 'stray-token-3', 'stray-cookie-4'])
      remember(value, value);
  });

  test('every secret-named field is censored, alone in a log call', () => {
    // Each name of the formatter's list: a name added there but not to its fast check fails here.
    const names = SECRET_KEYS;
    const before = server.logs.length;
    for (const name of names) server.app.log.warn({ [name]: `stray-${name}`, detail: 'kept' }, 'stray field');
    const lines = parsed(server, before);
    assert.equal(lines.length, names.length);
    for (const [index, name] of names.entries()) {
      assert.equal(lines[index]![name], '[redacted]', name);
      assert.equal(lines[index]!.detail, 'kept');
      remember(name, `stray-${name}`);
    }
  });

  test('none of the values above appears in any log line', () => {
    assert.ok(secrets.length >= 15, `collected ${secrets.length} secrets`);
    const all = server.logs.join('\n');
    assert.ok(server.logs.length > 20);
    for (const [name, value] of secrets) {
      assert.ok(!all.includes(value), `${name} appears in the logs`);
      assert.ok(!all.includes(encodeURIComponent(value)), `${name} (URL-encoded) appears in the logs`);
    }
  });
});
