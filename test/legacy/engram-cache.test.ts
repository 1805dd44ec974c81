import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { TestUser } from '../helpers/keys.ts';
import { type RawReply, rawRequest } from '../helpers/raw-http.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';
import { confirmedMod, registerUser, signed } from '../helpers/v1.ts';
import { FakeWorkshop } from '../helpers/workshop.ts';

/** A request to `server` as node:http sends it: no Accept-Encoding added, nothing decoded. */
function raw(
  server: TestServer,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<RawReply> {
  return rawRequest(server.url, path, headers, method);
}

const workshop = new FakeWorkshop();
let database: TestDatabase;
let first: TestServer;
let second: TestServer;
let owner: TestUser;
let modA: string;
let modB: string;
let serial = 0;

function engram(modId: string) {
  const n = ++serial;
  const object = `PrimalItem_Cached${n}`;
  return {
    path: `/Game/Mods/${modId}/Items/${object}.${object}`,
    label: `Cached thing ${n}`,
    mod_id: modId,
    availability: 31,
    can_blueprint: true,
  };
}

async function addEngrams(server: TestServer, user: TestUser, items: object[]) {
  const reply = await signed(server, user, 'POST', '/v1/engram.php', items);
  assert.equal(reply.status, 200, reply.text);
  return reply.body as Array<{ uid: string; label: string; mod_id: number }>;
}

/** The list's identity body, ETag, and parsed engrams. */
async function list(server: TestServer, query = '') {
  const reply = await raw(server, `/v1/engram.php${query}`);
  assert.equal(reply.status, 200);
  assert.equal(reply.headers['content-encoding'], undefined);
  const etag = reply.headers.etag as string;
  assert.match(etag, /^"[^"]+"$/, 'a strong entity tag');
  return {
    etag,
    bytes: reply.bytes,
    engrams: JSON.parse(reply.bytes.toString()) as Array<{
      uid: string;
      path: string;
      label: string;
      mod_id: number;
      mod_name: string;
    }>,
  };
}

/** Both instances answer 200 (not 304) to the tags they handed out before, and agree on the new list. */
async function bothSeeChange(before: { first: string; second: string }) {
  for (const [server, tag] of [
    [first, before.first],
    [second, before.second],
  ] as const) {
    const reply = await raw(server, '/v1/engram.php', { 'if-none-match': tag });
    assert.equal(reply.status, 200, 'a stale tag is not confirmed after a write');
    assert.notEqual(reply.headers.etag, tag);
  }
  const [a, b] = [await list(first), await list(second)];
  assert.equal(a.etag, b.etag);
  assert.deepEqual(a.bytes, b.bytes);
  return a;
}

async function tags() {
  return { first: (await list(first)).etag, second: (await list(second)).etag };
}

before(async () => {
  await workshop.start();
  database = await freshDatabase();
  const env = { WORKSHOP_URL: workshop.template };
  first = await startServer({ database, env });
  second = await startServer({ database, env });
  owner = await registerUser(first);
  modA = (await confirmedMod(first, workshop, owner)).mod_id;
  modB = (await confirmedMod(first, workshop, owner)).mod_id;
  await addEngrams(
    first,
    owner,
    Array.from({ length: 12 }, () => engram(modA)),
  );
  await addEngrams(
    first,
    owner,
    Array.from({ length: 3 }, () => engram(modB)),
  );
});

after(async () => {
  await first?.close();
  await second?.close();
  await database?.drop();
  await workshop.stop();
});

describe('the engram list: ETag and 304', () => {
  test('carries a strong ETag, Vary and a revalidate-always Cache-Control', async () => {
    const reply = await raw(first, '/v1/engram.php');
    assert.equal(reply.status, 200);
    assert.match(reply.headers.etag as string, /^"[A-Za-z0-9_-]+"$/);
    assert.match(String(reply.headers.vary), /accept-encoding/i);
    assert.equal(reply.headers['cache-control'], 'public, no-cache');
    assert.match(String(reply.headers['content-type']), /^application\/json/);
    assert.equal(JSON.parse(reply.bytes.toString()).length, 15);
    assert.equal(Number(reply.headers['content-length']), reply.bytes.length);
  });

  test('answers 304 without a body to a matching If-None-Match: exact, in a list, weak, or *', async () => {
    const { etag } = await list(first);
    for (const header of [etag, `"nope", ${etag}`, `W/${etag}`, `"a",W/${etag} , "b"`, '*']) {
      const reply = await raw(first, '/v1/engram.php', { 'if-none-match': header });
      assert.equal(reply.status, 304, header);
      assert.equal(reply.bytes.length, 0);
      assert.equal(reply.headers.etag, etag);
      assert.match(String(reply.headers.vary), /accept-encoding/i);
    }
    const miss = await raw(first, '/v1/engram.php', { 'if-none-match': '"something-else", W/"other"' });
    assert.equal(miss.status, 200);
    assert.equal(JSON.parse(miss.bytes.toString()).length, 15);
  });

  test('the other instance hands out the same tag and honours it', async () => {
    const { etag } = await list(first);
    assert.equal((await list(second)).etag, etag);
    assert.equal((await raw(second, '/v1/engram.php', { 'if-none-match': etag })).status, 304);
  });

  test('HEAD answers the headers of GET and no body', async () => {
    const get = await raw(first, '/v1/engram.php', { 'accept-encoding': 'gzip' });
    const head = await raw(first, '/v1/engram.php', { 'accept-encoding': 'gzip' }, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.bytes.length, 0);
    assert.equal(head.headers.etag, get.headers.etag);
    assert.equal(head.headers['content-encoding'], 'gzip');
  });
});

describe('the engram list: compression', () => {
  test('br and gzip bodies decode to exactly the identity body', async () => {
    const { bytes } = await list(first);
    const br = await raw(first, '/v1/engram.php', { 'accept-encoding': 'br, gzip' });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.ok(br.bytes.length < bytes.length);
    assert.deepEqual(brotliDecompressSync(br.bytes), bytes);
    const gz = await raw(first, '/v1/engram.php', { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.deepEqual(gunzipSync(gz.bytes), bytes);
    assert.notEqual(br.headers.etag, gz.headers.etag, 'each coding is its own representation');
    // A cache holding the gzip form revalidates it with its tag.
    assert.equal(
      (await raw(first, '/v1/engram.php', { 'accept-encoding': 'gzip', 'if-none-match': gz.headers.etag as string }))
        .status,
      304,
    );
  });

  test('q-values choose the coding, and q=0 refuses one', async () => {
    const cases: Array<[string, string | undefined]> = [
      ['br;q=0, gzip', 'gzip'],
      ['gzip;q=1, br;q=0.5', 'gzip'],
      ['br;q=0.2, gzip;q=0.1', 'br'],
      ['identity;q=0, gzip', 'gzip'],
      ['*', 'br'],
      ['*;q=0', undefined],
      ['br;q=0, gzip;q=0', undefined],
      ['deflate', undefined],
      ['', undefined],
    ];
    const { bytes } = await list(first);
    for (const [header, coding] of cases) {
      const reply = await raw(first, '/v1/engram.php', { 'accept-encoding': header });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers['content-encoding'], coding, header);
      if (coding === undefined) assert.deepEqual(reply.bytes, bytes, header);
    }
  });
});

describe('the per-mod lists', () => {
  test('are cached under their own keys, whatever the order of the ids', async () => {
    const all = await list(first);
    const ofA = await list(first, `?mod_id=${modA}`);
    const ofB = await list(first, `?mod_id=${modB}`);
    assert.equal(ofA.engrams.length, 12);
    assert.ok(ofA.engrams.every((item) => String(item.mod_id) === modA));
    assert.equal(ofB.engrams.length, 3);
    assert.equal(new Set([all.etag, ofA.etag, ofB.etag]).size, 3);
    const both = await list(first, `?mod_id=${modB},${modA}`);
    assert.equal(both.engrams.length, 15);
    assert.equal((await list(first, `?mod_id=${modA},${modB},${modA}`)).etag, both.etag);
    assert.equal((await raw(second, `/v1/engram.php?mod_id=${modA}`, { 'if-none-match': ofA.etag })).status, 304);
    assert.equal((await raw(second, `/v1/engram.php?mod_id=${modA}`, { 'if-none-match': ofB.etag })).status, 200);
  });
});

describe('every write drops the cached lists on every instance', () => {
  test('an engram added on one instance is listed by the other', async () => {
    const before = await tags();
    const [added] = await addEngrams(first, owner, [engram(modA)]);
    const now = await bothSeeChange(before);
    assert.ok(now.engrams.some((item) => item.uid === added!.uid));
    assert.ok(
      (await list(second, `?mod_id=${modA}`)).engrams.some((item) => item.uid === added!.uid),
      'per-mod lists too',
    );
  });

  test('an engram updated (and not by a refused write)', async () => {
    const [target] = (await list(second, `?mod_id=${modA}`)).engrams;
    const before = await tags();
    const refused = await signed(first, owner, 'POST', '/v1/engram.php', { path: target!.path, label: '' });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(
      (await raw(second, '/v1/engram.php', { 'if-none-match': before.second })).status,
      304,
      'a refused write changes nothing',
    );
    const reply = await signed(first, owner, 'POST', '/v1/engram.php', { path: target!.path, label: 'Renamed thing' });
    assert.equal(reply.status, 200, reply.text);
    const now = await bothSeeChange(before);
    assert.equal(now.engrams.find((item) => item.uid === target!.uid)!.label, 'Renamed thing');
  });

  test('an engram deleted', async () => {
    const [target] = (await list(second, `?mod_id=${modA}`)).engrams;
    const before = await tags();
    const reply = await signed(first, owner, 'DELETE', `/v1/engram.php/${target!.uid}`);
    assert.equal(reply.status, 200, reply.text);
    const now = await bothSeeChange(before);
    assert.ok(!now.engrams.some((item) => item.uid === target!.uid));
  });

  test('a mod deleted (its engrams with it)', async () => {
    const before = await tags();
    const beforeOfB = (await list(second, `?mod_id=${modB}`)).etag;
    const reply = await signed(first, owner, 'DELETE', `/v1/mod.php/${modB}`);
    assert.equal(reply.status, 200, reply.text);
    const now = await bothSeeChange(before);
    assert.ok(!now.engrams.some((item) => String(item.mod_id) === modB));
    const ofB = await raw(second, `/v1/engram.php?mod_id=${modB}`, { 'if-none-match': beforeOfB });
    assert.equal(ofB.status, 200);
    assert.equal(ofB.bytes.toString(), '[]');
  });

  test('a user deleted (their mods and engrams with them)', async () => {
    const other = await registerUser(second);
    const otherMod = (await confirmedMod(second, workshop, other)).mod_id;
    const [theirs] = await addEngrams(second, other, [engram(otherMod)]);
    const before = await tags();
    assert.ok((await list(first)).engrams.some((item) => item.uid === theirs!.uid));
    const reply = await signed(second, other, 'DELETE', `/v1/user.php/${other.userId}`);
    assert.equal(reply.status, 200, reply.text);
    const now = await bothSeeChange(before);
    assert.ok(!now.engrams.some((item) => item.uid === theirs!.uid));
  });
});

describe('other JSON answers', () => {
  test('over 1 KiB: compressed when the client accepts it, and only then', async () => {
    const uids = (await list(first)).engrams.slice(0, 8).map((item) => item.uid);
    const path = `/v1/engram.php/${uids.join(',')}`;
    const plain = await raw(first, path);
    assert.equal(plain.status, 200);
    assert.ok(plain.bytes.length > 1024);
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(JSON.parse(plain.bytes.toString()).length, 8);
    const br = await raw(first, path, { 'accept-encoding': 'br, gzip' });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.deepEqual(brotliDecompressSync(br.bytes), plain.bytes);
    const gz = await raw(first, path, { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.deepEqual(gunzipSync(gz.bytes), plain.bytes);
  });

  test('under 1 KiB, and errors of that size: sent as they are', async () => {
    const [one] = (await list(first)).engrams;
    const small = await raw(first, `/v1/engram.php/${one!.uid}`, { 'accept-encoding': 'br, gzip' });
    assert.equal(small.status, 200);
    assert.equal(small.headers['content-encoding'], undefined);
    assert.equal(JSON.parse(small.bytes.toString()).uid, one!.uid);
    const missing = await raw(first, '/v1/engram.php/00000000000000000000000000000000', {
      'accept-encoding': 'br, gzip',
    });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers['content-encoding'], undefined);
    assert.equal(typeof JSON.parse(missing.bytes.toString()).message, 'string');
  });
});

describe('the spawn-code page', () => {
  test("lists the mod's engrams by label, with their spawn commands", async () => {
    const engrams = (await list(first, `?mod_id=${modA}`)).engrams as unknown as Array<{
      label: string;
      spawn: string;
    }>;
    const page = await first.request('GET', `/spawn?mod_id=${modA}`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const positions = [...engrams]
      .sort((a, b) => a.label.localeCompare(b.label))
      .map((item) => page.text.indexOf(item.label));
    assert.ok(
      positions.every((at) => at >= 0),
      'every engram is shown',
    );
    assert.deepEqual(
      [...positions].sort((a, b) => a - b),
      positions,
      'in label order',
    );
  });
});

describe('a list built from several chunks of rows', () => {
  test('labels outside ASCII: the body is exactly the engrams, whole, in every coding', async () => {
    const modC = (await confirmedMod(first, workshop, owner)).mod_id;
    // More than one chunk of 1,000 rows, labels of two-, three- and four-byte characters.
    const items = Array.from({ length: 1234 }, () => ({ ...engram(modC), label: `Étoile ☃ ${serial} 🦖` }));
    const answer = await addEngrams(first, owner, items);
    // The POST's own answer holds every label whole, in the order written.
    assert.deepEqual(
      answer.map((item) => item.label),
      items.map((item) => item.label),
    );
    const { bytes, engrams } = await list(first, `?mod_id=${modC}`);
    assert.equal(engrams.length, items.length);
    assert.deepEqual(new Set(engrams.map((item) => item.label)), new Set(items.map((item) => item.label)));
    const reply = await raw(first, `/v1/engram.php?mod_id=${modC}`);
    assert.equal(Number(reply.headers['content-length']), bytes.length);
    const br = await raw(first, `/v1/engram.php?mod_id=${modC}`, { 'accept-encoding': 'br' });
    assert.deepEqual(brotliDecompressSync(br.bytes), bytes);
  });

  test('sent from its chunks: the same bytes every time, its length, its tag; HEAD and 304 carry no body', async () => {
    const modD = (await confirmedMod(first, workshop, owner)).mod_id;
    // Two full chunks of 1,000 rows and one partial: the chunk boundaries fall inside the body.
    await addEngrams(
      first,
      owner,
      Array.from({ length: 2500 }, () => engram(modD)),
    );
    const path = `/v1/engram.php?mod_id=${modD}`;
    const built = await raw(first, path);
    const cached = await raw(first, path);
    assert.equal(built.status, 200);
    assert.deepEqual(cached.bytes, built.bytes, 'the cached chunks give the bytes of the first answer');
    assert.equal(cached.headers.etag, built.headers.etag);
    assert.equal(Number(cached.headers['content-length']), cached.bytes.length);
    assert.equal(cached.headers['transfer-encoding'], undefined, 'sent with its length, not chunked');
    const engrams = JSON.parse(cached.bytes.toString()) as Array<{ uid: string }>;
    assert.equal(engrams.length, 2500);
    assert.deepEqual(
      engrams.map((item) => item.uid),
      engrams.map((item) => item.uid).sort(),
      'in uid order across the chunks',
    );
    // The other instance builds its own copy of the list, to the same bytes and tag.
    const other = await raw(second, path);
    assert.deepEqual(other.bytes, built.bytes);
    assert.equal(other.headers.etag, built.headers.etag);
    const gz = await raw(first, path, { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(Number(gz.headers['content-length']), gz.bytes.length);
    assert.deepEqual(gunzipSync(gz.bytes), built.bytes);
    const head = await raw(first, path, {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.bytes.length, 0);
    assert.equal(Number(head.headers['content-length']), built.bytes.length);
    assert.equal(head.headers.etag, built.headers.etag);
    const revalidated = await raw(first, path, { 'if-none-match': built.headers.etag as string });
    assert.equal(revalidated.status, 304);
    assert.equal(revalidated.bytes.length, 0);
  });
});
