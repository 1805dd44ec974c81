import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { TestUser } from '../helpers/keys.ts';
import { type RawReply, rawRequest } from '../helpers/raw-http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { confirmedMod, registerUser, signed } from '../helpers/v1.ts';
import { FakeWorkshop } from '../helpers/workshop.ts';

/** A request as node:http sends it: no Accept-Encoding added, nothing decoded. */
function raw(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawReply> {
  return rawRequest(server.url, path, headers, method);
}

function decoded(reply: RawReply): Buffer {
  const coding = reply.headers['content-encoding'];
  if (coding === 'br') return brotliDecompressSync(reply.bytes);
  if (coding === 'gzip') return gunzipSync(reply.bytes);
  assert.equal(coding, undefined);
  return reply.bytes;
}

const workshop = new FakeWorkshop();
let server: TestServer;
let owner: TestUser;
let modId: string;
let serial = 0;

/** The path of a single engram whose JSON answer is exactly `size` bytes. */
async function engramOfSize(size: number): Promise<string> {
  const add = async (label: string) => {
    const object = `PrimalItem_Sized${++serial}`;
    const reply = await signed(server, owner, 'POST', '/v1/engram.php', [
      { path: `/Game/Mods/${modId}/${object}.${object}`, label, mod_id: modId, availability: 31, can_blueprint: true },
    ]);
    assert.equal(reply.status, 200, reply.text);
    return `/v1/engram.php/${(reply.body as Array<{ uid: string }>)[0]!.uid}`;
  };
  const probe = await add('a'.repeat(100));
  const probeSize = (await raw(probe)).bytes.length;
  const path = await add('a'.repeat(100 + size - probeSize));
  assert.equal((await raw(path)).bytes.length, size);
  return path;
}

let under: string;
let over: string;

before(async () => {
  await workshop.start();
  server = await startServer({ env: { WORKSHOP_URL: workshop.template } });
  owner = await registerUser(server);
  modId = (await confirmedMod(server, workshop, owner)).mod_id;
  under = await engramOfSize(1023);
  over = await engramOfSize(1024);
});

after(async () => {
  await server?.close();
  await workshop.stop();
});

describe('answer compression', () => {
  test('a JSON answer of 1023 bytes is sent as it is, one of 1024 bytes is coded', async () => {
    const small = await raw(under, { 'accept-encoding': 'br, gzip' });
    assert.equal(small.status, 200);
    assert.equal(small.headers['content-encoding'], undefined);
    assert.equal(small.headers.vary, undefined);
    assert.equal(small.bytes.length, 1023);
    const large = await raw(over, { 'accept-encoding': 'br, gzip' });
    assert.equal(large.status, 200);
    assert.equal(large.headers['content-encoding'], 'br');
    assert.equal(large.headers.vary, 'accept-encoding');
    assert.equal(Number(large.headers['content-length']), large.bytes.length);
    assert.ok(large.bytes.length < 1024);
    assert.equal(decoded(large).length, 1024);
    // The headers every answer carries are there on a coded one too.
    assert.equal(large.headers['x-content-type-options'], 'nosniff');
    assert.match(String(large.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });

  test('Accept-Encoding picks the coding: quality values, q=0, identity, * and x-gzip as gzip', async () => {
    const plain = await raw(over);
    assert.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding');
    assert.equal(plain.headers.vary, undefined);
    const cases: Array<[string, string | undefined]> = [
      ['br', 'br'],
      ['gzip', 'gzip'],
      ['br, gzip', 'br'],
      ['gzip, br', 'br'],
      ['br;q=0, gzip', 'gzip'],
      ['br;q=0.5, gzip;q=0.8', 'gzip'],
      ['GZIP', 'gzip'],
      ['x-gzip', 'gzip'],
      ['*', 'gzip'],
      ['br;q=0, *', 'gzip'],
      ['*;q=0', undefined],
      ['gzip;q=0', undefined],
      ['br;q=0, gzip;q=0', undefined],
      ['identity', undefined],
      ['identity;q=0', undefined],
      ['deflate', undefined],
      ['', undefined],
    ];
    for (const [header, coding] of cases) {
      const reply = await raw(over, { 'accept-encoding': header });
      assert.equal(reply.status, 200, header);
      assert.equal(reply.headers['content-encoding'], coding, header);
      assert.equal(reply.headers.vary, coding ? 'accept-encoding' : undefined, header);
      assert.deepEqual(decoded(reply), plain.bytes, header);
    }
  });

  test('HEAD answers the headers of the uncoded GET, without a body', async () => {
    const head = await raw(over, { 'accept-encoding': 'br, gzip' }, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.bytes.length, 0);
    assert.equal(head.headers['content-encoding'], undefined);
    assert.equal(head.headers['content-length'], '1024');
  });

  test('x-no-compression, and answers of no route (404), are sent as they are', async () => {
    const refused = await raw(over, { 'accept-encoding': 'gzip', 'x-no-compression': '1' });
    assert.equal(refused.headers['content-encoding'], undefined);
    assert.equal(refused.bytes.length, 1024);
    const missing = await raw(`/no-such-route/${'x'.repeat(2000)}`, { 'accept-encoding': 'gzip' });
    assert.equal(missing.status, 404);
    assert.ok(missing.bytes.length > 1024);
    assert.equal(missing.headers['content-encoding'], undefined);
    assert.equal(missing.headers['x-content-type-options'], 'nosniff');
  });

  test('an answer larger than the request thread codes keeps an exact Content-Length', async () => {
    const plain = await raw('/v4/openapi.json');
    assert.ok(plain.bytes.length > 65_536);
    for (const coding of ['br', 'gzip']) {
      const reply = await raw('/v4/openapi.json', { 'accept-encoding': coding });
      assert.equal(reply.headers['content-encoding'], coding);
      assert.equal(Number(reply.headers['content-length']), reply.bytes.length);
      assert.deepEqual(decoded(reply), plain.bytes);
    }
  });

  test('a streamed file (the API docs) is coded as it flows; an image is not', async () => {
    const path = '/v4/docs/static/swagger-ui.css';
    const plain = await raw(path);
    assert.equal(plain.status, 200);
    const coded = await raw(path, { 'accept-encoding': 'gzip' });
    assert.equal(coded.headers['content-encoding'], 'gzip');
    assert.equal(coded.headers.vary, 'accept-encoding');
    assert.equal(coded.headers['content-length'], undefined);
    assert.deepEqual(decoded(coded), plain.bytes);
    const image = await raw('/v4/docs/static/favicon-32x32.png', { 'accept-encoding': 'gzip' });
    assert.equal(image.status, 200);
    assert.equal(image.headers['content-type'], 'image/png');
    assert.equal(image.headers['content-encoding'], undefined);
  });

  test('the engram list codes its own answers: * is br there, and HEAD names its coding', async () => {
    // The four engrams above, of about 1 KiB each, make a list over the threshold.
    const list = await raw('/v1/engram.php', { 'accept-encoding': '*' });
    assert.equal(list.status, 200);
    assert.equal(list.headers['content-encoding'], 'br');
    assert.equal(list.headers.vary, 'Accept-Encoding');
    const head = await raw('/v1/engram.php', { 'accept-encoding': 'gzip' }, 'HEAD');
    assert.equal(head.headers['content-encoding'], 'gzip');
  });
});

describe('document downloads', () => {
  // (@fastify/compress coded application/octet-stream too; an earlier decision said otherwise.)
  test('a download over 1 KiB is coded when the client accepts it, and decodes byte for byte', async () => {
    const id = randomUUID();
    const text = JSON.stringify({
      Identifier: id,
      Title: 'Large',
      Description: 'x'.repeat(2000),
      Version: 1,
      LootSources: [],
    });
    const posted = await signed(server, owner, 'POST', '/v1/document.php', text);
    assert.equal(posted.status, 200, posted.text);
    const plain = await raw(`/v1/document.php/${id}`);
    assert.equal(plain.headers['content-type'], 'application/octet-stream');
    assert.deepEqual(plain.bytes, Buffer.from(text));
    const coded = await raw(`/v1/document.php/${id}`, { 'accept-encoding': 'gzip' });
    assert.equal(coded.headers['content-encoding'], 'gzip');
    assert.deepEqual(decoded(coded), Buffer.from(text));
  });
});
