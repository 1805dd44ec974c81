/**
 * v1 signed requests (HTTP Basic: user UUID and hex signature): which signatures and key formats
 * are accepted, and that every wrong signature is 403 with the text to sign in `details`.
 */
import assert from 'node:assert/strict';
import { constants, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import {
  basicAuth,
  newUser,
  rsaKeyPair,
  signatureHex,
  signedHeaders,
  type TestUser,
  textToSign,
} from '../helpers/keys.ts';
import { type Reply, startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';
import { publishMod } from '../helpers/v1.ts';
import { FakeWorkshop } from '../helpers/workshop.ts';

let server: TestServer;
const workshop = new FakeWorkshop();

before(async () => {
  await workshop.start();
  server = await startServer({ env: { WORKSHOP_URL: workshop.template } });
});
after(async () => {
  await server.close();
  await workshop.stop();
});

async function register(user: TestUser, publicKey = user.publicPem): Promise<void> {
  const reply = await server.request('POST', '/v1/user.php', { body: { user_id: user.userId, public_key: publicKey } });
  assert.equal(reply.status, 200, reply.text);
}

async function registered(algorithm: TestUser['algorithm'] = 'rsa-sha256', keyIndex = 0): Promise<TestUser> {
  const user = newUser(algorithm, keyIndex);
  await register(user);
  return user;
}

/** A request with the given Authorization header (and body, sent as JSON when given). */
function withAuthorization(method: string, path: string, authorization: string, body?: string): Promise<Reply> {
  return server.request(method, path, {
    headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body }),
  });
}

/** 403 in the error shape whose details are exactly the text that should have been signed. */
function assertRejected(reply: Reply, expectedText: string): void {
  assert.equal(reply.status, 403, reply.text);
  assert.equal(reply.body.code, 'forbidden');
  assert.match(reply.body.message, /^Signature rejected: /);
  assert.equal(reply.body.details, expectedText);
  assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'details', 'message']);
  assert.equal(reply.headers.get('www-authenticate'), null);
}

/** GET /v1/mod.php lists the caller's mods: 200 [] for a user without mods. */
async function assertListAccepted(user: TestUser, path = '/v1/mod.php'): Promise<void> {
  const reply = await server.request('GET', path, { headers: signedHeaders(user, 'GET', path) });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(reply.body, []);
}

describe('accepted signatures', () => {
  for (const algorithm of ['rsa-sha1', 'rsa-sha256', 'ed25519'] as const) {
    test(`${algorithm}: a signed GET, a signed POST with a body and a signed DELETE with none are accepted`, async () => {
      const user = await registered(algorithm);
      await assertListAccepted(user);

      const modId = publishMod(workshop, { name: `Signed by ${algorithm}` });
      const body = JSON.stringify({ mod_id: modId });
      const posted = await server.request('POST', '/v1/mod.php', {
        headers: signedHeaders(user, 'POST', '/v1/mod.php', body),
        body,
      });
      assert.equal(posted.status, 200, posted.text);
      assert.equal(posted.body.mod_id, modId);

      const path = `/v1/mod.php/${modId}`;
      const deleted = await server.request('DELETE', path, { headers: signedHeaders(user, 'DELETE', path) });
      assert.equal(deleted.status, 200, deleted.text);
      const listed = await server.request('GET', '/v1/mod.php', { headers: signedHeaders(user, 'GET', '/v1/mod.php') });
      assert.deepEqual(listed.body, []);
    });
  }

  test('the signature covers the body bytes exactly, including non-ASCII text', async () => {
    const user = await registered('ed25519');
    const modId = publishMod(workshop);
    const body = `{ "mod_id" : "${modId}", "name": "Müll ✓ 🦖" }\n`;
    const reply = await server.request('POST', '/v1/mod.php', {
      headers: signedHeaders(user, 'POST', '/v1/mod.php', body),
      body,
    });
    assert.equal(reply.status, 200, reply.text);
  });

  test('a query string is signed as sent', async () => {
    const user = await registered('rsa-sha1');
    await assertListAccepted(user, '/v1/mod.php?b=2&a=1&c=%20x');
  });

  test('the user UUID in the header is case-insensitive', async () => {
    const user = await registered('rsa-sha256');
    const signature = signatureHex(user, textToSign('GET', '/v1/mod.php'));
    const reply = await withAuthorization('GET', '/v1/mod.php', basicAuth(user.userId.toUpperCase(), signature));
    assert.equal(reply.status, 200, reply.text);
  });

  test('the hex signature is case-insensitive', async () => {
    const user = await registered('ed25519');
    const signature = signatureHex(user, textToSign('GET', '/v1/mod.php')).toUpperCase();
    const reply = await withAuthorization('GET', '/v1/mod.php', basicAuth(user.userId, signature));
    assert.equal(reply.status, 200, reply.text);
  });

  test('the scheme name "basic" is case-insensitive', async () => {
    const user = await registered('ed25519');
    const header = signedHeaders(user, 'GET', '/v1/mod.php').authorization!.replace(/^Basic/, 'basic');
    assert.equal((await withAuthorization('GET', '/v1/mod.php', header)).status, 200);
  });

  test('the canonical host of BASE_URL is signed whatever Host header the request carries', async () => {
    const user = await registered('ed25519');
    const raw = (authorization: string) =>
      new Promise<number>((resolve, reject) => {
        const { hostname, port } = new URL(server.url);
        const req = httpRequest(
          { hostname, port, path: '/v1/mod.php', method: 'GET', headers: { host: 'evil.example:8443', authorization } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          },
        );
        req.on('error', reject);
        req.end();
      });
    assert.equal(await raw(signedHeaders(user, 'GET', '/v1/mod.php').authorization!), 200);
    const forHostHeader = signatureHex(user, 'GET\nhttps://evil.example:8443/v1/mod.php');
    assert.equal(await raw(basicAuth(user.userId, forHostHeader)), 403);
  });

  test('a non-GET request with an empty body signs an empty third line', async () => {
    const user = await registered('rsa-sha256');
    const path = `/v1/user.php/${user.userId}`;
    const expected = `DELETE\nhttps://${TEST_HOST}${path}\n`;
    assert.equal(textToSign('DELETE', path), expected);

    // Without the line feed of the empty body line the signature is wrong.
    const withoutBodyLine = signatureHex(user, `DELETE\nhttps://${TEST_HOST}${path}`);
    assertRejected(await withAuthorization('DELETE', path, basicAuth(user.userId, withoutBodyLine)), expected);
    assert.equal((await server.request('GET', path)).status, 200, 'nothing was deleted');

    const reply = await withAuthorization('DELETE', path, basicAuth(user.userId, signatureHex(user, expected)));
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, { deleted: [user.userId] });
    assert.equal((await server.request('GET', path)).status, 404);
    await register(user);
  });

  test('a GET has no body line: a signature over a trailing line feed is rejected', async () => {
    const user = await registered('ed25519');
    const expected = `GET\nhttps://${TEST_HOST}/v1/mod.php`;
    assertRejected(
      await withAuthorization('GET', '/v1/mod.php', basicAuth(user.userId, signatureHex(user, `${expected}\n`))),
      expected,
    );
  });
});

describe('accepted key formats', () => {
  const rsa = rsaKeyPair(1);
  const ed = generateKeyPairSync('ed25519');
  for (const [name, algorithm, keyPair, publicKey] of [
    ['RSA as SPKI PEM', 'rsa-sha1', rsa, rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString()],
    [
      'RSA as PKCS#1 PEM (BEGIN RSA PUBLIC KEY)',
      'rsa-sha1',
      rsa,
      rsa.publicKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    ],
    ['RSA as hex SPKI DER', 'rsa-sha256', rsa, rsa.publicKey.export({ type: 'spki', format: 'der' }).toString('hex')],
    ['RSA as hex PKCS#1 DER', 'rsa-sha1', rsa, rsa.publicKey.export({ type: 'pkcs1', format: 'der' }).toString('hex')],
    [
      'RSA as uppercase hex DER',
      'rsa-sha256',
      rsa,
      rsa.publicKey.export({ type: 'pkcs1', format: 'der' }).toString('hex').toUpperCase(),
    ],
    ['Ed25519 as SPKI PEM', 'ed25519', ed, ed.publicKey.export({ type: 'spki', format: 'pem' }).toString()],
    ['Ed25519 as hex SPKI DER', 'ed25519', ed, ed.publicKey.export({ type: 'spki', format: 'der' }).toString('hex')],
  ] as const) {
    test(`a key registered ${name} verifies signed requests`, async () => {
      assert.ok(name.includes('PEM') ? publicKey.startsWith('-----BEGIN') : /^[0-9a-fA-F]+$/.test(publicKey));
      const user: TestUser = {
        userId: randomUUID(),
        privateKey: keyPair.privateKey,
        publicPem: keyPair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        algorithm,
      };
      await register(user, publicKey);
      await assertListAccepted(user);
    });
  }

  test('an RSA key under 1024 bits is refused at registration', async () => {
    const weak = generateKeyPairSync('rsa', { modulusLength: 512 })
      .publicKey.export({ type: 'spki', format: 'pem' })
      .toString();
    const userId = randomUUID();
    const reply = await server.request('POST', '/v1/user.php', { body: { user_id: userId, public_key: weak } });
    assert.equal(reply.status, 400, reply.text);
    assert.match(reply.body.message, /1024/);
    assert.equal((await server.request('GET', `/v1/user.php/${userId}`)).status, 404);
  });

  test('a key of another type (EC P-256) is refused at registration', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .publicKey.export({ type: 'spki', format: 'pem' })
      .toString();
    const reply = await server.request('POST', '/v1/user.php', { body: { user_id: randomUUID(), public_key: ec } });
    assert.equal(reply.status, 400, reply.text);
    assert.match(reply.body.message, /RSA or Ed25519/);
  });
});

describe('rejected signatures: 403 with the text to sign in details', () => {
  let alice: TestUser;
  let bob: TestUser;
  const path = '/v1/mod.php?page=1';
  const expectedGet = `GET\nhttps://${TEST_HOST}${path}`;
  before(async () => {
    alice = await registered('rsa-sha256');
    bob = await registered('ed25519');
  });

  const rejectedGet = async (signedText: string, signer: TestUser = alice, userId = alice.userId) =>
    assertRejected(
      await withAuthorization('GET', path, basicAuth(userId, signatureHex(signer, signedText))),
      expectedGet,
    );

  test('signed for another path', () => rejectedGet(`GET\nhttps://${TEST_HOST}/v1/engram.php?page=1`));
  test('signed for another query', () => rejectedGet(`GET\nhttps://${TEST_HOST}/v1/mod.php?page=2`));
  test('signed without the query', () => rejectedGet(`GET\nhttps://${TEST_HOST}/v1/mod.php`));
  test('signed for another host', () => rejectedGet(`GET\nhttps://other.example${path}`));
  test('signed for http instead of https', () => rejectedGet(`GET\nhttp://${TEST_HOST}${path}`));
  test('signed for another method', () => rejectedGet(`POST\nhttps://${TEST_HOST}${path}\n`));
  test('signed with the method in lowercase', () => rejectedGet(`get\nhttps://${TEST_HOST}${path}`));
  test("the right text signed by another registered user's key", () => rejectedGet(expectedGet, bob));
  test('the right text signed by an unregistered key', () => rejectedGet(expectedGet, newUser('rsa-sha256', 2)));
  test('an unknown user with a valid signature of its own key', async () => {
    const stranger = newUser('ed25519');
    await rejectedGet(expectedGet, stranger, stranger.userId);
  });

  test('another body than the one signed', async () => {
    const modId = publishMod(workshop);
    const signedBody = JSON.stringify({ mod_id: modId });
    const sentBody = JSON.stringify({ mod_id: modId }, null, 1);
    const headers = signedHeaders(alice, 'POST', '/v1/mod.php', signedBody);
    const reply = await server.request('POST', '/v1/mod.php', { headers, body: sentBody });
    assertRejected(reply, textToSign('POST', '/v1/mod.php', sentBody));
    const listed = await server.request('GET', '/v1/mod.php', { headers: signedHeaders(alice, 'GET', '/v1/mod.php') });
    assert.deepEqual(listed.body, [], 'nothing was registered');
  });

  test('an RSA-PSS signature of the right text', async () => {
    // Alice's own key (pool key 0), the wrong padding.
    const signature = sign('sha256', Buffer.from(expectedGet), {
      key: rsaKeyPair(0).privateKey,
      padding: constants.RSA_PKCS1_PSS_PADDING,
    }).toString('hex');
    assertRejected(await withAuthorization('GET', path, basicAuth(alice.userId, signature)), expectedGet);
  });

  test('a PKCS#1 v1.5 signature over SHA-512 (only SHA-1 and SHA-256 count)', async () => {
    const signature = sign('sha512', Buffer.from(expectedGet), rsaKeyPair(0).privateKey).toString('hex');
    assertRejected(await withAuthorization('GET', path, basicAuth(alice.userId, signature)), expectedGet);
  });

  const valid = () => signatureHex(alice, expectedGet);
  for (const [name, header] of [
    ['credentials that are not base64', () => 'Basic !!!not*base64!!!'],
    ['a Bearer token instead of Basic', () => 'Bearer some-token'],
    ['an empty Basic value', () => 'Basic '],
    ['credentials without a colon', () => `Basic ${Buffer.from(`${alice.userId}${valid()}`).toString('base64')}`],
    ['a username that is not a UUID', () => basicAuth('alice', valid())],
    ['an empty signature', () => basicAuth(alice.userId, '')],
    ['a signature that is not hex', () => basicAuth(alice.userId, valid().replace(/^../, 'zz'))],
    ['a signature of odd hex length', () => basicAuth(alice.userId, valid().slice(1))],
    ['a truncated signature', () => basicAuth(alice.userId, valid().slice(0, -2))],
    [
      'a signature with one byte changed',
      () => basicAuth(alice.userId, (valid().startsWith('00') ? '01' : '00') + valid().slice(2)),
    ],
    [
      'base64 of the signature instead of hex',
      () => basicAuth(alice.userId, Buffer.from(valid(), 'hex').toString('base64')),
    ],
  ] as const) {
    test(name, async () => assertRejected(await withAuthorization('GET', path, header()), expectedGet));
  }
});

describe('no Authorization header', () => {
  for (const [method, path, body] of [
    ['GET', '/v1/mod.php', undefined],
    ['POST', '/v1/document.php', '{}'],
    ['DELETE', `/v1/document.php/${randomUUID()}`, undefined],
    ['POST', '/v1/engram.php', '{}'],
    ['DELETE', `/v1/user.php/${randomUUID()}`, undefined],
  ] as const) {
    test(`${method} ${path.replace(/[0-9a-f-]{36}/, '<id>')} is 401 with WWW-Authenticate: Basic realm=…`, async () => {
      const reply = await server.request(
        method,
        path,
        body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } },
      );
      assert.equal(reply.status, 401, reply.text);
      assert.match(reply.headers.get('www-authenticate') ?? '', /^Basic realm="[^"]+"/);
      assert.equal(reply.body.code, 'unauthorized');
      assert.equal(typeof reply.body.message, 'string');
    });
  }
});
