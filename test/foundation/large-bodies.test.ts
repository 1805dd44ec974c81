/**
 * Bodies over the 1 MiB limit, streamed through real TCP sockets to every route that takes a body
 * (issue 42, "the lost 413"): the client must read the 413 in its face's error shape even when it
 * writes its whole body before reading anything, as blocking clients do, and the server must go
 * on answering. Before the lingering close (src/http/unread-body.ts) the server closed over the
 * unread body, the kernel reset the connection, and the client saw EPIPE instead of the answer.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createSession } from '../../src/oauth/sessions.ts';
import { listRoutes } from '../fuzz/harness.ts';
import { signedHeaders, type TestUser } from '../helpers/keys.ts';
import { newAccount, newApp } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type StreamedReply, streamBody } from '../helpers/streamed-body.ts';
import { registerUser, signed } from '../helpers/v1.ts';

const MiB = 1024 * 1024;
const SIZES = [2 * MiB, 20 * MiB];

let server: TestServer;
let token: string;
let v1User: TestUser;

before(async () => {
  server = await startServer();
  const account = await newAccount(server);
  const app = await newApp(server, { scopes: ['common', 'users:read', 'users:update'] });
  ({ accessToken: token } = await createSession(server.app.database.db, {
    userId: account.userId,
    clientId: app.clientId,
    scope: 'common users:read users:update',
  }));
  v1User = await registerUser(server);
});
after(() => server.close());

type Shape = 'api' | 'oauth' | 'page';

/** The OAuth endpoints answer RFC 6749 bodies (docs/api.md, Conventions). */
const OAUTH_PATHS = new Set(['/v4/login', '/v4/device', '/v4/revoke', '/v4/introspect', '/v4/userinfo']);
/** RP-initiated logout is a browser page: its errors are pages. */
const PAGE_PATHS = new Set(['/v4/logout']);
/** The passkey endpoints of the pages answer JSON in the API's shape, which the page script shows. */
const JSON_PAGE_PATHS = new Set([
  '/passkeys/sign-in-options',
  '/login/:interaction/passkey',
  '/account/sign-in/passkey',
  '/account/reauth/passkey',
  '/account/passkeys/options',
  '/account/passkeys',
]);

function shapeOf(path: string): Shape {
  if (OAUTH_PATHS.has(path)) return 'oauth';
  if (PAGE_PATHS.has(path)) return 'page';
  if (path.startsWith('/v1/') || path.startsWith('/v4/') || JSON_PAGE_PATHS.has(path)) return 'api';
  return 'page';
}

interface BodyRoute {
  method: string;
  /** The route's pattern, e.g. /v4/projects/:id. */
  pattern: string;
  /** The pattern with its parameters filled in. */
  path: string;
  shape: Shape;
  /** 413, or the 404 page of the operator console, whose gate refuses a stranger before the body. */
  status: 413 | 404;
  headers: () => Record<string, string>;
}

/** Every route of the server that takes a body (POST, PUT, PATCH, DELETE), with the headers that get a request past its checks before the body. */
function bodyRoutes(): BodyRoute[] {
  const routes: BodyRoute[] = [];
  for (const route of listRoutes(server.app)) {
    for (const method of route.methods) {
      if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) continue;
      const pattern = route.path;
      const path = pattern.replace(/:(\w+)/g, () => randomUUID()).replace(/\/?\*$/, '/anything');
      const shape = shapeOf(pattern);
      const contentType =
        shape === 'api'
          ? method === 'DELETE' && pattern.startsWith('/v1/')
            ? 'text/plain'
            : 'application/json'
          : 'application/x-www-form-urlencoded';
      const headers = () => {
        const credentials: Record<string, string> = pattern.startsWith('/v1/')
          ? signedHeaders(v1User, method, path, 'a body the server never reads')
          : pattern.startsWith('/v4/') && shape === 'api'
            ? { authorization: `Bearer ${token}` }
            : {};
        return { ...credentials, 'content-type': contentType };
      };
      routes.push({ method, pattern, path, shape, status: pattern.startsWith('/admin') ? 404 : 413, headers });
    }
  }
  return routes;
}

function assertRefused(reply: StreamedReply, route: BodyRoute, label: string) {
  assert.equal(reply.status, route.status, `${label}: ${reply.text.slice(0, 300)}`);
  assert.equal(reply.headers.connection, 'close', label);
  assert.ok(reply.headers['x-request-id'], label);
  if (route.shape === 'page') {
    assert.match(reply.headers['content-type'] ?? '', /^text\/html/, label);
    assert.match(reply.text, route.status === 404 ? /Page not found/ : /1 MiB|larger/, label);
    return;
  }
  assert.match(reply.headers['content-type'] ?? '', /^application\/json/, label);
  if (route.shape === 'oauth') {
    assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'error_description'], label);
    assert.equal(reply.body.error, 'invalid_request', label);
  } else {
    assert.deepEqual(
      Object.keys(reply.body).filter((key) => !['code', 'message', 'details'].includes(key)),
      [],
      label,
    );
    assert.equal(reply.body.code, 'payloadTooLarge', label);
    assert.equal(typeof reply.body.message, 'string', label);
  }
}

async function assertServerAnswers() {
  const health = await server.request('GET', '/healthz');
  assert.equal(health.status, 200, health.text);
  const user = await signed(server, v1User, 'GET', '/v1/user.php');
  assert.notEqual(user.status, 500, user.text);
  assert.ok(user.status < 500, user.text);
}

describe('the signed POST /v1/document.php of issue 42', () => {
  for (const size of SIZES) {
    for (const readAfterWriting of [true, false]) {
      test(`${size / MiB} MiB, a client that reads ${readAfterWriting ? 'after writing' : 'while writing'}: 413, then the server answers on`, async () => {
        const route = bodyRoutes().find((each) => each.method === 'POST' && each.pattern === '/v1/document.php')!;
        for (let attempt = 0; attempt < 3; attempt++) {
          const reply = await streamBody(server.url, 'POST', route.path, route.headers(), size, readAfterWriting);
          assertRefused(reply, route, `attempt ${attempt}`);
        }
        await assertServerAnswers();
      });
    }
  }
});

describe('every route that takes a body', () => {
  test('is found (v1, v4 REST, OAuth endpoints, pages)', () => {
    const found = new Set(bodyRoutes().map((route) => `${route.method} ${route.pattern}`));
    for (const expected of [
      'POST /v1/user.php',
      'POST /v1/document.php',
      'DELETE /v1/document.php',
      'POST /v1/mod.php',
      'POST /v1/engram.php',
      'POST /v4/projects',
      'PUT /v4/projects/:id',
      'PATCH /v4/users/:id',
      'POST /v4/login',
      'POST /v4/device',
      'POST /v4/revoke',
      'POST /v4/introspect',
      'POST /login/:interaction/password',
      'POST /device',
      'POST /account/sign-in',
      'POST /account/passkeys/options',
      'POST /v4/logout',
      'POST /v4/userinfo',
    ])
      assert.ok(found.has(expected), `${expected} is not among ${[...found].join(', ')}`);
    assert.ok(
      [...found].some((route) => route.startsWith('POST /admin')),
      'the operator console',
    );
  });

  for (const size of SIZES) {
    test(`answers a ${size / MiB} MiB body with 413 in its shape, read by a client that reads only after writing`, async () => {
      const routes = bodyRoutes();
      const failures: string[] = [];
      // A few at a time: each connection discards its body on the server.
      const queue = [...routes];
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let route = queue.shift(); route; route = queue.shift()) {
            const label = `${route.method} ${route.pattern}`;
            try {
              const reply = await streamBody(server.url, route.method, route.path, route.headers(), size, true);
              assertRefused(reply, route, label);
            } catch (error) {
              failures.push(`${label}: ${(error as Error).message.split('\n', 1)[0]}`);
            }
          }
        }),
      );
      assert.deepEqual(failures, []);
      await assertServerAnswers();
    });
  }
});
