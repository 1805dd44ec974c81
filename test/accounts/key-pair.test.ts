/**
 * Every account's key pair (DESIGN "Self-service accounts", Key pair): the public key is the v1
 * public_key at once, the private key is the owner's v4 privateKey (PKCS#8 PEM) and signs v1
 * requests; the database holds it only sealed under SECRETS_KEY.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, randomUUID, sign, verify } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { hashPassword } from '../../src/accounts/passwords.ts';
import { dialectOf } from '../../src/db/dialect.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';
import { signed } from '../helpers/v1.ts';
import { type SignedIn, signIn } from '../rest/fixtures/clients.ts';

const PRIVATE = 'common users:read users:update users.private_key:read';

let database: TestDatabase;
let server: TestServer;
let owner: SignedIn;
before(async () => {
  database = await freshDatabase();
  server = await startServer({ database });
  owner = await signIn(server, PRIVATE);
});
after(async () => {
  await server.close();
  await database.drop();
});

async function me(client: SignedIn) {
  const reply = await client.call('GET', '/v4/user');
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

test('a new account has an RSA 2048 public key that GET /v1/user.php/<id> answers at once', async () => {
  const reply = await server.request('GET', `/v1/user.php/${owner.account.userId}`);
  assert.equal(reply.status, 200, reply.text);
  assert.match(reply.body.public_key, /^-----BEGIN PUBLIC KEY-----\n/);
  const key = createPublicKey(reply.body.public_key);
  assert.equal(key.asymmetricKeyType, 'rsa');
  assert.equal(key.asymmetricKeyDetails?.modulusLength, 2048);
  assert.equal((await me(owner)).publicKey, reply.body.public_key);
});

test('the owner reads privateKey (PKCS#8 PEM) with users.private_key:read; it signs what the public key verifies', async () => {
  const mine = await me(owner);
  assert.match(mine.privateKey, /^-----BEGIN PRIVATE KEY-----\n[\s\S]+\n-----END PRIVATE KEY-----\n$/);
  const privateKey = createPrivateKey(mine.privateKey);
  assert.equal(privateKey.asymmetricKeyType, 'rsa');
  const message = Buffer.from(`signed by ${owner.account.username}`);
  const signature = sign('sha256', message, privateKey);
  assert.ok(verify('sha256', message, createPublicKey(mine.publicKey), signature));
  assert.ok(!verify('sha256', Buffer.from('something else'), createPublicKey(mine.publicKey), signature));
});

test('the key pair signs v1 requests at once: a signed request is accepted, the same with another key is 403', async () => {
  const mine = await me(owner);
  const user = {
    userId: owner.account.userId,
    privateKey: createPrivateKey(mine.privateKey),
    publicPem: mine.publicKey,
    algorithm: 'rsa-sha256' as const,
  };
  const accepted = await signed(server, user, 'DELETE', `/v1/document.php/${randomUUID()}`);
  assert.ok(![401, 403].includes(accepted.status), `signature accepted (${accepted.status} ${accepted.text})`);
  const other = await signIn(server, PRIVATE);
  const otherKey = createPrivateKey((await me(other)).privateKey);
  const refused = await signed(server, { ...user, privateKey: otherKey }, 'DELETE', `/v1/document.php/${randomUUID()}`);
  assert.equal(refused.status, 403);
});

test('every account gets its own key pair', async () => {
  const other = await signIn(server, PRIVATE);
  const [a, b] = [await me(owner), await me(other)];
  assert.notEqual(a.publicKey, b.publicKey);
  assert.notEqual(a.privateKey, b.privateKey);
});

test('a database dump holds no readable private key', async () => {
  const mine = await me(owner);
  const body = mine.privateKey.split('\n').slice(1, -2).join('');
  const probes = ['PRIVATE KEY', body.slice(0, 48), body.slice(-48)];
  const row = await server.app.database.db
    .selectFrom('users')
    .select('private_key')
    .where('user_id', '=', owner.account.userId)
    .executeTakeFirstOrThrow();
  assert.match(
    row.private_key!,
    /^v1\.[A-Za-z0-9_-]{11}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/,
    'stored sealed (version, key id, IV, ciphertext, tag)',
  );
  if (dialectOf(server.app.database.db) === 'sqlite') {
    // The database file and its write-ahead log, as a copy of the folder would hold them.
    const path = database.url.slice('sqlite:'.length);
    const files = readdirSync(dirname(path))
      .filter((name) => name.startsWith('test.db'))
      .map((name) => readFileSync(join(dirname(path), name)).toString('latin1'));
    assert.ok(files.length >= 1);
    for (const probe of probes) assert.ok(!files.some((content) => content.includes(probe)), `no file holds ${probe}`);
  } else {
    const { rows } = await sql<{ dump: string }>`select string_agg(u::text, E'\n') as dump from users u`.execute(
      server.app.database.db,
    );
    for (const probe of probes) assert.ok(!rows[0]!.dump.includes(probe), `no row holds ${probe}`);
  }
});

test('a tampered or foreign sealed value reads null, never an error', async () => {
  const victim = await signIn(server, PRIVATE);
  const db = server.app.database.db;
  const { private_key: ownersSealed } = await db
    .selectFrom('users')
    .select('private_key')
    .where('user_id', '=', owner.account.userId)
    .executeTakeFirstOrThrow();
  const stored = await db
    .selectFrom('users')
    .select('private_key')
    .where('user_id', '=', victim.account.userId)
    .executeTakeFirstOrThrow();
  const parts = stored.private_key!.split('.');
  const flipped = Buffer.from(parts[3]!, 'base64url');
  flipped[0]! ^= 1;
  for (const bad of [
    [...parts.slice(0, 3), flipped.toString('base64url'), parts[4]].join('.'),
    ownersSealed!,
    'not sealed at all',
    `v1.${'A'.repeat(11)}.x.y.z`,
  ]) {
    await db.updateTable('users').set({ private_key: bad }).where('user_id', '=', victim.account.userId).execute();
    const reply = await victim.call('GET', '/v4/user');
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.privateKey, null, bad.slice(0, 30));
  }
  await db
    .updateTable('users')
    .set({ private_key: stored.private_key })
    .where('user_id', '=', victim.account.userId)
    .execute();
  assert.match((await me(victim)).privateKey, /BEGIN PRIVATE KEY/);
});

test('replacing publicKey (users:update) leaves the stored private key unreadable: privateKey null; the key back, it reads again', async () => {
  const editor = await signIn(server, PRIVATE);
  const original = await me(editor);
  const replacement = (await me(await signIn(server, PRIVATE))).publicKey;
  const patched = await editor.call('PATCH', '/v4/user', { body: { publicKey: replacement } });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.publicKey, replacement);
  assert.equal(patched.body.privateKey, null);
  assert.equal((await me(editor)).privateKey, null);
  const back = await editor.call('PATCH', '/v4/user', { body: { publicKey: original.publicKey } });
  assert.equal(back.body.privateKey, original.privateKey);
  const ignored = await editor.call('PATCH', '/v4/user', { body: { privateKey: 'mine' } });
  assert.equal(ignored.body.privateKey, original.privateKey, 'privateKey is read-only: ignored in a write');
});

test('started with another secrets key: the log says the stored private keys cannot be read', async () => {
  const other = await startServer({ database, env: { SECRETS_KEY: Buffer.alloc(32, 9).toString('base64') } });
  try {
    const deadline = Date.now() + 10_000;
    while (!other.logs.some((line) => line.includes('sealed under another secrets key')) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const line = other.logs.find((entry) => entry.includes('sealed under another secrets key'));
    assert.ok(line, 'an error at start');
    assert.equal(JSON.parse(line).level, 50);
    // (Whether it serves them is not seen here: this test process holds the first server's key too.)
  } finally {
    await other.close();
  }
});

describe('accounts made before key pairs', () => {
  test('get one when the server next starts, sealed under its key; users who set their own key keep it', async () => {
    const db = server.app.database.db;
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const passwordHash = await hashPassword('kettle violet sunrise');
    await db
      .insertInto('users')
      .values(
        ids.map((id, i) => ({
          user_id: id,
          username: `old-account-${i}-${id.slice(0, 6)}`,
          email: `old-${id}@example.com`,
          password_hash: passwordHash,
          public_key: null,
          private_key: null,
          created_at: Date.now(),
          totp_secret: null,
        })),
      )
      .execute();
    const ownKey = owner.account.userId;
    const before = await db
      .selectFrom('users')
      .select(['public_key', 'private_key'])
      .where('user_id', '=', ownKey)
      .executeTakeFirstOrThrow();
    // A v1 user (no username) has no private key here and gets none.
    const v1Only = randomUUID();
    await db.insertInto('users').values({ user_id: v1Only, public_key: null, created_at: Date.now() }).execute();

    const second = await startServer({ database });
    try {
      const deadline = Date.now() + 20_000;
      let rows: { user_id: string; public_key: string | null; private_key: string | null }[];
      do {
        await new Promise((resolve) => setTimeout(resolve, 100));
        rows = await db
          .selectFrom('users')
          .select(['user_id', 'public_key', 'private_key'])
          .where('user_id', 'in', ids)
          .execute();
      } while (rows.some((row) => row.public_key === null) && Date.now() < deadline);
      assert.ok(
        rows.every((row) => row.public_key && row.private_key?.startsWith('v1.')),
        'every old account has a key pair',
      );
      // The line is logged after the last batch's query, which may come after the last key is seen.
      const logged = () => second.logs.some((line) => line.includes('gave a key pair to accounts that had none'));
      while (!logged() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.ok(logged(), 'the start logs how many accounts it gave a key pair');
      assert.deepEqual(
        await db
          .selectFrom('users')
          .select(['public_key', 'private_key'])
          .where('user_id', '=', ownKey)
          .executeTakeFirstOrThrow(),
        before,
      );
      assert.equal(
        (await db.selectFrom('users').select('public_key').where('user_id', '=', v1Only).executeTakeFirstOrThrow())
          .public_key,
        null,
      );
      // The old account signs in and reads its private key.
      const old = await signIn(second, PRIVATE, {
        userId: ids[0]!,
        username: rows.length
          ? (await db.selectFrom('users').select('username').where('user_id', '=', ids[0]!).executeTakeFirstOrThrow())
              .username!
          : '',
        password: 'kettle violet sunrise',
        email: '',
      });
      const mine = await me(old);
      assert.ok(
        verify(
          'sha256',
          Buffer.from('x'),
          createPublicKey(mine.publicKey),
          sign('sha256', Buffer.from('x'), createPrivateKey(mine.privateKey)),
        ),
      );
    } finally {
      await second.close();
    }
  });
});
