import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { newUser, signedHeaders, type TestUser } from '../helpers/keys.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

async function register(user: TestUser) {
  const reply = await server.request('POST', '/v1/user.php', {
    body: { user_id: user.userId, public_key: user.publicPem },
  });
  assert.equal(reply.status, 200, reply.text);
  return reply;
}

describe('POST /v1/user.php', () => {
  test('creates a user and answers its structure with the key as SPKI PEM', async () => {
    const user = newUser();
    const reply = await register(user);
    assert.deepEqual(reply.body, { user_id: user.userId, public_key: user.publicPem });
  });

  test('accepts the id in the path when it matches, case-insensitively', async () => {
    const user = newUser();
    const reply = await server.request('POST', `/v1/user.php/${user.userId.toUpperCase()}`, {
      body: { user_id: user.userId.toUpperCase(), public_key: user.publicPem },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.user_id, user.userId);
  });

  test('rejects a path id that differs from the body', async () => {
    const user = newUser();
    const reply = await server.request('POST', `/v1/user.php/${randomUUID()}`, {
      body: { user_id: user.userId, public_key: user.publicPem },
    });
    assert.equal(reply.status, 400);
    assert.equal(reply.body.code, 'badRequest');
  });

  test('accepts hex-encoded DER keys (SPKI and PKCS#1) and stores them as SPKI PEM', async () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    for (const type of ['spki', 'pkcs1'] as const) {
      const id = randomUUID();
      const hex = publicKey.export({ type, format: 'der' }).toString('hex');
      const reply = await server.request('POST', '/v1/user.php', { body: { user_id: id, public_key: hex } });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.public_key, pem);
      const read = await server.request('GET', `/v1/user.php/${id}`);
      assert.equal(read.body.public_key, pem);
    }
  });

  test('accepts a PKCS#1 PEM key and an Ed25519 key', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    const ed = generateKeyPairSync('ed25519').publicKey;
    for (const [input, expected] of [
      [rsa.export({ type: 'pkcs1', format: 'pem' }).toString(), rsa.export({ type: 'spki', format: 'pem' }).toString()],
      [
        ed.export({ type: 'spki', format: 'der' }).toString('hex'),
        ed.export({ type: 'spki', format: 'pem' }).toString(),
      ],
    ]) {
      const reply = await server.request('POST', '/v1/user.php', {
        body: { user_id: randomUUID(), public_key: input },
      });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.public_key, expected);
    }
  });

  test('creates an array of users all at once, answering an array', async () => {
    const users = [newUser(), newUser('ed25519')];
    const reply = await server.request('POST', '/v1/user.php', {
      body: users.map((u) => ({ user_id: u.userId, public_key: u.publicPem })),
    });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(
      reply.body.map((u: { user_id: string }) => u.user_id),
      users.map((u) => u.userId),
    );
  });

  test('an array with one bad element creates nothing', async () => {
    const good = newUser();
    const reply = await server.request('POST', '/v1/user.php', {
      body: [
        { user_id: good.userId, public_key: good.publicPem },
        { user_id: randomUUID(), public_key: 'not a key' },
      ],
    });
    assert.equal(reply.status, 400);
    assert.match(reply.body.message, /item 1/);
    assert.equal((await server.request('GET', `/v1/user.php/${good.userId}`)).status, 404);
  });

  test('an array containing an existing user creates nothing', async () => {
    const existing = newUser();
    await register(existing);
    const fresh = newUser();
    const reply = await server.request('POST', '/v1/user.php', {
      body: [
        { user_id: fresh.userId, public_key: fresh.publicPem },
        { user_id: existing.userId, public_key: existing.publicPem },
      ],
    });
    assert.equal(reply.status, 400);
    assert.equal(reply.body.details.user_id, existing.userId);
    assert.equal((await server.request('GET', `/v1/user.php/${fresh.userId}`)).status, 404);
  });

  test('an existing user is 400', async () => {
    const user = newUser();
    await register(user);
    const again = await server.request('POST', '/v1/user.php', {
      body: { user_id: user.userId.toUpperCase(), public_key: user.publicPem },
    });
    assert.equal(again.status, 400);
    assert.match(again.body.message, /already exists/);
  });

  for (const [name, body, headers] of [
    ['a wrong Content-Type', '{}', { 'content-type': 'text/plain' }],
    ['no Content-Type', '{}', {}],
    ['malformed JSON', '{"user_id":', { 'content-type': 'application/json' }],
    ['an empty body', '', { 'content-type': 'application/json' }],
    ['a JSON string', '"hello"', { 'content-type': 'application/json' }],
    ['an empty array', '[]', { 'content-type': 'application/json' }],
    ['a bad UUID', JSON.stringify({ user_id: 'nope', public_key: 'x' }), { 'content-type': 'application/json' }],
    ['no public key', JSON.stringify({ user_id: randomUUID() }), { 'content-type': 'application/json' }],
    [
      'a garbage key',
      JSON.stringify({ user_id: randomUUID(), public_key: 'abcd' }),
      { 'content-type': 'application/json' },
    ],
    [
      'a prototype-polluting body',
      `{"user_id":"${randomUUID()}","__proto__":{"x":1}}`,
      { 'content-type': 'application/json' },
    ],
  ] as const) {
    test(`${name} is 400 in the error shape`, async () => {
      const reply = await server.request('POST', '/v1/user.php', { body, headers: { ...headers } });
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.body.code, 'badRequest');
      assert.equal(typeof reply.body.message, 'string');
    });
  }

  test('concurrent POSTs of the same user id create exactly one user', async () => {
    const user = newUser();
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        server.request('POST', '/v1/user.php', { body: { user_id: user.userId, public_key: user.publicPem } }),
      ),
    );
    const statuses = replies.map((r) => r.status).sort();
    assert.equal(statuses.filter((s) => s === 200).length, 1, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 400).length, 19);
  });
});

describe('GET /v1/user.php', () => {
  test('one id answers an object, several an array of those found', async () => {
    const a = newUser();
    const b = newUser('ed25519');
    await register(a);
    await register(b);
    const one = await server.request('GET', `/v1/user.php/${a.userId.toUpperCase()}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, { user_id: a.userId, public_key: a.publicPem });
    const several = await server.request('GET', `/v1/user.php/${a.userId},${randomUUID()},${b.userId}`);
    assert.equal(several.status, 200);
    assert.deepEqual(new Set(several.body.map((u: { user_id: string }) => u.user_id)), new Set([a.userId, b.userId]));
    const oneOfSeveral = await server.request('GET', `/v1/user.php/${a.userId},${randomUUID()}`);
    assert.ok(Array.isArray(oneOfSeveral.body));
    assert.equal(oneOfSeveral.body.length, 1);
  });

  test('none found is 404; no id is 405 with Allow', async () => {
    const missing = await server.request('GET', `/v1/user.php/${randomUUID()},not-a-uuid`);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'notFound');
    const none = await server.request('GET', '/v1/user.php');
    assert.equal(none.status, 405);
    assert.equal(none.body.code, 'methodNotAllowed');
    assert.match(none.headers.get('allow') ?? '', /POST/);
  });
});

describe('DELETE /v1/user.php', () => {
  test('needs a signature: 401 with WWW-Authenticate: Basic', async () => {
    const user = newUser();
    await register(user);
    const reply = await server.request('DELETE', `/v1/user.php/${user.userId}`);
    assert.equal(reply.status, 401);
    assert.match(reply.headers.get('www-authenticate') ?? '', /^Basic realm=/);
    assert.equal(reply.body.code, 'unauthorized');
  });

  test('a user deletes itself; afterwards it is gone and its signature no longer works', async () => {
    const user = newUser();
    await register(user);
    const path = `/v1/user.php/${user.userId}`;
    const reply = await server.request('DELETE', path, { headers: signedHeaders(user, 'DELETE', path) });
    assert.equal(reply.status, 200, reply.text);
    assert.equal((await server.request('GET', path)).status, 404);
    const again = await server.request('DELETE', path, { headers: signedHeaders(user, 'DELETE', path) });
    assert.equal(again.status, 403);
  });

  test('deleting another user is 403 and deletes nothing', async () => {
    const me = newUser();
    const other = newUser();
    await register(me);
    await register(other);
    const path = `/v1/user.php/${other.userId}`;
    const reply = await server.request('DELETE', path, { headers: signedHeaders(me, 'DELETE', path) });
    assert.equal(reply.status, 403);
    assert.equal((await server.request('GET', path)).status, 200);
  });
});
