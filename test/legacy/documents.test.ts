import assert from 'node:assert/strict';
import { randomUUID, sign } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { STRING_BODY_LIMIT } from '../../src/http/text-body.ts';
import { NotAJsonArrayError, splitJsonArray } from '../../src/legacy/documents/json-elements.ts';
import { basicAuth, newUser, signedHeaders, type TestUser, textToSign } from '../helpers/keys.ts';
import { type Reply, startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

const DATE_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+0000$/;

async function register(algorithm: 'rsa-sha256' | 'rsa-sha1' | 'ed25519' = 'ed25519'): Promise<TestUser> {
  const user = newUser(algorithm);
  const reply = await server.request('POST', '/v1/user.php', {
    body: { user_id: user.userId, public_key: user.publicPem },
  });
  assert.equal(reply.status, 200, reply.text);
  return user;
}

/** A signed request with the body sent exactly as the given text. */
function signed(
  user: TestUser,
  method: string,
  path: string,
  body?: string,
  contentType = 'application/json',
): Promise<Reply> {
  return server.request(method, path, { headers: signedHeaders(user, method, path, body, contentType), body });
}

function post(user: TestUser, body: string | object): Promise<Reply> {
  return signed(user, 'POST', '/v1/document.php', typeof body === 'string' ? body : JSON.stringify(body));
}

function content(overrides: Record<string, unknown> = {}) {
  return {
    Identifier: randomUUID(),
    Title: 'Loot',
    Description: 'A loot table',
    Version: 3,
    LootSources: [{ Class: 'Crate_C' }],
    ...overrides,
  };
}

async function publish(user: TestUser, overrides: Record<string, unknown> = {}) {
  const document = content(overrides);
  const reply = await post(user, document);
  assert.equal(reply.status, 200, reply.text);
  return reply.body as Record<string, any>;
}

const metadata = async (id: string) => {
  const reply = await server.request('GET', `/v1/document.php/${id}?simple`);
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
};

/** Sets counters and times directly, for deterministic list tests. */
async function setRow(id: string, values: { last_updated?: number; download_count?: number }) {
  await server.app.database.db.updateTable('documents').set(values).where('document_id', '=', id).execute();
}

describe('splitJsonArray', () => {
  test('answers each element text exactly, without surrounding whitespace', () => {
    assert.deepEqual(splitJsonArray('[1,"a",{"b":[2,3]},[],null,true]'), [
      '1',
      '"a"',
      '{"b":[2,3]}',
      '[]',
      'null',
      'true',
    ]);
    assert.deepEqual(splitJsonArray(' \r\n\t[ \n{ "x" : 1.0e+2 }\t,\r\n  "y"  ] \n'), ['{ "x" : 1.0e+2 }', '"y"']);
    assert.deepEqual(splitJsonArray('[]'), []);
    assert.deepEqual(splitJsonArray('[ \n ]'), []);
    assert.deepEqual(splitJsonArray('\uFEFF[1]'), ['1']);
  });

  test('commas, brackets and escaped quotes inside strings do not split', () => {
    const tricky = [
      '"a,b"',
      '"]"',
      '"}{"',
      '"say \\"hi\\", ok"',
      '"ends with backslash \\\\"',
      '"\\\\\\""',
      '{"k,]": "v\\\\", "n": ["]", "["]}',
      '"é😀\\u00e9\\/"',
    ];
    assert.deepEqual(splitJsonArray(`[${tricky.join(' , ')}]`), tricky);
  });

  test('agrees with JSON.parse on generated values in several layouts', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const strings = ['', ',', ']', '}', '"', '\\', '\\"', 'a\nb', 'é', '😀', '\u2028', '[{,}]'];
    const value = (depth: number): unknown => {
      const kind = Math.floor(random() * (depth > 3 ? 4 : 6));
      if (kind === 0) return Math.floor(random() * 1000) - 500;
      if (kind === 1)
        return strings[Math.floor(random() * strings.length)]! + strings[Math.floor(random() * strings.length)]!;
      if (kind === 2) return random() < 0.5 ? null : random() < 0.5;
      if (kind === 3) return random() * 1e6;
      if (kind === 4) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      return Object.fromEntries(
        Array.from({ length: Math.floor(random() * 4) }, (_, i) => [
          strings[i % strings.length] + String(i),
          value(depth + 1),
        ]),
      );
    };
    for (let round = 0; round < 300; round++) {
      const elements = Array.from({ length: 1 + Math.floor(random() * 5) }, () => value(0));
      for (const indent of [undefined, 2, '\t']) {
        const text = JSON.stringify(elements, null, indent);
        const parts = splitJsonArray(text);
        assert.equal(parts.length, elements.length, text);
        assert.deepEqual(
          parts.map((part) => JSON.parse(part)),
          elements,
          text,
        );
      }
    }
  });

  test('throws on text that is not a well-formed array', () => {
    for (const text of ['{}', '"[1]"', '[1,2', '[1,,2]', '[1,]', '[,1]', '[1] x', '[1}', '', '["open]']) {
      assert.throws(() => splitJsonArray(text), NotAJsonArrayError, text);
    }
  });
});

describe('POST /v1/document.php', () => {
  test('creates a document; metadata derives from the content; the content is kept byte for byte', async () => {
    const user = await register();
    const id = randomUUID();
    // Odd whitespace, CRLF, tabs, unicode (raw and escaped), number forms JSON.stringify would rewrite, extra keys.
    const raw = `\r\n  {\t"Identifier" :"${id.toUpperCase()}",\n"Title":"Hölle & \u{1F480} Loot/Set",  "Description":"Line1\\nLine2 \\u00e9 é\u0301 \\/ 日本",\r\n\r\n "Version": 7, "LootSources":[ {"Multiplier":1.0e+2, "Weight": -0.50}, [] ],"Extra":{"kept":true}   }\n\n`;
    const reply = await post(user, raw);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), [
      'description',
      'document_id',
      'download_count',
      'last_updated',
      'name',
      'resource_url',
      'revision',
      'user_id',
    ]);
    assert.equal(reply.body.document_id, id);
    assert.equal(reply.body.user_id, user.userId);
    assert.equal(reply.body.name, 'Hölle & \u{1F480} Loot/Set');
    assert.equal(reply.body.description, 'Line1\nLine2 é é\u0301 / 日本');
    assert.equal(reply.body.revision, 1);
    assert.equal(reply.body.download_count, 0);
    assert.match(reply.body.last_updated, DATE_TIME);
    const stamp = Date.parse(reply.body.last_updated.replace(' ', 'T').replace('+0000', 'Z'));
    assert.ok(Math.abs(stamp - Date.now()) < 60_000, reply.body.last_updated);
    assert.equal(reply.body.resource_url, `https://${TEST_HOST}/v1/document.php/${id}`);

    const download = await fetch(`${server.url}/v1/document.php/${id}`);
    assert.equal(download.status, 200);
    assert.equal(download.headers.get('content-type'), 'application/octet-stream');
    assert.equal(download.headers.get('content-disposition'), 'attachment; filename="Hlle   LootSet.beacon"');
    assert.deepEqual(Buffer.from(await download.arrayBuffer()), Buffer.from(raw, 'utf8'));
    assert.deepEqual(await metadata(id), { ...reply.body, download_count: 1 });
  });

  test('an update by the owner replaces the content and increments revision', async () => {
    const user = await register('rsa-sha1');
    const first = await publish(user, { Title: 'One' });
    const id = first.document_id;
    const raw = JSON.stringify(content({ Identifier: id, Title: 'Two', Description: 'Changed' }), null, 3);
    const reply = await post(user, raw);
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.revision, 2);
    assert.equal(reply.body.name, 'Two');
    assert.equal(reply.body.description, 'Changed');
    const download = await server.request('GET', `/v1/document.php/${id}`);
    assert.equal(download.text, raw);
  });

  test("an update of another user's document is 403 and changes nothing", async () => {
    const owner = await register();
    const intruder = await register();
    const original = await publish(owner, { Title: 'Mine' });
    const reply = await post(intruder, content({ Identifier: original.document_id.toUpperCase(), Title: 'Stolen' }));
    assert.equal(reply.status, 403, reply.text);
    assert.equal(reply.body.code, 'forbidden');
    assert.equal(reply.body.details.Identifier, original.document_id.toUpperCase());
    assert.deepEqual(await metadata(original.document_id), original);
  });

  test('50 concurrent updates raise revision by exactly 50', async () => {
    const user = await register();
    const created = await publish(user);
    const bodies = Array.from({ length: 50 }, (_, i) =>
      JSON.stringify(content({ Identifier: created.document_id, Title: `Update ${i}` })),
    );
    const replies = await Promise.all(bodies.map((body) => post(user, body)));
    assert.deepEqual(
      replies.map((r) => r.status),
      bodies.map(() => 200),
    );
    assert.deepEqual(
      replies.map((r) => r.body.revision).sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => i + 2),
    );
    const final = await metadata(created.document_id);
    assert.equal(final.revision, 51);
    const stored = await server.request('GET', `/v1/document.php/${created.document_id}`);
    assert.equal(stored.text, bodies[Number(final.name.slice('Update '.length))]);
  });

  test('an array creates or updates every document, each stored as its exact element text', async () => {
    const user = await register('rsa-sha256');
    const existing = await publish(user, { Title: 'Old' });
    const a = randomUUID();
    const b = randomUUID();
    const elements = [
      `{"Identifier":"${a}","Title":"A, [with] \\"quotes\\" }","Description":"x","LootSources":[]}`,
      `{ "Identifier" : "${existing.document_id}" ,\n  "Title" : "New 😀", "Description" : "", "LootSources" : [ ["]"] ] , "Version": 4 }`,
      `{"LootSources":[{"a":"\\\\"}],"Description":"\\u2028","Title":"B","Identifier":"${b}","Other":[1,2,{"c":null}]}`,
    ];
    const raw = `[\n\t${elements[0]} ,\r\n  ${elements[1]},${elements[2]}\n]\n`;
    const reply = await post(user, raw);
    assert.equal(reply.status, 200, reply.text);
    assert.ok(Array.isArray(reply.body));
    assert.deepEqual(
      reply.body.map((m: any) => [m.document_id, m.revision, m.name]),
      [
        [a, 1, 'A, [with] "quotes" }'],
        [existing.document_id, 2, 'New 😀'],
        [b, 1, 'B'],
      ],
    );
    for (const [index, id] of [a, existing.document_id, b].entries()) {
      const download = await fetch(`${server.url}/v1/document.php/${id}`);
      assert.deepEqual(Buffer.from(await download.arrayBuffer()), Buffer.from(elements[index]!, 'utf8'));
    }
  });

  test('overlapping array updates in opposite orders neither deadlock nor lose an update; answers keep the posted order', async () => {
    const user = await register();
    const [low, high] = [await publish(user), await publish(user)].map((m) => m.document_id as string).sort();
    const forward = JSON.stringify([content({ Identifier: low }), content({ Identifier: high })]);
    const backward = JSON.stringify([content({ Identifier: high }), content({ Identifier: low })]);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post(user, i % 2 === 0 ? forward : backward)),
    );
    for (const [i, reply] of replies.entries()) {
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual(
        reply.body.map((m: any) => m.document_id),
        i % 2 === 0 ? [low, high] : [high, low],
      );
    }
    assert.equal((await metadata(low!)).revision, 21);
    assert.equal((await metadata(high!)).revision, 21);
  });

  test('an array with one invalid element changes nothing (400 naming the element)', async () => {
    const user = await register();
    const existing = await publish(user);
    const fresh = randomUUID();
    const bad = randomUUID();
    const reply = await post(user, [
      content({ Identifier: fresh }),
      content({ Identifier: existing.document_id, Title: 'Changed' }),
      content({ Identifier: bad, LootSources: 'none' }),
    ]);
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.code, 'badRequest');
    assert.deepEqual(reply.body.details, { index: 2, Identifier: bad });
    assert.match(reply.body.message, /LootSources.*item 2/);
    assert.equal((await server.request('HEAD', `/v1/document.php/${fresh}`)).status, 404);
    assert.deepEqual(await metadata(existing.document_id), existing);
  });

  test("an array naming another user's document changes nothing (403 naming the element)", async () => {
    const user = await register();
    const other = await register();
    const mine = await publish(user);
    const theirs = await publish(other);
    const fresh = randomUUID();
    const reply = await post(user, [
      content({ Identifier: fresh }),
      content({ Identifier: mine.document_id }),
      content({ Identifier: theirs.document_id }),
    ]);
    assert.equal(reply.status, 403, reply.text);
    assert.deepEqual(reply.body.details, { index: 2, Identifier: theirs.document_id });
    assert.equal((await server.request('HEAD', `/v1/document.php/${fresh}`)).status, 404);
    assert.deepEqual(await metadata(mine.document_id), mine);
    assert.deepEqual(await metadata(theirs.document_id), theirs);
  });

  test('an array naming one document twice (in any case) is 400', async () => {
    const user = await register();
    const id = randomUUID();
    const reply = await post(user, [content({ Identifier: id }), content({ Identifier: id.toUpperCase() })]);
    assert.equal(reply.status, 400);
    assert.equal(reply.body.details.index, 1);
    assert.equal((await server.request('HEAD', `/v1/document.php/${id}`)).status, 404);
  });

  const id = randomUUID();
  for (const [name, body, type, detailsIdentifier] of [
    ['a wrong Content-Type', JSON.stringify(content()), 'text/plain', undefined],
    ['malformed JSON', '{"Identifier":', 'application/json', undefined],
    ['an empty body', '', 'application/json', undefined],
    ['an empty array', '[]', 'application/json', undefined],
    ['a JSON string', '"document"', 'application/json', undefined],
    ['an array of numbers', '[1]', 'application/json', undefined],
    ['no Identifier', JSON.stringify(content({ Identifier: undefined })), 'application/json', null],
    ['a non-UUID Identifier', JSON.stringify(content({ Identifier: 'doc-1' })), 'application/json', 'doc-1'],
    ['no Title', JSON.stringify(content({ Identifier: id, Title: undefined })), 'application/json', id],
    ['a numeric Title', JSON.stringify(content({ Identifier: id, Title: 5 })), 'application/json', id],
    ['no Description', JSON.stringify(content({ Identifier: id, Description: undefined })), 'application/json', id],
    ['no LootSources', JSON.stringify(content({ Identifier: id, LootSources: undefined })), 'application/json', id],
    ['LootSources as an object', JSON.stringify(content({ Identifier: id, LootSources: {} })), 'application/json', id],
    ['a fractional Version', JSON.stringify(content({ Identifier: id, Version: 1.5 })), 'application/json', id],
    ['a string Version', JSON.stringify(content({ Identifier: id, Version: '2' })), 'application/json', id],
    ['a prototype-polluting body', `{"Identifier":"${id}","__proto__":{"x":1}}`, 'application/json', undefined],
  ] as const) {
    test(`${name} is 400 in the error shape`, async () => {
      const user = await register();
      const reply = await signed(user, 'POST', '/v1/document.php', body, type);
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.body.code, 'badRequest');
      assert.equal(typeof reply.body.message, 'string');
      if (detailsIdentifier !== undefined) assert.deepEqual(reply.body.details, { Identifier: detailsIdentifier });
      assert.equal((await server.request('HEAD', `/v1/document.php/${id}`)).status, 404);
    });
  }

  test('a body that is not UTF-8 is 400', async () => {
    const user = await register();
    const body = Buffer.concat([
      Buffer.from(`{"Identifier":"${randomUUID()}","Title":"`),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('","Description":"","LootSources":[]}'),
    ]);
    const path = '/v1/document.php';
    const text = Buffer.concat([Buffer.from(`POST\nhttps://${TEST_HOST}${path}\n`), body]);
    const headers = {
      authorization: basicAuth(user.userId, sign(null, text, user.privateKey).toString('hex')),
      'content-type': 'application/json',
    };
    const reply = await server.request('POST', path, { headers, body });
    assert.equal(reply.status, 400, reply.text);
    assert.match(reply.body.message, /UTF-8/);
  });

  test('needs a signature: 401 without one, 403 with a wrong one', async () => {
    const user = await register();
    const body = JSON.stringify(content());
    const unsigned = await server.request('POST', '/v1/document.php', {
      body,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(unsigned.status, 401);
    const headers = signedHeaders(user, 'POST', '/v1/document.php', body.replace('Loot', 'Boot'));
    const wrong = await server.request('POST', '/v1/document.php', { body, headers });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.body.details, textToSign('POST', '/v1/document.php', body));
  });
});

describe('GET /v1/document.php/<id>', () => {
  test('answers the content as an attachment and counts the download; ?simple and HEAD do not count', async () => {
    const user = await register();
    const created = await publish(user, { Title: 'Count me' });
    const path = `/v1/document.php/${created.document_id}`;
    const download = await server.request('GET', path);
    assert.equal(download.status, 200);
    assert.equal(download.headers.get('content-disposition'), 'attachment; filename="Count me.beacon"');
    assert.equal((await metadata(created.document_id)).download_count, 1);
    assert.equal((await metadata(created.document_id)).download_count, 1);
    assert.equal((await server.request('HEAD', path)).status, 200);
    assert.equal((await metadata(created.document_id)).download_count, 1);
    assert.equal((await server.request('GET', `/v1/document.php/${created.document_id.toUpperCase()}`)).status, 200);
    assert.equal((await metadata(created.document_id)).download_count, 2);
  });

  test('content shorter and longer than the string-answer limit downloads byte for byte, coded or not', async () => {
    const user = await register();
    for (const length of [2_000, STRING_BODY_LIMIT + 1_000]) {
      const id = randomUUID();
      // Characters of one, two, three and four UTF-8 bytes (the last a surrogate pair): the length in bytes is not the string's.
      const raw = JSON.stringify(
        content({ Identifier: id, Description: 'aé日\u{1F480}'.repeat(Math.ceil(length / 5)) }),
      );
      assert.ok(raw.length > length);
      assert.equal((await post(user, raw)).status, 200);
      for (const coding of ['identity', 'br']) {
        const download = await fetch(`${server.url}/v1/document.php/${id}`, { headers: { 'accept-encoding': coding } });
        assert.equal(download.status, 200);
        const bytes = Buffer.from(await download.arrayBuffer());
        assert.deepEqual(bytes, Buffer.from(raw, 'utf8'), `${length} characters, ${coding}`);
        if (coding === 'identity') assert.equal(download.headers.get('content-length'), String(Buffer.byteLength(raw)));
        else assert.equal(download.headers.get('content-encoding'), 'br');
      }
    }
  });

  test('200 concurrent downloads raise download_count by exactly 200', async () => {
    const user = await register();
    const created = await publish(user);
    const replies = await Promise.all(
      Array.from({ length: 200 }, () =>
        fetch(`${server.url}/v1/document.php/${created.document_id}`).then((r) => r.status),
      ),
    );
    assert.deepEqual(
      replies,
      replies.map(() => 200),
    );
    assert.equal((await metadata(created.document_id)).download_count, 200);
  });

  for (const [title, filename] of [
    ['Plain Name', 'Plain Name.beacon'],
    ['Keep A-z 0-9 _ (x) -', 'Keep A-z 0-9 _ (x) -.beacon'],
    ['../../etc/passwd', 'etcpasswd.beacon'],
    ['Quote" ; filename=evil.exe', 'Quote  filenameevilexe.beacon'],
    ['Ünïcödé 日本語 😀!', 'ncd  .beacon'],
    ['Tab\tNew\nLine\r', 'TabNewLine.beacon'],
  ] as const) {
    test(`the filename of "${title.replace(/\s/g, ' ')}" is ${filename}`, async () => {
      const user = await register();
      const created = await publish(user, { Title: title });
      const reply = await server.request('GET', `/v1/document.php/${created.document_id}`);
      assert.equal(reply.headers.get('content-disposition'), `attachment; filename="${filename}"`);
    });
  }

  test('a name with nothing left after sanitising falls back to the document id', async () => {
    const user = await register();
    const created = await publish(user, { Title: '日本 ' });
    const reply = await server.request('GET', `/v1/document.php/${created.document_id}`);
    assert.equal(reply.headers.get('content-disposition'), `attachment; filename="${created.document_id}.beacon"`);
  });

  test('a missing or non-UUID id is 404; ?simple answers the metadata; unknown parameters are 400', async () => {
    for (const path of [
      `/v1/document.php/${randomUUID()}`,
      `/v1/document.php/${randomUUID()}?simple`,
      '/v1/document.php/not-a-uuid',
    ]) {
      const reply = await server.request('GET', path);
      assert.equal(reply.status, 404, path);
      assert.equal(reply.body.code, 'notFound');
    }
    const user = await register();
    const created = await publish(user);
    for (const query of ['simple', 'simple=1', 'simple=true']) {
      const reply = await server.request('GET', `/v1/document.php/${created.document_id}?${query}`);
      assert.equal(reply.status, 200);
      assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(reply.body, created);
    }
    const unknown = await server.request('GET', `/v1/document.php/${created.document_id}?format=json`);
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.details.parameter, 'format');
  });
});

describe('GET /v1/document.php/<id>,<id>', () => {
  test('answers the metadata of those found, in the order asked; 404 when none is found', async () => {
    const user = await register();
    const a = await publish(user);
    const b = await publish(user);
    const several = await server.request(
      'GET',
      `/v1/document.php/${b.document_id},${randomUUID()},not-a-uuid,${a.document_id.toUpperCase()}`,
    );
    assert.equal(several.status, 200, several.text);
    assert.deepEqual(several.body, [b, a]);
    const one = await server.request('GET', `/v1/document.php/${a.document_id},${randomUUID()}`);
    assert.deepEqual(one.body, [a]);
    const withSimple = await server.request('GET', `/v1/document.php/${a.document_id},${b.document_id}?simple`);
    assert.deepEqual(withSimple.body, [a, b]);
    assert.equal((await metadata(a.document_id)).download_count, 0);
    const none = await server.request('GET', `/v1/document.php/${randomUUID()},${randomUUID()}`);
    assert.equal(none.status, 404);
    assert.equal(none.body.code, 'notFound');
  });
});

describe('HEAD /v1/document.php/<id>', () => {
  test('200 published, 404 not published, 405 for a non-UUID or several ids; never a body', async () => {
    const user = await register();
    const a = await publish(user);
    const b = await publish(user);
    const check = async (path: string, status: number) => {
      const response = await fetch(server.url + path, { method: 'HEAD' });
      assert.equal(response.status, status, path);
      assert.equal(await response.text(), '');
    };
    await check(`/v1/document.php/${a.document_id}`, 200);
    await check(`/v1/document.php/${a.document_id.toUpperCase()}`, 200);
    await check(`/v1/document.php/${randomUUID()}`, 404);
    await check('/v1/document.php/not-a-uuid', 405);
    await check(`/v1/document.php/${a.document_id},${b.document_id}`, 405);
    await check(`/v1/document.php/${a.document_id},`, 405);
    const response = await fetch(`${server.url}/v1/document.php/nope`, { method: 'HEAD' });
    assert.ok(response.headers.get('allow'));
    assert.equal((await metadata(a.document_id)).download_count, 0);
  });
});

describe('GET /v1/document.php (list)', () => {
  let owner: TestUser;
  /** Ids in creation order, with (last_updated, download_count) set so that some tie. */
  let ids: string[];
  const base = Date.UTC(2024, 0, 2, 3, 4, 5);
  const rows = [
    { last_updated: base + 3000, download_count: 5 },
    { last_updated: base + 1000, download_count: 9 },
    { last_updated: base + 2000, download_count: 5 },
    { last_updated: base + 2000, download_count: 0 },
    { last_updated: base + 2000, download_count: 9 },
  ];

  before(async () => {
    owner = await register();
    ids = [];
    for (const values of rows) {
      const created = await publish(owner);
      await setRow(created.document_id, values);
      ids.push(created.document_id);
    }
    // Another user's documents must not appear in owner's list.
    await publish(await register());
  });

  const list = async (query: string) => {
    const reply = await server.request('GET', `/v1/document.php?${query}`);
    assert.equal(reply.status, 200, reply.text);
    return reply.body as Array<Record<string, any>>;
  };
  /** ids ordered by (key, document_id), both in `direction`. */
  const expected = (key: 'last_updated' | 'download_count', direction: 'asc' | 'desc') => {
    const sign = direction === 'asc' ? 1 : -1;
    return rows
      .map((row, index) => ({ ...row, id: ids[index]! }))
      .sort((x, y) => sign * (x[key] - y[key] || (x.id < y.id ? -1 : 1)))
      .map((row) => row.id);
  };

  test('defaults to last_updated, newest first, ties by document_id; the metadata is complete', async () => {
    const body = await list(`user_id=${owner.userId}`);
    assert.deepEqual(
      body.map((m) => m.document_id),
      expected('last_updated', 'desc'),
    );
    const first = body.find((m) => m.document_id === ids[0]);
    assert.equal(first!.last_updated, '2024-01-02 03:04:08+0000');
    assert.equal(first!.download_count, 5);
    assert.equal(first!.user_id, owner.userId);
    assert.equal(first!.resource_url, `https://${TEST_HOST}/v1/document.php/${ids[0]}`);
  });

  test('sort and direction', async () => {
    for (const sort of ['last_updated', 'download_count'] as const) {
      for (const direction of ['asc', 'desc'] as const) {
        const body = await list(`user_id=${owner.userId.toUpperCase()}&sort=${sort}&direction=${direction}`);
        assert.deepEqual(
          body.map((m) => m.document_id),
          expected(sort, direction),
          `${sort} ${direction}`,
        );
      }
    }
    assert.deepEqual(
      (await list(`direction=asc&user_id=${owner.userId}`)).map((m) => m.document_id),
      expected('last_updated', 'asc'),
    );
  });

  test('count and offset page through the results without gaps or repeats', async () => {
    const all = expected('download_count', 'desc');
    const pages: string[] = [];
    for (let offset = 0; offset < all.length; offset += 2) {
      const page = await list(`user_id=${owner.userId}&sort=download_count&count=2&offset=${offset}`);
      assert.ok(page.length <= 2);
      pages.push(...page.map((m) => m.document_id));
    }
    assert.deepEqual(pages, all);
    assert.deepEqual(
      (await list(`user_id=${owner.userId}&sort=download_count&offset=3`)).map((m) => m.document_id),
      all.slice(3),
    );
    assert.deepEqual(await list(`user_id=${owner.userId}&offset=100`), []);
    assert.deepEqual(
      (await list(`user_id=${owner.userId}&count=1`)).map((m) => m.document_id),
      expected('last_updated', 'desc').slice(0, 1),
    );
    assert.deepEqual(await list(`user_id=${randomUUID()}`), []);
  });

  test("without user_id every user's documents are listed", async () => {
    const body = await list('count=1000');
    const listed = new Set(body.map((m) => m.document_id));
    for (const id of ids) assert.ok(listed.has(id));
    assert.ok(new Set(body.map((m) => m.user_id)).size > 1);
  });

  for (const [query, parameter] of [
    ['sort=name', 'sort'],
    ['sort=', 'sort'],
    ['sort=LAST_UPDATED', 'sort'],
    ['direction=up', 'direction'],
    ['count=0', 'count'],
    ['count=-1', 'count'],
    ['count=1.5', 'count'],
    ['count=abc', 'count'],
    ['count=', 'count'],
    ['count=99999999999999999999', 'count'],
    ['offset=-1', 'offset'],
    ['offset=x', 'offset'],
    ['offset=1e3', 'offset'],
    ['user_id=nope', 'user_id'],
    ['user_id=', 'user_id'],
    ['page=2', 'page'],
    ['simple', 'simple'],
    ['sort=last_updated&sort=download_count', 'sort'],
  ] as const) {
    test(`?${query} is 400 naming ${parameter}`, async () => {
      const reply = await server.request('GET', `/v1/document.php?${query}`);
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.body.code, 'badRequest');
      assert.equal(reply.body.details.parameter, parameter);
      assert.match(reply.body.message, new RegExp(parameter));
    });
  }
});

describe('DELETE /v1/document.php', () => {
  test('the owner deletes documents by path; they are gone', async () => {
    const user = await register();
    const a = await publish(user);
    const b = await publish(user);
    const path = `/v1/document.php/${a.document_id.toUpperCase()},${b.document_id}`;
    const reply = await signed(user, 'DELETE', path);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, { deleted: [a.document_id, b.document_id] });
    assert.equal((await server.request('HEAD', `/v1/document.php/${a.document_id}`)).status, 404);
    assert.equal((await server.request('GET', `/v1/document.php/${b.document_id}`)).status, 404);
  });

  test('the owner deletes documents listed in a text/plain body', async () => {
    const user = await register();
    const a = await publish(user);
    const b = await publish(user);
    const reply = await signed(
      user,
      'DELETE',
      '/v1/document.php',
      ` ${a.document_id} ,${b.document_id.toUpperCase()}\n`,
      'text/plain',
    );
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, { deleted: [a.document_id, b.document_id] });
    assert.equal((await server.request('GET', `/v1/document.php/${a.document_id},${b.document_id}`)).status, 404);
    const single = await publish(user);
    const one = await signed(user, 'DELETE', '/v1/document.php', single.document_id, 'text/plain');
    assert.deepEqual(one.body, { deleted: [single.document_id] });
  });

  test("another user's document is 403 and nothing is deleted", async () => {
    const user = await register();
    const other = await register();
    const mine = await publish(user);
    const theirs = await publish(other);
    const reply = await signed(user, 'DELETE', `/v1/document.php/${mine.document_id},${theirs.document_id}`);
    assert.equal(reply.status, 403, reply.text);
    assert.equal(reply.body.details.document_id, theirs.document_id);
    assert.equal((await server.request('HEAD', `/v1/document.php/${mine.document_id}`)).status, 200);
    assert.equal((await server.request('HEAD', `/v1/document.php/${theirs.document_id}`)).status, 200);
  });

  test('concurrent overlapping deletes: exactly one succeeds, the others are 404', async () => {
    const user = await register();
    const ids = [
      (await publish(user)).document_id,
      (await publish(user)).document_id,
      (await publish(user)).document_id,
    ];
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        signed(user, 'DELETE', '/v1/document.php', (i % 2 ? [...ids].reverse() : ids).join(','), 'text/plain'),
      ),
    );
    assert.deepEqual(replies.map((r) => r.status).sort(), [200, ...Array(9).fill(404)]);
    assert.equal((await server.request('GET', `/v1/document.php/${ids.join(',')}`)).status, 404);
  });

  test('a missing document is 404 and nothing is deleted', async () => {
    const user = await register();
    const mine = await publish(user);
    const missing = randomUUID();
    const reply = await signed(user, 'DELETE', '/v1/document.php', `${mine.document_id},${missing}`, 'text/plain');
    assert.equal(reply.status, 404, reply.text);
    assert.equal(reply.body.details.document_id, missing);
    assert.equal((await server.request('HEAD', `/v1/document.php/${mine.document_id}`)).status, 200);
  });

  test('bad requests are 400; an unsigned one is 401', async () => {
    const user = await register();
    const mine = await publish(user);
    const cases: Array<[string, string | undefined, string]> = [
      [`/v1/document.php/${mine.document_id},nope`, undefined, 'application/json'],
      ['/v1/document.php', mine.document_id, 'application/json'],
      ['/v1/document.php', ' , ', 'text/plain'],
      ['/v1/document.php', undefined, 'text/plain'],
    ];
    for (const [path, body, type] of cases) {
      const reply = await signed(user, 'DELETE', path, body, type);
      assert.equal(reply.status, 400, `${path} ${body}: ${reply.text}`);
      assert.equal(reply.body.code, 'badRequest');
    }
    assert.equal((await server.request('DELETE', `/v1/document.php/${mine.document_id}`)).status, 401);
    assert.equal((await server.request('HEAD', `/v1/document.php/${mine.document_id}`)).status, 200);
  });
});

describe('deleting a user', () => {
  test("removes the user's documents and only those", async () => {
    const user = await register();
    const other = await register();
    const a = await publish(user);
    const b = await publish(user);
    const kept = await publish(other);
    const path = `/v1/user.php/${user.userId}`;
    const reply = await server.request('DELETE', path, { headers: signedHeaders(user, 'DELETE', path) });
    assert.equal(reply.status, 200, reply.text);
    assert.equal((await server.request('GET', `/v1/document.php/${a.document_id},${b.document_id}`)).status, 404);
    assert.deepEqual(await server.request('GET', `/v1/document.php?user_id=${user.userId}`).then((r) => r.body), []);
    assert.equal((await server.request('HEAD', `/v1/document.php/${kept.document_id}`)).status, 200);
    const rows = await server.app.database.db
      .selectFrom('documents')
      .select('document_id')
      .where('user_id', '=', user.userId)
      .execute();
    assert.deepEqual(rows, []);
  });
});

test('other methods on the document paths are 405 with Allow', async () => {
  const reply = await server.request('PUT', `/v1/document.php/${randomUUID()}`, {
    body: '{}',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(reply.status, 405);
  assert.match(reply.headers.get('allow') ?? '', /GET/);
});

describe('downloadDocument counts downloads of the same turn together', () => {
  test('each download of the batch adds one and gets its own document; a missing one is undefined', async () => {
    const { downloadDocument } = await import('../../src/legacy/documents/store.ts');
    const user = await register();
    const a = await publish(user, { Title: 'Batch A' });
    const b = await publish(user, { Title: 'Batch B' });
    const db = server.app.database.db;
    const answers = await Promise.all(
      [a, b, a, { document_id: randomUUID() }, a].map((doc) => downloadDocument(db, doc.document_id)),
    );
    assert.deepEqual(
      answers.map((answer) => answer?.name),
      ['Batch A', 'Batch B', 'Batch A', undefined, 'Batch A'],
    );
    assert.equal((await metadata(a.document_id)).download_count, 3);
    assert.equal((await metadata(b.document_id)).download_count, 1);
  });
});
