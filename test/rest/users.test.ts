/**
 * v4 User class: reading users (users:read), changing one's own username and public key
 * (users:update), and the private key shown only to its owner with users.private_key:read.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID, sign, verify } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startServer, type TestServer } from '../helpers/server.ts';
import { assertError, ISO_UTC, type SignedIn, signIn } from './fixtures/clients.ts';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

const USER_KEYS = ['createdAt', 'publicKey', 'userId', 'username'];
const READ = 'common users:read';
const UPDATE = 'common users:read users:update';
const PRIVATE = 'common users:read users.private_key:read';

async function me(client: SignedIn) {
  const reply = await client.call('GET', '/v4/user');
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

function rsaPublicKey() {
  return generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
}

function assertInsufficientScope(reply: { status: number; headers: Headers; body: any; text: string }, scope: string) {
  assertError(reply, 403, 'forbidden', new RegExp(scope.replace('.', '\\.')));
  assert.match(reply.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
  assert.deepEqual(reply.body.details, { missingScopes: [scope] });
}

describe('reading users', () => {
  let reader: SignedIn;
  let other: SignedIn;
  let noRead: SignedIn;
  before(async () => {
    [reader, other, noRead] = await Promise.all([signIn(server, READ), signIn(server, READ), signIn(server, 'common')]);
  });

  test('GET /v4/user is the caller: userId, username, publicKey, createdAt', async () => {
    const reply = await reader.call('GET', '/v4/user');
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), USER_KEYS);
    assert.equal(reply.body.userId, reader.account.userId);
    assert.equal(reply.body.username, reader.account.username);
    assert.match(
      reply.body.publicKey,
      /^-----BEGIN PUBLIC KEY-----\n/,
      'every account has a key pair (test/accounts/key-pair.test.ts)',
    );
    assert.match(reply.body.createdAt, ISO_UTC);
    assert.ok(Date.parse(reply.body.createdAt) <= Date.now());
  });

  test('without users:read, reading users is 403 insufficient_scope', async () => {
    assertInsufficientScope(await noRead.call('GET', '/v4/user'), 'users:read');
    assertInsufficientScope(await noRead.call('GET', `/v4/users/${noRead.account.userId}`), 'users:read');
    assertInsufficientScope(await noRead.call('GET', '/v4/users'), 'users:read');
  });

  test('GET /v4/users/<id> answers any user, the same as that user sees as /v4/user', async () => {
    const reply = await reader.call('GET', `/v4/users/${other.account.userId}`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, await me(other));
    const upper = await reader.call('GET', `/v4/users/${other.account.userId.toUpperCase()}`);
    assert.deepEqual(upper.body, reply.body);
  });

  test('GET /v4/users/<id> of an unknown id or a non-UUID is 404', async () => {
    assertError(await reader.call('GET', `/v4/users/${randomUUID()}`), 404, 'notFound');
    assertError(await reader.call('GET', '/v4/users/nobody'), 404, 'notFound');
  });

  test('the list filters usernames by substring, ignoring case', async () => {
    const reply = await reader.call('GET', `/v4/users?username=${other.account.username.toUpperCase()}`);
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.totalResults, 1);
    assert.deepEqual(reply.body.results, [await me(other)]);
    const all = await reader.call('GET', '/v4/users?sortedColumn=username&pageSize=250');
    assert.equal(all.status, 200, all.text);
    assert.ok(all.body.results.some((u: any) => u.userId === reader.account.userId));
  });

  test('without a token: 401', async () => {
    for (const path of ['/v4/user', '/v4/users', `/v4/users/${reader.account.userId}`]) {
      const reply = await server.request('GET', path);
      assertError(reply, 401, 'unauthorized');
      assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer realm="v4"/);
    }
  });
});

describe('changing users', () => {
  let editor: SignedIn;
  let readOnly: SignedIn;
  let other: SignedIn;
  before(async () => {
    editor = await signIn(server, UPDATE);
    readOnly = await signIn(server, READ, editor.account);
    other = await signIn(server, UPDATE);
  });

  test('PATCH /v4/user changes the own username with users:update', async () => {
    const name = `renamed${Date.now().toString(36)}`;
    const reply = await editor.call('PATCH', '/v4/user', { body: { username: name } });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.username, name);
    assert.equal(reply.body.userId, editor.account.userId);
    assert.deepEqual(await me(editor), reply.body);
    assert.equal((await me(readOnly)).username, name);
  });

  test('the own username may change only in case', async () => {
    const current = (await me(editor)).username as string;
    const reply = await editor.call('PATCH', `/v4/users/${editor.account.userId}`, {
      body: { username: current.toUpperCase() },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.username, current.toUpperCase());
  });

  test('publicKey is stored as SPKI PEM, given as PEM or hex-encoded DER', async () => {
    const key = rsaPublicKey();
    const pem = key.export({ type: 'spki', format: 'pem' }).toString();
    const viaPem = await editor.call('PATCH', `/v4/users/${editor.account.userId}`, {
      body: { publicKey: key.export({ type: 'pkcs1', format: 'pem' }).toString() },
    });
    assert.equal(viaPem.status, 200, viaPem.text);
    assert.equal(viaPem.body.publicKey, pem);
    const second = rsaPublicKey();
    const viaHex = await editor.call('PATCH', '/v4/user', {
      body: { publicKey: second.export({ type: 'spki', format: 'der' }).toString('hex') },
    });
    assert.equal(viaHex.status, 200, viaHex.text);
    assert.equal(viaHex.body.publicKey, second.export({ type: 'spki', format: 'pem' }).toString());
    assert.equal((await me(editor)).publicKey, viaHex.body.publicKey);
  });

  test('an invalid public key, a bad username or an unknown property is 400 and changes nothing', async () => {
    const before = await me(editor);
    assertError(
      await editor.call('PATCH', '/v4/user', { body: { publicKey: 'not a key' } }),
      400,
      'badRequest',
      /publicKey/,
    );
    assertError(await editor.call('PATCH', '/v4/user', { body: { publicKey: '' } }), 400, 'badRequest');
    assertError(await editor.call('PATCH', '/v4/user', { body: { username: 'ab' } }), 400, 'badRequest', /username/);
    assertError(
      await editor.call('PATCH', '/v4/user', { body: { username: 'has space' } }),
      400,
      'badRequest',
      /username/,
    );
    assertError(await editor.call('PATCH', '/v4/user', { body: { username: null } }), 400, 'badRequest', /username/);
    assertError(
      await editor.call('PATCH', '/v4/user', { body: { email: 'x@example.com' } }),
      400,
      'badRequest',
      /email/,
    );
    assert.deepEqual(await me(editor), before);
  });

  test('PUT /v4/user replaces: an omitted publicKey goes back to null; username is required', async () => {
    const key = rsaPublicKey().export({ type: 'spki', format: 'pem' }).toString();
    assert.equal((await editor.call('PATCH', '/v4/user', { body: { publicKey: key } })).status, 200);
    const before = await me(editor);
    assertError(await editor.call('PUT', '/v4/user', { body: { publicKey: key } }), 400, 'badRequest', /username/);
    assert.deepEqual(await me(editor), before);
    const reply = await editor.call('PUT', '/v4/user', { body: { username: before.username } });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, { ...before, publicKey: null });
  });

  test('publicKey null clears the key', async () => {
    const key = rsaPublicKey().export({ type: 'spki', format: 'pem' }).toString();
    assert.equal((await editor.call('PATCH', '/v4/user', { body: { publicKey: key } })).body.publicKey, key);
    const reply = await editor.call('PATCH', '/v4/user', { body: { publicKey: null } });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.publicKey, null);
    assert.equal((await me(editor)).publicKey, null);
  });

  test('PUT back what GET answered (read-only properties included) is accepted, with or without a key', async () => {
    const withoutKey = await me(editor);
    assert.equal(withoutKey.publicKey, null);
    const first = await editor.call('PUT', '/v4/user', { body: withoutKey });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, withoutKey);
    const key = rsaPublicKey().export({ type: 'spki', format: 'pem' }).toString();
    assert.equal((await editor.call('PATCH', '/v4/user', { body: { publicKey: key } })).status, 200);
    const current = await me(editor);
    const reply = await editor.call('PUT', `/v4/users/${editor.account.userId}`, { body: current });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, current);
  });

  test('POST /v4/users with the own userId updates it; users cannot be created or deleted', async () => {
    const name = `posted${Date.now().toString(36)}`;
    const posted = await editor.call('POST', '/v4/users', { body: { userId: editor.account.userId, username: name } });
    assert.equal(posted.status, 200, posted.text);
    assert.deepEqual(posted.body.created, []);
    assert.equal(posted.body.updated.length, 1);
    assert.equal(posted.body.updated[0].username, name);
    assertError(await editor.call('POST', '/v4/users', { body: { username: 'newperson' } }), 405, 'methodNotAllowed');
    const newId = randomUUID();
    assertError(
      await editor.call('POST', '/v4/users', { body: { userId: newId, username: 'newperson2' } }),
      404,
      'notFound',
    );
    assertError(await editor.call('PUT', `/v4/users/${newId}`, { body: { username: 'newperson3' } }), 404, 'notFound');
    assertError(await editor.call('GET', `/v4/users/${newId}`), 404, 'notFound');
    assertError(await editor.call('DELETE', `/v4/users/${editor.account.userId}`), 405, 'methodNotAllowed');
    assertError(await editor.call('DELETE', '/v4/user'), 405, 'methodNotAllowed');
    assertError(
      await editor.call('DELETE', '/v4/users', { body: [{ userId: editor.account.userId }] }),
      405,
      'methodNotAllowed',
    );
    assert.equal((await me(editor)).username, name);
  });

  test('without users:update, changing the own user is 403 and changes nothing', async () => {
    const before = await me(readOnly);
    assertInsufficientScope(
      await readOnly.call('PATCH', '/v4/user', { body: { username: 'nochange1' } }),
      'users:update',
    );
    assertInsufficientScope(
      await readOnly.call('PUT', '/v4/user', { body: { username: 'nochange2' } }),
      'users:update',
    );
    assertInsufficientScope(
      await readOnly.call('PATCH', `/v4/users/${readOnly.account.userId}`, { body: { username: 'nochange3' } }),
      'users:update',
    );
    assertInsufficientScope(
      await readOnly.call('POST', '/v4/users', { body: { userId: readOnly.account.userId, username: 'nochange4' } }),
      'users:update',
    );
    assert.deepEqual(await me(readOnly), before);
  });

  test("another user's username or publicKey cannot be changed: 403, unchanged", async () => {
    const before = await me(other);
    const path = `/v4/users/${other.account.userId}`;
    const key = rsaPublicKey().export({ type: 'spki', format: 'pem' }).toString();
    assertError(await editor.call('PATCH', path, { body: { username: 'hijacked1' } }), 403, 'forbidden');
    assertError(await editor.call('PATCH', path, { body: { publicKey: key } }), 403, 'forbidden');
    assertError(await editor.call('PUT', path, { body: { username: 'hijacked2' } }), 403, 'forbidden');
    assertError(
      await editor.call('POST', '/v4/users', { body: { userId: other.account.userId, username: 'hijacked3' } }),
      403,
      'forbidden',
    );
    assert.deepEqual(await me(other), before);
  });

  test('a username taken by another user, in any case, is 409 and changes nothing', async () => {
    const before = await me(editor);
    const taken = (await me(other)).username as string;
    for (const name of [taken, taken.toUpperCase()]) {
      assertError(await editor.call('PATCH', '/v4/user', { body: { username: name } }), 409, 'conflict');
    }
    assertError(await editor.call('PUT', '/v4/user', { body: { username: taken } }), 409, 'conflict');
    assert.deepEqual(await me(editor), before);
  });
});

describe('privateKey', () => {
  let owner: SignedIn;
  let ownerNoKeyScope: SignedIn;
  let other: SignedIn;
  /** The owner's private key as the service keeps it (sealed), read back through the class. */
  let ownersKey: string;
  before(async () => {
    owner = await signIn(server, PRIVATE);
    ownerNoKeyScope = await signIn(server, READ, owner.account);
    other = await signIn(server, PRIVATE);
    ownersKey = (await me(owner)).privateKey;
    // Another user without a stored private key (e.g. a v1 user who brought their own key).
    await server.app.database.db
      .updateTable('users')
      .set({ private_key: null })
      .where('user_id', '=', other.account.userId)
      .execute();
  });

  test('is shown on the own user with users.private_key:read: the private half of publicKey', async () => {
    const mine = await me(owner);
    assert.deepEqual(Object.keys(mine).sort(), [...USER_KEYS, 'privateKey'].sort());
    assert.match(ownersKey, /^-----BEGIN PRIVATE KEY-----\n/);
    const signature = sign('sha256', Buffer.from('x'), ownersKey);
    assert.ok(verify('sha256', Buffer.from('x'), mine.publicKey, signature));
    const byId = await owner.call('GET', `/v4/users/${owner.account.userId}`);
    assert.equal(byId.body.privateKey, ownersKey);
    const listed = await owner.call('GET', `/v4/users?username=${owner.account.username}`);
    assert.equal(listed.body.results[0].privateKey, ownersKey);
  });

  test('is absent without users.private_key:read', async () => {
    const mine = await me(ownerNoKeyScope);
    assert.deepEqual(Object.keys(mine).sort(), USER_KEYS);
    assert.ok(!(await ownerNoKeyScope.call('GET', `/v4/users/${owner.account.userId}`)).text.includes('PRIVATE KEY'));
  });

  test('is not even read for a caller without users.private_key:read: the statements the server runs leave its column out', async () => {
    // The reads of the running server, as sent to the database (one user and a page of users).
    const { database } = server.app;
    const selectArrays = database.selectArrays;
    const sent: string[] = [];
    database.selectArrays = (sql, parameters, prepared) => {
      sent.push(sql);
      return selectArrays.call(database, sql, parameters, prepared);
    };
    const readsOf = async (client: SignedIn) => {
      sent.length = 0;
      await me(client);
      await client.call('GET', `/v4/users?username=${owner.account.username}`);
      return [...sent];
    };
    try {
      const columnRead = /(?<!as )"private_key"/;
      const withScope = await readsOf(owner);
      assert.equal(withScope.length, 2, withScope.join('\n'));
      for (const sql of withScope) assert.match(sql, columnRead, sql);
      const withoutScope = await readsOf(ownerNoKeyScope);
      assert.equal(withoutScope.length, 2, withoutScope.join('\n'));
      for (const sql of withoutScope) {
        assert.doesNotMatch(sql, columnRead, sql);
        assert.match(sql, /null as "private_key"/i, sql);
      }
    } finally {
      database.selectArrays = selectArrays;
    }
  });

  test("is never shown on another user's instance, even with the scope", async () => {
    const reply = await other.call('GET', `/v4/users/${owner.account.userId}`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), USER_KEYS);
    const list = await other.call('GET', '/v4/users?pageSize=250');
    assert.ok(!list.text.includes('PRIVATE KEY'));
    assert.ok(list.body.results.some((u: any) => u.userId === owner.account.userId));
  });

  test('a user without a stored private key sees privateKey null', async () => {
    assert.equal((await me(other)).privateKey, null);
  });

  test('is read-only: a privateKey in a write is ignored', async () => {
    const editor = await signIn(server, `${PRIVATE} users:update`, owner.account);
    const reply = await editor.call('PATCH', '/v4/user', { body: { privateKey: 'replaced' } });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.privateKey, ownersKey);
    assert.equal((await me(owner)).privateKey, ownersKey);
  });
});
