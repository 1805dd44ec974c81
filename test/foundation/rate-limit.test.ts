/**
 * RATE_LIMIT_V1: requests per minute per client IP on /v1, answered 429 in the error shape;
 * its counters are separate from /v4 and /healthz; shared between instances through Redis
 * (REDIS_URL), per process without it; a Redis outage lets requests through promptly.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { newUser } from '../helpers/keys.ts';
import { signedInTokens } from '../helpers/oauth.ts';
import {
  freshDatabase,
  type Reply,
  redisReady,
  startServer,
  type TestDatabase,
  type TestServer,
} from '../helpers/server.ts';

const REDIS_URL = 'redis://127.0.0.1:6379';
const missingUser = () => `/v1/user.php/${randomUUID()}`;

function assertTooMany(reply: Reply, limit: number): void {
  assert.equal(reply.status, 429, reply.text);
  assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'message']);
  assert.equal(reply.body.code, 'tooManyRequests');
  assert.match(reply.body.message, new RegExp(`${limit} requests per minute`));
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  const retryAfter = Number(reply.headers.get('retry-after'));
  assert.ok(
    Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
    `Retry-After ${reply.headers.get('retry-after')}`,
  );
  assert.equal(reply.headers.get('x-ratelimit-limit'), String(limit));
  assert.equal(reply.headers.get('x-ratelimit-remaining'), '0');
  const reset = Number(reply.headers.get('x-ratelimit-reset'));
  assert.ok(
    Number.isInteger(reset) && reset >= 0 && reset <= 60,
    `X-RateLimit-Reset ${reply.headers.get('x-ratelimit-reset')}`,
  );
}

/** A server of its own for the tests of one describe, started with `env`. */
function serverWith(env: Record<string, string>): () => TestServer {
  let server: TestServer;
  before(async () => {
    server = await startServer({ env });
  });
  after(() => server.close());
  return () => server;
}

describe('RATE_LIMIT_V1=3 on one instance', () => {
  const LIMIT = 3;
  let database: TestDatabase;
  let server: TestServer;
  /** An unlimited instance on the same database, to look at what the limited one did. */
  let observer: TestServer;
  let bearer: Record<string, string>;
  before(async () => {
    database = await freshDatabase();
    server = await startServer({ database, env: { RATE_LIMIT_V1: String(LIMIT) } });
    observer = await startServer({ database });
    // Signed in before the v1 budget is spent: the login itself is not /v1.
    bearer = { authorization: `Bearer ${(await signedInTokens(server)).tokens.access_token}` };
  });
  after(async () => {
    await server.close();
    await observer.close();
    await database.drop();
  });

  test('the 4th /v1 request in a minute is 429 with Retry-After; every answer carries X-RateLimit-*', async () => {
    // Different endpoints and outcomes all count against the same per-IP budget.
    const paths = [missingUser(), '/v1/engram.php', missingUser()];
    for (const [index, path] of paths.entries()) {
      const reply = await server.request('GET', path);
      assert.notEqual(reply.status, 429, reply.text);
      assert.equal(reply.headers.get('x-ratelimit-limit'), String(LIMIT));
      assert.equal(reply.headers.get('x-ratelimit-remaining'), String(LIMIT - 1 - index));
      const reset = Number(reply.headers.get('x-ratelimit-reset'));
      assert.ok(Number.isInteger(reset) && reset > 0 && reset <= 60);
    }
    assertTooMany(await server.request('GET', missingUser()), LIMIT);
    assertTooMany(await server.request('GET', '/v1/engram.php'), LIMIT);
  });

  test('a refused request is not carried out', async () => {
    const user = newUser('ed25519');
    const reply = await server.request('POST', '/v1/user.php', {
      body: { user_id: user.userId, public_key: user.publicPem },
    });
    assertTooMany(reply, LIMIT);
    assert.equal((await observer.request('GET', `/v1/user.php/${user.userId}`)).status, 404);
  });

  test('X-Forwarded-For does not buy a new budget when no proxy is trusted', async () => {
    for (const address of ['198.51.100.7', '198.51.100.8']) {
      assertTooMany(await server.request('GET', missingUser(), { headers: { 'x-forwarded-for': address } }), LIMIT);
    }
  });

  test('the /v1 limit does not touch /healthz or /v4', async () => {
    const health = await server.request('GET', '/healthz');
    assert.equal(health.status, 200);
    assert.equal(health.headers.get('x-ratelimit-limit'), null);
    const v4 = await server.request('GET', '/v4/user', { headers: bearer });
    assert.equal(v4.status, 200, v4.text);
    assert.equal(v4.headers.get('x-ratelimit-limit'), null, 'RATE_LIMIT_V4=0: no v4 limit at all');
    const docs = await server.request('GET', '/v4/openapi.json');
    assert.equal(docs.status, 200);
  });

  test('a 429 is logged as one request line with status 429', async () => {
    const before = server.logs.length;
    const reply = await server.request('GET', missingUser());
    assert.equal(reply.status, 429);
    const lines = server.logs
      .slice(before)
      .map((line) => JSON.parse(line))
      .filter((line) => line.reqId === reply.headers.get('x-request-id'));
    assert.deepEqual(
      lines.map((line) => [line.msg, line.status]),
      [['request', 429]],
    );
  });
});

describe('RATE_LIMIT_V4 does not touch /v1', () => {
  const started = serverWith({ RATE_LIMIT_V1: '0', RATE_LIMIT_V4: '2' });

  test('with the v4 budget of an IP spent, /v1 answers without rate-limit headers', async () => {
    const server = started();
    await server.request('GET', '/v4/projects');
    await server.request('GET', '/v4/projects');
    assertTooMany(await server.request('GET', '/v4/projects'), 2);
    for (let i = 0; i < 5; i++) {
      const reply = await server.request('GET', missingUser());
      assert.equal(reply.status, 404);
      assert.equal(reply.headers.get('x-ratelimit-limit'), null);
    }
  });
});

describe('behind a trusted proxy (TRUST_PROXY=true)', () => {
  const started = serverWith({ RATE_LIMIT_V1: '2', TRUST_PROXY: 'true' });

  test('each client IP from X-Forwarded-For has its own budget', async () => {
    const server = started();
    const from = (address: string) => server.request('GET', missingUser(), { headers: { 'x-forwarded-for': address } });
    assert.equal((await from('203.0.113.1')).status, 404);
    assert.equal((await from('203.0.113.1')).status, 404);
    assertTooMany(await from('203.0.113.1'), 2);
    const other = await from('203.0.113.2');
    assert.equal(other.status, 404);
    assert.equal(other.headers.get('x-ratelimit-remaining'), '1');
  });
});

describe('refused input counts against the budget', () => {
  const started = serverWith({ RATE_LIMIT_V1: '3', RATE_LIMIT_V4: '2' });

  test('a NUL or a repeated parameter is a 400 until the budget is spent, then 429', async () => {
    const server = started();
    const nul = await server.request('GET', '/v1/engram.php/A%00B');
    assert.equal(nul.status, 400, nul.text);
    assert.equal(nul.headers.get('x-ratelimit-remaining'), '2');
    assert.equal((await server.request('GET', '/v1/engram.php?mod_id=1&mod_id=2')).status, 400);
    assert.equal((await server.request('POST', '/v1/user.php?a=1&a=2', { body: {} })).status, 400);
    assertTooMany(await server.request('GET', '/v1/engram.php/A%00B'), 3);

    assert.equal((await server.request('GET', '/v4/projects?title=%00')).status, 400);
    assert.equal((await server.request('GET', '/v4/users/%00')).status, 400);
    assertTooMany(await server.request('GET', '/v4/users/%00'), 2);
  });
});

describe('two instances', () => {
  let database: TestDatabase;
  const started: TestServer[] = [];
  const start = async (options: Parameters<typeof startServer>[0]) => {
    const server = await startServer({ database, ...options });
    started.push(server);
    return server;
  };
  before(async () => {
    database = await freshDatabase();
  });
  after(async () => {
    for (const server of started) await server.close();
    await database.drop();
  });

  test('with the same REDIS_URL and namespace they count together: 2 + 2 pass, the 5th on either is 429', async () => {
    const namespace = `test:${randomBytes(6).toString('hex')}:`;
    const env = { RATE_LIMIT_V1: '4', REDIS_URL };
    const a = await start({ env, rateLimitNamespace: namespace });
    const b = await start({ env, rateLimitNamespace: namespace });
    await Promise.all([redisReady(a), redisReady(b)]);
    const remaining: string[] = [];
    for (const server of [a, b, a, b]) {
      const reply = await server.request('GET', missingUser());
      assert.equal(reply.status, 404, reply.text);
      remaining.push(reply.headers.get('x-ratelimit-remaining')!);
    }
    assert.deepEqual(remaining, ['3', '2', '1', '0']);
    assertTooMany(await a.request('GET', missingUser()), 4);
    assertTooMany(await b.request('GET', missingUser()), 4);

    // Another namespace (another deployment sharing the Redis) has its own counters.
    const c = await start({ env, rateLimitNamespace: `test:${randomBytes(6).toString('hex')}:` });
    await redisReady(c);
    const fresh = await c.request('GET', missingUser());
    assert.equal(fresh.status, 404);
    assert.equal(fresh.headers.get('x-ratelimit-remaining'), '3');
  });

  test('without REDIS_URL each instance counts on its own', async () => {
    const env = { RATE_LIMIT_V1: '2' };
    const namespace = `test:${randomBytes(6).toString('hex')}:`;
    const a = await start({ env, rateLimitNamespace: namespace });
    const b = await start({ env, rateLimitNamespace: namespace });
    assert.equal(a.app.redis, undefined);
    for (const server of [a, b, a, b]) assert.equal((await server.request('GET', missingUser())).status, 404);
    assertTooMany(await a.request('GET', missingUser()), 2);
    assertTooMany(await b.request('GET', missingUser()), 2);
  });

  test('when Redis does not answer, requests are let through promptly', async () => {
    const server = await start({ env: { RATE_LIMIT_V1: '2', REDIS_URL: 'redis://127.0.0.1:1' } });
    for (let i = 0; i < 6; i++) {
      const startedAt = Date.now();
      const reply = await server.request('GET', missingUser());
      assert.equal(reply.status, 404, reply.text);
      assert.ok(Date.now() - startedAt < 1_500, `request ${i + 1} took ${Date.now() - startedAt} ms`);
    }
    // The outage is logged once, not once per reconnect attempt or request.
    const warnings = server.logs.filter((line) => line.includes('Redis is unreachable'));
    assert.equal(warnings.length, 1, server.logs.join('\n'));
    assert.equal(JSON.parse(warnings[0]!).level, 40);
  });
});
