/**
 * The error model outside the OAuth endpoints: every error is {"code","message","details"?} as
 * JSON with a request id; 404 vs 405 (with Allow); bodies the server cannot read; 500s.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { signedInTokens } from '../helpers/oauth.ts';
import { type Reply, startServer, type TestServer } from '../helpers/server.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MIB = 1024 * 1024;

/** DESIGN's error body: code (camelCase), message, optional details, and nothing else; JSON; a request id. */
function assertError(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, reply.text);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  assert.match(reply.headers.get('x-request-id') ?? '', UUID);
  assert.ok(reply.body && typeof reply.body === 'object' && !Array.isArray(reply.body), reply.text);
  for (const key of Object.keys(reply.body))
    assert.ok(['code', 'message', 'details'].includes(key), `unexpected key ${key} in ${reply.text}`);
  assert.equal(reply.body.code, code);
  assert.equal(typeof reply.body.message, 'string');
  assert.notEqual(reply.body.message.trim(), '');
}

let server: TestServer;
let bearer: Record<string, string>;

before(async () => {
  server = await startServer({
    beforeListen(app) {
      app.get('/test/boom', async () => {
        throw new Error('database password is hunter2');
      });
      app.post('/test/boom', async () => {
        throw new TypeError('exploded while handling a body');
      });
      // The drivers' own errors for "no room in time": SQLite's busy timeout passing while another
      // connection holds the write lock, and pg-pool's wait for a connection running out.
      app.get('/test/busy/sqlite', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'busy-'));
        const holder = new Sqlite(join(dir, 'x.db'));
        const other = new Sqlite(join(dir, 'x.db'), { timeout: 0 });
        try {
          holder.exec('create table t (x); begin immediate; insert into t values (1)');
          other.exec('insert into t values (2)');
        } finally {
          other.close();
          holder.close();
          rmSync(dir, { recursive: true, force: true });
        }
      });
      app.get('/test/busy/postgres', async () => {
        // Opening the one connection may take longer than 50 ms on a loaded machine; only the wait
        // for it to come free is to run out here.
        const pool = new pg.Pool({
          connectionString: process.env.DATABASE_URL,
          max: 1,
          connectionTimeoutMillis: 10_000,
        });
        const held = await pool.connect();
        pool.options.connectionTimeoutMillis = 50;
        try {
          await pool.query('select 1');
        } finally {
          held.release();
          await pool.end();
        }
      });
      // pg-pool's other "not in time": a new connection that the server never answers.
      app.get('/test/busy/postgres-connect', async () => {
        const sockets = new Set<Socket>();
        const silent = createServer((socket) => sockets.add(socket));
        await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
        const { port } = silent.address() as AddressInfo;
        const pool = new pg.Pool({ host: '127.0.0.1', port, user: 'nobody', connectionTimeoutMillis: 50 });
        try {
          await pool.query('select 1');
        } finally {
          await pool.end();
          for (const socket of sockets) socket.destroy();
          await new Promise((resolve) => silent.close(resolve));
        }
      });
    },
  });
  const { tokens } = await signedInTokens(server, 'common users:read');
  bearer = { authorization: `Bearer ${tokens.access_token}` };
});
after(() => server.close());

describe('unknown paths', () => {
  for (const path of ['/nothing-here', '/v1/nothing.php', '/v4/nothing', '/v4/projects/x/y/z']) {
    test(`GET ${path} is 404 notFound naming the path`, async () => {
      const reply = await server.request('GET', path);
      assertError(reply, 404, 'notFound');
      assert.ok(reply.body.message.includes(path), reply.body.message);
      assert.equal(reply.headers.get('allow'), null);
    });
  }

  test('a query string is not echoed in the message', async () => {
    const reply = await server.request('GET', '/nothing-here?code=secret-code-123');
    assertError(reply, 404, 'notFound');
    assert.ok(!reply.text.includes('secret-code-123'));
  });

  test('HEAD of an unknown path is 404 with no body', async () => {
    const reply = await server.request('HEAD', '/nothing-here');
    assert.equal(reply.status, 404);
    assert.equal(reply.text, '');
  });

  test('a path that is not valid percent-encoding is 400 in the error shape', async () => {
    for (const path of ['/%zz', '/v1/user.php/%zz']) {
      const reply = await server.request('GET', path);
      assertError(reply, 400, 'badRequest');
    }
  });
});

describe('a known path with a method it does not support', () => {
  for (const [method, path, allowed] of [
    ['DELETE', '/healthz', ['GET', 'HEAD']],
    ['POST', '/healthz/', ['GET', 'HEAD']],
    ['PUT', '/v4/projects', ['GET', 'HEAD', 'POST', 'DELETE']],
    ['PUT', '/v1/mod.php', ['GET', 'HEAD', 'POST', 'DELETE']],
    ['PATCH', '/v1/engram.php', ['GET', 'HEAD', 'POST', 'DELETE']],
    ['GET', '/v1/user.php', ['POST']],
    ['OPTIONS', '/v1/user.php', ['POST']],
  ] as const) {
    test(`${method} ${path} is 405 with Allow: ${allowed.join(', ')}`, async () => {
      const reply = await server.request(method, path);
      assertError(reply, 405, 'methodNotAllowed');
      const allow = (reply.headers.get('allow') ?? '').split(',').map((name) => name.trim());
      assert.deepEqual(new Set(allow), new Set(allowed));
      assert.ok(reply.body.message.includes(method));
    });
  }
});

describe('request bodies the server cannot read', () => {
  test('malformed JSON is 400 saying so', async () => {
    const reply = await server.request('POST', '/v4/projects', {
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '{"title":',
    });
    assertError(reply, 400, 'badRequest');
    assert.match(reply.body.message, /JSON/);
  });

  test('an empty body declared as JSON is 400', async () => {
    const reply = await server.request('POST', '/v4/projects', {
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '',
    });
    assertError(reply, 400, 'badRequest');
    assert.match(reply.body.message, /empty/i);
  });

  test('a JSON body with __proto__ is refused with 400 and creates nothing', async () => {
    const reply = await server.request('POST', '/v4/projects', {
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '{"title":"polluted","__proto__":{"admin":true}}',
    });
    assertError(reply, 400, 'badRequest');
    const list = await server.request('GET', '/v4/projects', { headers: bearer });
    assert.equal(list.status, 200, list.text);
    assert.ok(!list.body.results.some((project: { title: string }) => project.title === 'polluted'));
  });

  for (const contentType of [
    'text/plain',
    'application/xml',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
  ]) {
    test(`a JSON POST sent as ${contentType.split(';')[0]} is 415 unsupportedMediaType and creates nothing`, async () => {
      const reply = await server.request('POST', '/v4/projects', {
        headers: { ...bearer, 'content-type': contentType },
        body: JSON.stringify({ title: `sent as ${contentType}` }),
      });
      assertError(reply, 415, 'unsupportedMediaType');
      assert.match(reply.body.message, /Content-Type/);
      const list = await server.request('GET', '/v4/projects', { headers: bearer });
      assert.ok(!list.body.results.some((project: { title: string }) => project.title === `sent as ${contentType}`));
    });
  }

  test('JSON with a charset parameter is accepted', async () => {
    const reply = await server.request('POST', '/v4/projects', {
      headers: { ...bearer, 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ title: 'with charset' }),
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.created[0].title, 'with charset');
  });

  test('a body over 1 MiB is 413 payloadTooLarge, on v4 and on v1', async () => {
    const big = JSON.stringify({ title: 'x'.repeat(MIB) });
    const v4 = await server.request('POST', '/v4/projects', {
      headers: { ...bearer, 'content-type': 'application/json' },
      body: big,
    });
    assertError(v4, 413, 'payloadTooLarge');
    assert.match(v4.body.message, /1 MiB/);
    const v1 = await server.request('POST', '/v1/user.php', {
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    assertError(v1, 413, 'payloadTooLarge');
  });

  test('a body of exactly 1 MiB is read (not 413)', async () => {
    const prefix = '{"user_id":"not-a-uuid","public_key":"';
    const body = `${prefix + 'a'.repeat(MIB - prefix.length - 2)}"}`;
    assert.equal(Buffer.byteLength(body), MIB);
    const reply = await server.request('POST', '/v1/user.php', {
      headers: { 'content-type': 'application/json' },
      body,
    });
    assertError(reply, 400, 'badRequest');
    assert.match(reply.body.message, /user_id/);
  });
});

describe('an unexpected exception', () => {
  for (const method of ['GET', 'POST'] as const) {
    test(`${method}: 500 internalError whose body has the request id and no stack or message; the log line has the stack`, async () => {
      const before = server.logs.length;
      const reply = await server.request(method, '/test/boom', method === 'POST' ? { body: { any: 'thing' } } : {});
      assertError(reply, 500, 'internalError');
      const requestId = reply.headers.get('x-request-id');
      assert.deepEqual(reply.body, { code: 'internalError', message: 'Internal server error', details: { requestId } });
      assert.doesNotMatch(reply.text, /hunter2|exploded|\bat\b.*\.ts|stack/i);

      const lines = server.logs.slice(before).map((line) => JSON.parse(line));
      const failure = lines.find((line) => line.reqId === requestId && line.err?.stack);
      assert.ok(failure, server.logs.slice(before).join('\n'));
      assert.equal(failure.level, 50);
      assert.match(
        failure.err.stack,
        method === 'GET'
          ? /Error: database password is hunter2\n\s+at /
          : /TypeError: exploded while handling a body\n\s+at /,
      );
      assert.ok(lines.some((line) => line.reqId === requestId && line.status === 500 && line.path === '/test/boom'));
    });
  }

  test('the server keeps serving afterwards', async () => {
    assertError(await server.request('GET', '/test/boom'), 500, 'internalError');
    const health = await server.request('GET', '/healthz');
    assert.equal(health.status, 200);
  });
});

describe('a database with no room for the request in time', () => {
  const postgres = process.env.DATABASE_URL?.startsWith('postgres');
  for (const driver of ['sqlite', 'postgres', 'postgres-connect']) {
    test(`${driver}: 503 serviceUnavailable with Retry-After, logged as a warning, not a 500`, {
      skip: driver === 'postgres' && !postgres && 'PostgreSQL only',
    }, async () => {
      const before = server.logs.length;
      const reply = await server.request('GET', `/test/busy/${driver}`);
      assertError(reply, 503, 'serviceUnavailable');
      assert.equal(reply.headers.get('retry-after'), '1');
      const lines = server.logs.slice(before).map((line) => JSON.parse(line));
      assert.ok(
        lines.some((line) => line.level === 40 && line.err),
        server.logs.slice(before).join('\n'),
      );
      assert.ok(!lines.some((line) => line.level >= 50), 'no error-level line');
    });
  }
});

describe('client errors are not logged as server errors', () => {
  test('404, 405, 400 and 413 leave no error-level line', async () => {
    const before = server.logs.length;
    await server.request('GET', '/nothing-here');
    await server.request('DELETE', '/healthz');
    await server.request('POST', '/v4/projects', {
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '{',
    });
    await server.request('POST', '/v1/user.php', {
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(MIB + 1),
    });
    const lines = server.logs.slice(before).map((line) => JSON.parse(line));
    assert.deepEqual(
      lines.map((line) => line.status),
      [404, 405, 400, 413],
    );
    assert.ok(
      lines.every((line) => line.level < 50),
      server.logs.slice(before).join('\n'),
    );
  });
});
