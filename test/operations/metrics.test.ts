/**
 * GET /metrics (DESIGN "Operational contract": METRICS_TOKEN): absent without the token, 401 without
 * the right bearer token, and Prometheus text that counts requests by route pattern (never the raw
 * path), token grants by grant type and outcome, and rate-limit refusals. (Counters live in the
 * process, which the servers of this file share: assertions compare before and after.)
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { countSecurityEvent } from '../../src/http/metrics.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const TOKEN = 'metrics-token-for-tests-0123456789';

function value(text: string, name: string, ...labels: string[]): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('GET /metrics without METRICS_TOKEN', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('does not exist', async () => {
    const reply = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(reply.status, 404);
    assert.equal(reply.body.code, 'notFound');
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let server: TestServer;
  const scrape = async () => {
    const reply = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(reply.status, 200, reply.text);
    return reply.text;
  };

  before(async () => {
    server = await startServer({ env: { METRICS_TOKEN: TOKEN, RATE_LIMIT_V1: '2' } });
  });
  after(() => server.close());

  test('needs the bearer token: none, a wrong one, or a prefix of it is 401', async () => {
    for (const authorization of [undefined, `Bearer wrong`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN]) {
      const reply = await server.request('GET', '/metrics', {
        headers: authorization === undefined ? {} : { authorization },
      });
      assert.equal(reply.status, 401, String(authorization));
      assert.equal(reply.body.code, 'unauthorized');
      assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer/);
      assert.doesNotMatch(reply.text, new RegExp(TOKEN));
    }
  });

  test('answers Prometheus text with process and database pool metrics', async () => {
    const reply = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(reply.status, 200);
    assert.match(reply.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(reply.text, /^# TYPE http_request_duration_seconds histogram$/m);
    assert.match(reply.text, /^process_cpu_user_seconds_total \d/m);
    assert.match(reply.text, /^nodejs_eventloop_lag_seconds \d/m);
    assert.ok(value(reply.text, 'db_pool_connections', 'state="total"') >= 1);
  });

  test('counts requests and their latency by route pattern and status, never by raw path', async () => {
    const id = randomUUID();
    const before = await scrape();
    const route = 'route="/v1/user.php/:ids"';
    const beforeCount = value(before, 'http_requests_total', 'method="GET"', route, 'status="404"');
    const beforeHistogram = value(before, 'http_request_duration_seconds_count', 'method="GET"', route, 'status="404"');
    assert.equal((await server.request('GET', `/v1/user.php/${id}`)).status, 404);
    assert.equal((await server.request('GET', `/no/such/${id}`)).status, 404);
    const afterText = await scrape();
    assert.equal(value(afterText, 'http_requests_total', 'method="GET"', route, 'status="404"'), beforeCount + 1);
    assert.equal(
      value(afterText, 'http_request_duration_seconds_count', 'method="GET"', route, 'status="404"'),
      beforeHistogram + 1,
    );
    assert.ok(value(afterText, 'http_requests_total', 'route="unmatched"', 'status="404"') >= 1);
    assert.doesNotMatch(afterText, new RegExp(id), 'a raw path became a label');
  });

  test('counts token grants by grant type and outcome', async () => {
    const before = await scrape();
    const labels = ['grant_type="authorization_code"', 'outcome="invalid_client"'];
    const otherLabels = ['grant_type="other"', 'outcome="unsupported_grant_type"'];
    const form = (body: string) =>
      server.request('POST', '/v4/login', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    assert.equal(
      (
        await form(
          `grant_type=authorization_code&client_id=${randomUUID()}&code=x&redirect_uri=https://a.example/&code_verifier=${'a'.repeat(43)}`,
        )
      ).status,
      401,
    );
    assert.equal((await form('grant_type=__proto__')).status, 400);
    const afterText = await scrape();
    assert.equal(
      value(afterText, 'oauth_token_grants_total', ...labels),
      value(before, 'oauth_token_grants_total', ...labels) + 1,
    );
    assert.equal(
      value(afterText, 'oauth_token_grants_total', ...otherLabels),
      value(before, 'oauth_token_grants_total', ...otherLabels) + 1,
    );
  });

  test('counts rate-limit refusals by limit', async () => {
    const before = value(await scrape(), 'rate_limit_refusals_total', 'limit="v1"');
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await server.request('GET', `/v1/user.php/${randomUUID()}`)).status);
    // The limit is 2 a minute, and the test above used the v1 API already.
    const refused = statuses.filter((status) => status === 429).length;
    assert.ok(refused >= 2 && statuses.slice(-2).every((status) => status === 429), String(statuses));
    assert.equal(value(await scrape(), 'rate_limit_refusals_total', 'limit="v1"'), before + refused);
  });

  test('counts security events by kind', async () => {
    const before = value(await scrape(), 'security_events_total', 'kind="test_event"');
    countSecurityEvent('test_event');
    assert.equal(value(await scrape(), 'security_events_total', 'kind="test_event"'), before + 1);
  });
});
