/** GET /healthz: 200 while the database answers, 503 once it does not. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startServer, type TestServer } from '../helpers/server.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('a healthy server', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('GET /healthz is 200 {"status":"ok"} as JSON with a request id', async () => {
    const reply = await server.request('GET', '/healthz');
    assert.equal(reply.status, 200);
    assert.equal(reply.text, '{"status":"ok"}');
    assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
    assert.match(reply.headers.get('x-request-id') ?? '', UUID);
  });

  test('HEAD /healthz is 200 with no body', async () => {
    const reply = await server.request('HEAD', '/healthz');
    assert.equal(reply.status, 200);
    assert.equal(reply.text, '');
  });

  test('needs no credentials and ignores a query string', async () => {
    const reply = await server.request('GET', '/healthz?probe=1', { headers: { authorization: 'Bearer nonsense' } });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { status: 'ok' });
  });

  test('a successful check writes no info log line (load balancers poll it)', async () => {
    const before = server.logs.length;
    await server.request('GET', '/healthz');
    await server.request('GET', '/v1/user.php/00000000-0000-4000-8000-000000000000');
    const lines = server.logs.slice(before).map((line) => JSON.parse(line));
    assert.equal(lines.filter((line) => line.path === '/healthz').length, 0);
    assert.equal(
      lines.filter((line) => line.path?.startsWith('/v1/user.php/')).length,
      1,
      'other requests are still logged',
    );
  });
});

describe('a server whose database does not answer', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
    const ok = await server.request('GET', '/healthz');
    assert.equal(ok.status, 200);
    // The app's own handle goes away: every query now fails as with a lost database.
    await server.app.database.close();
  });
  after(() => server.close());

  test('GET /healthz is 503 with status "unavailable" in the error shape', async () => {
    const reply = await server.request('GET', '/healthz');
    assert.equal(reply.status, 503);
    assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(reply.body, {
      status: 'unavailable',
      code: 'serviceUnavailable',
      message: 'The database does not answer',
    });
  });

  test('the failure is logged as a warning naming the cause, without leaking it to the client', async () => {
    const before = server.logs.length;
    const reply = await server.request('GET', '/healthz');
    assert.equal(reply.status, 503);
    const warning = server.logs
      .slice(before)
      .map((line) => JSON.parse(line))
      .find((line) => line.msg === 'health check: database unreachable');
    assert.ok(warning, server.logs.slice(before).join('\n'));
    assert.equal(warning.level, 40);
    assert.equal(warning.reqId, reply.headers.get('x-request-id'));
    assert.equal(typeof warning.err?.message, 'string');
    assert.ok(!reply.text.includes(warning.err.message));
  });

  test('an API request that needs the database is 500 in the error shape with the request id', async () => {
    const reply = await server.request('GET', '/v1/user.php/00000000-0000-4000-8000-000000000000');
    assert.equal(reply.status, 500);
    assert.deepEqual(reply.body, {
      code: 'internalError',
      message: 'Internal server error',
      details: { requestId: reply.headers.get('x-request-id') },
    });
  });
});
