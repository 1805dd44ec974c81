import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { basicAuth, newUser, signatureHex, type TestUser, textToSign } from '../helpers/keys.ts';
import { type Reply, startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';
import { confirmedMod, publishMod, registerUser, signed } from '../helpers/v1.ts';
import { FakeWorkshop } from '../helpers/workshop.ts';

const workshop = new FakeWorkshop();
before(() => workshop.start());
after(() => workshop.stop());

/** One server (with its own fresh database) for the enclosing describe. */
function serverPerSuite(): { server: TestServer } {
  const context = {} as { server: TestServer };
  before(async () => {
    context.server = await startServer({ env: { WORKSHOP_URL: workshop.template } });
  });
  after(() => context.server.close());
  return context;
}

const BASE = `https://${TEST_HOST}`;
const ENVIRONMENTS = ['Island', 'Scorched', 'Center', 'Ragnarok', 'Abberation'] as const;

/** The names of the set bits of an availability mask, in the spec's order; written independently of the server. */
const namesOf = (bits: number) => ENVIRONMENTS.filter((_, index) => (bits & (1 << index)) !== 0);
const md5 = (text: string) => createHash('md5').update(text).digest('hex');

interface EngramInput {
  path: string;
  label: string;
  mod_id: number | string;
  availability: number | string[];
  can_blueprint: boolean;
  [key: string]: unknown;
}

let serial = 0;
/** A complete write structure for a new engram of `modId`, with a path nobody else uses. */
function engramFor(modId: string, overrides: Partial<EngramInput> = {}): EngramInput {
  const n = ++serial;
  const object = `PrimalItem_Thing${n}`;
  return {
    path: `/Game/Mods/${modId}/Items/${object}.${object}`,
    label: `Thing ${n}`,
    mod_id: Number(modId),
    availability: 31,
    can_blueprint: true,
    ...overrides,
  };
}

/** The Engram structure the service should answer for a stored engram. */
function expected(
  input: { path: string; label: string; mod_id: number | string },
  environments: readonly string[],
  canBlueprint: boolean,
  modName: string,
) {
  const object = input.path.slice(input.path.lastIndexOf('.') + 1);
  const uid = md5(input.path.toLowerCase());
  return {
    path: input.path,
    class: `${object}_C`,
    label: input.label,
    environments: [...environments],
    can_blueprint: canBlueprint,
    spawn: `cheat giveitem "Blueprint'${input.path}'" 1 0 false`,
    uid,
    resource_url: `${BASE}/v1/engram.php/${uid}`,
    mod_id: Number(input.mod_id),
    mod_name: modName,
  };
}

/** A v1 user with one confirmed mod of their own. */
async function ownerWithMod(server: TestServer): Promise<{ user: TestUser; modId: string; modName: string }> {
  const user = await registerUser(server, 'ed25519');
  const modId = publishMod(workshop);
  const mod = await confirmedMod(server, workshop, user, modId);
  return { user, modId, modName: mod.name };
}

async function post(server: TestServer, user: TestUser, body: unknown): Promise<Reply> {
  return signed(server, user, 'POST', '/v1/engram.php', body);
}

async function publish(server: TestServer, user: TestUser, body: EngramInput | EngramInput[]) {
  const reply = await post(server, user, body);
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

/** The engrams of one mod, as the public list shows them. */
async function listOfMod(server: TestServer, modId: string): Promise<any[]> {
  const reply = await server.request('GET', `/v1/engram.php?mod_id=${modId}`);
  assert.equal(reply.status, 200, reply.text);
  assert.ok(Array.isArray(reply.body), reply.text);
  return reply.body;
}

async function assertAbsent(server: TestServer, path: string) {
  const reply = await server.request('GET', `/v1/engram.php/${md5(path.toLowerCase())}`);
  assert.equal(reply.status, 404, `${path} should not exist: ${reply.text}`);
}

describe('publishing engrams for a confirmed mod', () => {
  const context = serverPerSuite();

  test('a published engram answers the full Engram structure, with uid, class, spawn and URLs derived from the path', async () => {
    const { server } = context;
    const { user, modId, modName } = await ownerWithMod(server);
    const input = engramFor(modId, { availability: 5, can_blueprint: true });
    const want = expected(input, ['Island', 'Center'], true, modName);

    const saved = await post(server, user, input);
    assert.equal(saved.status, 200, saved.text);
    assert.match(saved.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(saved.body, want);
    assert.equal(saved.body.uid, md5(input.path.toLowerCase()));

    // Every lookup shows the same structure, without a signature.
    assert.deepEqual((await server.request('GET', `/v1/engram.php/${want.uid}`)).body, want);
    assert.deepEqual((await server.request('GET', new URL(want.resource_url).pathname)).body, want);
    assert.deepEqual((await server.request('GET', `/v1/engram.php/${want.class}`)).body, want);
    assert.deepEqual(await listOfMod(server, modId), [want]);
    const all = await server.request('GET', '/v1/engram.php');
    assert.equal(all.status, 200);
    assert.deepEqual(
      all.body.find((engram: { uid: string }) => engram.uid === want.uid),
      want,
    );
  });

  test("the mod's engrams_url lists the engrams published for it", async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const mod = (await signed(server, user, 'GET', `/v1/mod.php/${modId}`)).body;
    const engram = await publish(server, user, engramFor(modId));
    const url = new URL(mod.engrams_url);
    assert.equal(url.origin, BASE);
    const listed = await server.request('GET', url.pathname + url.search);
    assert.deepEqual(listed.body, [engram]);
  });

  test('an array is published at once and answered as an array in the order sent', async () => {
    const { server } = context;
    const { user, modId, modName } = await ownerWithMod(server);
    const inputs = [
      engramFor(modId, { availability: 1, can_blueprint: false }),
      engramFor(modId, { availability: 2 }),
      engramFor(modId, { availability: 24 }),
    ];
    const body = await publish(server, user, inputs);
    const want = [
      expected(inputs[0]!, ['Island'], false, modName),
      expected(inputs[1]!, ['Scorched'], true, modName),
      expected(inputs[2]!, ['Ragnarok', 'Abberation'], true, modName),
    ];
    assert.deepEqual(body, want);
    const byUid = (a: { uid: string }, b: { uid: string }) => a.uid.localeCompare(b.uid);
    assert.deepEqual((await listOfMod(server, modId)).sort(byUid), [...want].sort(byUid));
    // Several uids in the path answer an array.
    const several = await server.request('GET', `/v1/engram.php/${want[0]!.uid},${want[2]!.uid}`);
    assert.equal(several.status, 200);
    assert.deepEqual(several.body.sort(byUid), [want[0]!, want[2]!].sort(byUid));
    // An array of one is still answered as an array.
    const one = await publish(server, user, [engramFor(modId)]);
    assert.ok(Array.isArray(one) && one.length === 1);
  });

  test('every availability bitmask from 0 to 31 is emitted as the matching environment names', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const inputs = Array.from({ length: 32 }, (_, bits) => engramFor(modId, { availability: bits }));
    const body = await publish(server, user, inputs);
    for (const [bits, engram] of body.entries())
      assert.deepEqual(engram.environments, namesOf(bits), `availability ${bits}`);
    assert.deepEqual(body[0].environments, []);
    assert.deepEqual(body[31].environments, ['Island', 'Scorched', 'Center', 'Ragnarok', 'Abberation']);
  });

  test('availability is also accepted as an array of environment names in any case, emitted in canonical spelling and order', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const inputs = [
      engramFor(modId, { availability: ['abberation', 'ISLAND', 'Center'] }),
      engramFor(modId, { availability: [] }),
      engramFor(modId, { availability: ['Scorched', 'scorched'] }),
      engramFor(modId, { availability: [...ENVIRONMENTS] }),
    ];
    const body = await publish(server, user, inputs);
    assert.deepEqual(
      body.map((engram: { environments: string[] }) => engram.environments),
      [['Island', 'Center', 'Abberation'], [], ['Scorched'], [...ENVIRONMENTS]],
    );
    // What was stored is what the names meant: reading back shows the same.
    const read = (await server.request('GET', `/v1/engram.php/${body[0].uid}`)).body;
    assert.deepEqual(read.environments, ['Island', 'Center', 'Abberation']);
  });

  test('environments overrides availability when both are given, and may stand in for it', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const both = engramFor(modId, { availability: 31, environments: ['ragnarok'] });
    const instead = engramFor(modId);
    delete (instead as Partial<EngramInput>).availability;
    instead.environments = ['Island', 'Scorched'];
    const body = await publish(server, user, [both, instead]);
    assert.deepEqual(body[0].environments, ['Ragnarok']);
    assert.deepEqual(body[1].environments, ['Island', 'Scorched']);
    // An engram's environments can be read, changed and sent back as they are.
    const roundTrip = await publish(server, user, { ...body[1], environments: [...body[1].environments, 'Center'] });
    assert.deepEqual(roundTrip.environments, ['Island', 'Scorched', 'Center']);
  });

  test('mod_id may be sent as a number or a digit string and is emitted as an integer', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const body = await publish(server, user, [
      engramFor(modId, { mod_id: modId }),
      engramFor(modId, { mod_id: Number(modId) }),
    ]);
    assert.deepEqual(
      body.map((engram: { mod_id: unknown }) => engram.mod_id),
      [Number(modId), Number(modId)],
    );
  });

  test('keys outside the write set, and derived values sent back, are ignored', async () => {
    const { server } = context;
    const { user, modId, modName } = await ownerWithMod(server);
    const input = engramFor(modId);
    const body = await publish(server, user, {
      ...input,
      class: 'Bogus_C',
      uid: '0123456789abcdef0123456789abcdef',
      spawn: 'cheat nothing',
      resource_url: 'https://elsewhere.example/x',
      mod_name: 'Another name',
      colour: 'green',
    });
    assert.deepEqual(body, expected(input, [...ENVIRONMENTS], true, modName));
    assert.equal((await server.request('GET', '/v1/engram.php/Bogus_C')).status, 404);
  });

  test('the path is trimmed, and its uid is the MD5 of the lowercase path; uid lookups ignore case', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const input = engramFor(modId, { path: `  /Game/Mods/${modId}/MixedCase/PrimalItem_UPPER.PrimalItem_UPPER \n` });
    const body = await publish(server, user, input);
    const path = `/Game/Mods/${modId}/MixedCase/PrimalItem_UPPER.PrimalItem_UPPER`;
    assert.equal(body.path, path);
    assert.equal(body.uid, md5(path.toLowerCase()));
    assert.equal(body.class, 'PrimalItem_UPPER_C');
    const upper = await server.request('GET', `/v1/engram.php/${body.uid.toUpperCase()}`);
    assert.equal(upper.status, 200);
    assert.equal(upper.body.uid, body.uid);
  });

  test('the class is the object name after the last dot plus _C, and not doubled when already there', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const cases: Array<[string, string]> = [
      [`/Game/Mods/${modId}/A/PrimalItemResource_Gem.PrimalItemResource_Gem`, 'PrimalItemResource_Gem_C'],
      [`/Game/Mods/${modId}/B/BP_Sword.BP_Sword_C`, 'BP_Sword_C'],
      [`/Game/Mods/${modId}/C/NoDot`, 'NoDot_C'],
    ];
    const body = await publish(
      server,
      user,
      cases.map(([path]) => engramFor(modId, { path })),
    );
    assert.deepEqual(
      body.map((engram: { class: string }) => engram.class),
      cases.map(([, cls]) => cls),
    );
  });

  test('a class shared by several engrams answers an array; a class list answers every match', async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const object = `PrimalItem_Shared${++serial}`;
    const a = await publish(server, alice.user, engramFor(alice.modId, { path: `/Game/Mods/A/${object}.${object}` }));
    const b = await publish(server, bob.user, engramFor(bob.modId, { path: `/Game/Mods/B/${object}.${object}` }));
    assert.equal(a.class, b.class);
    assert.notEqual(a.uid, b.uid);
    const byUid = (x: { uid: string }, y: { uid: string }) => x.uid.localeCompare(y.uid);

    const shared = await server.request('GET', `/v1/engram.php/${a.class}`);
    assert.equal(shared.status, 200);
    assert.deepEqual(shared.body.sort(byUid), [a, b].sort(byUid));
    assert.deepEqual(
      shared.body.map((engram: { mod_name: string }) => engram.mod_name).sort(),
      [alice.modName, bob.modName].sort(),
    );

    const other = await publish(server, alice.user, engramFor(alice.modId));
    const list = await server.request('GET', `/v1/engram.php/${a.class},${other.class}`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.sort(byUid), [a, b, other].sort(byUid));
    // A list mixing a uid and a class.
    const mixed = await server.request('GET', `/v1/engram.php/${other.uid},${a.class}`);
    assert.deepEqual(mixed.body.sort(byUid), [a, b, other].sort(byUid));
  });

  test('a class lookup is exact: other spellings and prefixes find nothing', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const engram = await publish(server, user, engramFor(modId));
    assert.equal((await server.request('GET', `/v1/engram.php/${engram.class}`)).status, 200);
    for (const wrong of [engram.class.toLowerCase(), engram.class.slice(0, -2), `${engram.class}X`]) {
      const reply = await server.request('GET', `/v1/engram.php/${wrong}`);
      assert.equal(reply.status, 404, wrong);
      assert.equal(reply.body.code, 'notFound');
    }
  });

  test('unknown uids and classes are 404; a list answers only those found; an empty list is 400', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const engram = await publish(server, user, engramFor(modId));
    const missingUid = md5('/game/nothing/here');
    const none = await server.request('GET', `/v1/engram.php/${missingUid}`);
    assert.equal(none.status, 404);
    assert.deepEqual(Object.keys(none.body).sort(), ['code', 'message']);
    assert.equal(none.body.code, 'notFound');
    assert.equal((await server.request('GET', `/v1/engram.php/${missingUid},Nothing_C`)).status, 404);
    const partial = await server.request('GET', `/v1/engram.php/${missingUid},${engram.uid}`);
    assert.equal(partial.status, 200);
    assert.deepEqual(partial.body, [engram]);
    const empty = await server.request('GET', '/v1/engram.php/,');
    assert.equal(empty.status, 400);
    assert.equal(empty.body.code, 'badRequest');
  });

  test('?mod_id= limits the list to the given mods; a mod without engrams lists nothing; a bad id is 400', async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const a = await publish(server, alice.user, [engramFor(alice.modId), engramFor(alice.modId)]);
    const b = await publish(server, bob.user, engramFor(bob.modId));
    const byUid = (x: { uid: string }, y: { uid: string }) => x.uid.localeCompare(y.uid);

    const both = await server.request('GET', `/v1/engram.php?mod_id=${alice.modId},${bob.modId}`);
    assert.equal(both.status, 200);
    assert.deepEqual(both.body.sort(byUid), [...a, b].sort(byUid));
    assert.deepEqual(await listOfMod(server, bob.modId), [b]);
    assert.deepEqual(await listOfMod(server, publishMod(workshop)), []);
    for (const bad of ['abc', '-4', `${alice.modId},x`]) {
      const reply = await server.request('GET', `/v1/engram.php?mod_id=${bad}`);
      assert.equal(reply.status, 400, bad);
      assert.equal(reply.body.code, 'badRequest');
    }
  });

  test('the full list shows every engram of every mod exactly once, without a signature', async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const mine = await publish(server, alice.user, engramFor(alice.modId));
    const theirs = await publish(server, bob.user, engramFor(bob.modId));
    const all = await server.request('GET', '/v1/engram.php');
    assert.equal(all.status, 200);
    const uids = all.body.map((engram: { uid: string }) => engram.uid);
    assert.equal(new Set(uids).size, uids.length);
    assert.deepEqual(
      all.body.find((e: { uid: string }) => e.uid === mine.uid),
      mine,
    );
    assert.deepEqual(
      all.body.find((e: { uid: string }) => e.uid === theirs.uid),
      theirs,
    );
  });

  test('an empty database lists an empty array', async () => {
    const server = await startServer({ env: { WORKSHOP_URL: workshop.template } });
    try {
      const reply = await server.request('GET', '/v1/engram.php');
      assert.equal(reply.status, 200);
      assert.equal(reply.text, '[]');
      assert.match(reply.headers.get('content-type') ?? '', /application\/json/);
    } finally {
      await server.close();
    }
  });
});

describe('rules for writing engrams', () => {
  const context = serverPerSuite();

  test('POST and DELETE without a signature are 401 with WWW-Authenticate: Basic, and write nothing', async () => {
    const { server } = context;
    const { modId } = await ownerWithMod(server);
    const input = engramFor(modId);
    const posted = await server.request('POST', '/v1/engram.php', { body: input });
    assert.equal(posted.status, 401);
    assert.equal(posted.body.code, 'unauthorized');
    assert.match(posted.headers.get('www-authenticate') ?? '', /^Basic/);
    await assertAbsent(server, input.path);
    for (const path of ['/v1/engram.php/Anything_C', '/v1/engram.php']) {
      const reply = await server.request('DELETE', path);
      assert.equal(reply.status, 401, path);
      assert.match(reply.headers.get('www-authenticate') ?? '', /^Basic/);
    }
  });

  test('a wrong signature is 403 with the text to sign in details, and writes nothing', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const input = engramFor(modId);
    const body = JSON.stringify(input);
    const wantText = textToSign('POST', '/v1/engram.php', body);

    // Signed for another body.
    const tampered = await server.request('POST', '/v1/engram.php', {
      headers: {
        authorization: basicAuth(user.userId, signatureHex(user, textToSign('POST', '/v1/engram.php', '{}'))),
        'content-type': 'application/json',
      },
      body,
    });
    assert.equal(tampered.status, 403);
    assert.equal(tampered.body.code, 'forbidden');
    assert.equal(tampered.body.details, wantText);

    // Signed with someone else's key under this user's id.
    const stranger = newUser('ed25519');
    const wrongKey = await server.request('POST', '/v1/engram.php', {
      headers: {
        authorization: basicAuth(user.userId, signatureHex(stranger, wantText)),
        'content-type': 'application/json',
      },
      body,
    });
    assert.equal(wrongKey.status, 403);

    // An unknown user, and a header that is not Basic.
    const unknown = await server.request('POST', '/v1/engram.php', {
      headers: {
        authorization: basicAuth(stranger.userId, signatureHex(stranger, wantText)),
        'content-type': 'application/json',
      },
      body,
    });
    assert.equal(unknown.status, 403);
    const bearer = await server.request('POST', '/v1/engram.php', {
      headers: { authorization: 'Bearer abc', 'content-type': 'application/json' },
      body,
    });
    assert.equal(bearer.status, 403);
    await assertAbsent(server, input.path);
  });

  test('every signature algorithm the service supports can publish', async () => {
    const { server } = context;
    for (const algorithm of ['rsa-sha1', 'rsa-sha256', 'ed25519'] as const) {
      const user = await registerUser(server, algorithm);
      const mod = await confirmedMod(server, workshop, user);
      const reply = await post(server, user, engramFor(mod.mod_id));
      assert.equal(reply.status, 200, `${algorithm}: ${reply.text}`);
    }
  });

  test('publishing to a mod that is not confirmed is 403 and writes nothing', async () => {
    const { server } = context;
    const user = await registerUser(server, 'ed25519');
    const modId = publishMod(workshop);
    assert.equal((await signed(server, user, 'POST', '/v1/mod.php', { mod_id: modId })).status, 200);
    const input = engramFor(modId);
    const reply = await post(server, user, input);
    assert.equal(reply.status, 403, reply.text);
    assert.equal(reply.body.code, 'forbidden');
    assert.equal(reply.body.details.path, input.path);
    assert.match(reply.body.message, new RegExp(modId));
    await assertAbsent(server, input.path);
  });

  test("publishing to another user's confirmed mod is 403, to a mod nobody registered 404; both write nothing", async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const input = engramFor(alice.modId);
    const reply = await post(server, bob.user, input);
    assert.equal(reply.status, 403, reply.text);
    assert.equal(reply.body.code, 'forbidden');
    await assertAbsent(server, input.path);
    assert.deepEqual(await listOfMod(server, alice.modId), []);

    const nobodys = engramFor(publishMod(workshop));
    const orphan = await post(server, bob.user, nobodys);
    assert.equal(orphan.status, 404, orphan.text);
    assert.equal(orphan.body.code, 'notFound');
    assert.equal(orphan.body.details.path, nobodys.path);
    await assertAbsent(server, nobodys.path);
  });

  test('a path already held by another mod is 400, whatever its case, and the holder keeps it', async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const original = await publish(server, alice.user, engramFor(alice.modId));

    const taken = await post(
      server,
      bob.user,
      engramFor(bob.modId, { path: original.path.toUpperCase(), label: 'Stolen' }),
    );
    assert.equal(taken.status, 400, taken.text);
    assert.equal(taken.body.code, 'badRequest');
    assert.equal(taken.body.details.path, original.path.toUpperCase());
    assert.match(taken.body.message, new RegExp(alice.modId));

    // Another mod of the same user may not take it either.
    const second = await confirmedMod(server, workshop, alice.user);
    const moved = await post(server, alice.user, engramFor(second.mod_id, { path: original.path }));
    assert.equal(moved.status, 400, moved.text);

    assert.deepEqual((await server.request('GET', `/v1/engram.php/${original.uid}`)).body, original);
    assert.deepEqual(await listOfMod(server, bob.modId), []);
    assert.deepEqual(await listOfMod(server, second.mod_id), []);
  });

  test('engrams of different mods may share a class string', async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const object = `PrimalItem_Common${++serial}`;
    await publish(server, alice.user, engramFor(alice.modId, { path: `/Game/Mods/One/${object}.${object}` }));
    const second = await post(server, bob.user, engramFor(bob.modId, { path: `/Game/Mods/Two/${object}.${object}` }));
    assert.equal(second.status, 200, second.text);
  });

  const invalidFields: Array<[string, Record<string, unknown>]> = [
    ['path', { path: '' }],
    ['path', { path: '   ' }],
    ['path', { path: 42 }],
    ['path', { path: null }],
    ['path', { path: `/Game/${'x'.repeat(1100)}.Long` }],
    ['label', { label: '' }],
    ['label', { label: '  ' }],
    ['label', { label: 7 }],
    ['mod_id', { mod_id: 'abc' }],
    ['mod_id', { mod_id: -1 }],
    ['mod_id', { mod_id: 0 }],
    ['mod_id', { mod_id: 1.5 }],
    ['mod_id', { mod_id: true }],
    ['availability', { availability: 32 }],
    ['availability', { availability: -1 }],
    ['availability', { availability: 1.5 }],
    ['availability', { availability: '3' }],
    ['availability', { availability: null }],
    ['availability', { availability: ['Moon'] }],
    ['availability', { availability: [1] }],
    ['environments', { environments: 'Island' }],
    ['environments', { environments: ['Island', 'Atlantis'] }],
    ['can_blueprint', { can_blueprint: 'yes' }],
    ['can_blueprint', { can_blueprint: 1 }],
    ['can_blueprint', { can_blueprint: null }],
  ];

  test('each invalid field is 400 with details naming it, and nothing is written', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    for (const [field, change] of invalidFields) {
      const input = { ...engramFor(modId), ...change };
      const reply = await post(server, user, input);
      const label = `${field} ${JSON.stringify(change).slice(0, 60)}`;
      assert.equal(reply.status, 400, `${label}: ${reply.text}`);
      assert.equal(reply.body.code, 'badRequest', label);
      assert.equal(typeof reply.body.message, 'string', label);
      assert.equal(reply.body.details?.field, field, `${label}: ${reply.text}`);
    }
    assert.deepEqual(await listOfMod(server, modId), []);
  });

  test('an invalid field of an array element is 400 naming the field and the element index', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const reply = await post(server, user, [
      engramFor(modId),
      engramFor(modId),
      engramFor(modId, { availability: 99 }),
    ]);
    assert.equal(reply.status, 400);
    assert.equal(reply.body.details.field, 'availability');
    assert.equal(reply.body.details.index, 2);
    assert.deepEqual(await listOfMod(server, modId), []);
  });

  test('a new engram without a required key is 400 naming the key, and nothing is written', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    for (const key of ['label', 'mod_id', 'availability', 'can_blueprint'] as const) {
      const input: Partial<EngramInput> = engramFor(modId);
      delete input[key];
      const reply = await post(server, user, input);
      assert.equal(reply.status, 400, `${key}: ${reply.text}`);
      assert.equal(reply.body.code, 'badRequest');
      assert.match(reply.body.message, new RegExp(key));
      assert.deepEqual(reply.body.details.fields, [key], reply.text);
      await assertAbsent(server, input.path!);
    }
    const pathless: Partial<EngramInput> = engramFor(modId);
    delete pathless.path;
    const reply = await post(server, user, pathless);
    assert.equal(reply.status, 400);
    assert.equal(reply.body.details.field, 'path');
    assert.deepEqual(await listOfMod(server, modId), []);
  });

  test('a body that is not a JSON object or array of objects is 400', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const cases: Array<[string, string, string]> = [
      ['not json', '{"path":', 'application/json'],
      ['empty body', '', 'application/json'],
      ['wrong content type', JSON.stringify(engramFor(modId)), 'text/plain'],
      ['empty array', '[]', 'application/json'],
      ['a number', '42', 'application/json'],
      ['null', 'null', 'application/json'],
      ['an array holding null', `[${JSON.stringify(engramFor(modId))},null]`, 'application/json'],
      ['an array holding an array', '[[]]', 'application/json'],
      ['a prototype key', `{"__proto__":{"x":1},"path":"/Game/P.P"}`, 'application/json'],
    ];
    for (const [name, body, contentType] of cases) {
      const reply = await signed(server, user, 'POST', '/v1/engram.php', body, contentType);
      assert.equal(reply.status, 400, `${name}: ${reply.text}`);
      assert.equal(reply.body.code, 'badRequest', name);
    }
    assert.deepEqual(await listOfMod(server, modId), []);
  });

  test('one path twice in an array (in any case) is 400 and writes nothing', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const first = engramFor(modId);
    const reply = await post(server, user, [
      engramFor(modId),
      first,
      { ...first, path: first.path.toLowerCase(), label: 'Again' },
    ]);
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.details.index, 2);
    assert.deepEqual(await listOfMod(server, modId), []);
  });

  test('an array is all or nothing: one element breaking a rule writes none of the others', async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const held = await publish(server, bob.user, engramFor(bob.modId));
    const existing = await publish(server, alice.user, engramFor(alice.modId, { label: 'Before' }));

    const attempts: Array<[string, number, EngramInput]> = [
      ["another user's mod", 403, engramFor(bob.modId)],
      ['a path held by another mod', 400, engramFor(alice.modId, { path: held.path })],
      [
        'a missing required key',
        400,
        (() => {
          const e: Partial<EngramInput> = engramFor(alice.modId);
          delete e.label;
          return e as EngramInput;
        })(),
      ],
    ];
    for (const [name, status, bad] of attempts) {
      const good = [engramFor(alice.modId), engramFor(alice.modId)];
      const reply = await post(server, alice.user, [good[0], { ...existing, label: 'After' }, bad, good[1]]);
      assert.equal(reply.status, status, `${name}: ${reply.text}`);
      assert.equal(reply.body.details.index, 2, name);
      assert.equal(reply.body.details.path, bad.path, name);
      for (const engram of good) await assertAbsent(server, engram.path);
    }
    // The update that came before the bad element was rolled back too.
    assert.deepEqual(await listOfMod(server, alice.modId), [existing]);
    assert.deepEqual(await listOfMod(server, bob.modId), [held]);
  });

  test('at most 5,000 engrams per POST, and a body over 1 MiB is 413; neither writes anything', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const tooMany = Array.from({ length: 5_001 }, (_, i) => ({
      path: `/G/${i}.P${i}`,
      label: 'x',
      mod_id: Number(modId),
      availability: 1,
      can_blueprint: true,
    }));
    const many = await post(server, user, tooMany);
    assert.equal(many.status, 400, many.text);
    assert.match(many.body.message, /5,?000/);

    const huge = [engramFor(modId, { label: 'y'.repeat(1024 * 1024) })];
    const large = await post(server, user, huge);
    assert.equal(large.status, 413);
    assert.equal(large.body.code, 'payloadTooLarge');
    assert.deepEqual(await listOfMod(server, modId), []);
  });

  test('two users racing for one new path: exactly one holds it, the other is refused with 400', async () => {
    const { server } = context;
    for (let round = 0; round < 5; round++) {
      const alice = await ownerWithMod(server);
      const bob = await ownerWithMod(server);
      const path = engramFor(alice.modId).path;
      const replies = await Promise.all([
        post(server, alice.user, engramFor(alice.modId, { path })),
        post(server, bob.user, engramFor(bob.modId, { path })),
      ]);
      const statuses = replies.map((reply) => reply.status).sort();
      assert.deepEqual(statuses, [200, 400], replies.map((reply) => `${reply.status} ${reply.text}`).join('\n'));
      const winner = replies.find((reply) => reply.status === 200)!.body;
      assert.deepEqual((await server.request('GET', `/v1/engram.php/${winner.uid}`)).body, winner);
    }
  });

  test('one user publishing the same new engram twice at once keeps one engram', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const input = engramFor(modId);
    const replies = await Promise.all([post(server, user, input), post(server, user, { ...input, label: 'Second' })]);
    for (const reply of replies) assert.equal(reply.status, 200, reply.text);
    const listed = await listOfMod(server, modId);
    assert.equal(listed.length, 1);
    assert.ok(['Second', input.label].includes(listed[0].label));
  });

  test('two array updates of the same engrams in opposite orders both succeed', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const engrams: Array<{ path: string }> = await publish(
      server,
      user,
      Array.from({ length: 20 }, () => engramFor(modId)),
    );
    for (let round = 0; round < 3; round++) {
      const forward = engrams.map((engram) => ({ path: engram.path, label: `Forward ${round}` }));
      const backward = [...engrams].reverse().map((engram) => ({ path: engram.path, label: `Backward ${round}` }));
      const replies = await Promise.all([post(server, user, forward), post(server, user, backward)]);
      for (const reply of replies) assert.equal(reply.status, 200, reply.text);
      // Each request ran as a whole: every engram carries the label of the same (last) one.
      const labels = new Set((await listOfMod(server, modId)).map((engram) => engram.label));
      assert.equal(labels.size, 1, [...labels].join(', '));
    }
  });
});

describe('updating engrams', () => {
  const context = serverPerSuite();

  test('posting an existing path again changes its fields instead of adding a duplicate', async () => {
    const { server } = context;
    const { user, modId, modName } = await ownerWithMod(server);
    const input = engramFor(modId, { availability: 1, can_blueprint: true });
    const before = await publish(server, user, input);
    const changed = { ...input, label: 'Renamed', availability: ['Center', 'Ragnarok'], can_blueprint: false };
    const after = await publish(server, user, changed);
    assert.deepEqual(after, expected(changed, ['Center', 'Ragnarok'], false, modName));
    assert.equal(after.uid, before.uid);
    assert.deepEqual(await listOfMod(server, modId), [after]);
    assert.deepEqual((await server.request('GET', `/v1/engram.php/${before.uid}`)).body, after);
  });

  test('an update may send only the path and the keys that change; the others keep their values', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const original = await publish(server, user, engramFor(modId, { availability: 6, can_blueprint: false }));
    const labelOnly = await publish(server, user, { path: original.path, label: 'Only the label' } as EngramInput);
    assert.deepEqual(labelOnly, { ...original, label: 'Only the label' });
    const availabilityOnly = await publish(server, user, {
      path: original.path,
      availability: 16,
    } as unknown as EngramInput);
    assert.deepEqual(availabilityOnly, { ...original, label: 'Only the label', environments: ['Abberation'] });
    const blueprintOnly = await publish(server, user, { path: original.path, can_blueprint: true } as EngramInput);
    assert.deepEqual(blueprintOnly, { ...availabilityOnly, can_blueprint: true });
    const envOnly = await publish(server, user, { path: original.path, environments: [] } as unknown as EngramInput);
    assert.deepEqual(envOnly.environments, []);
    const sameMod = await publish(server, user, { path: original.path, mod_id: modId } as EngramInput);
    assert.deepEqual(sameMod, envOnly);
    assert.equal((await listOfMod(server, modId)).length, 1);
  });

  test('an update naming the path in another case updates the same engram and takes the new spelling', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const original = await publish(server, user, engramFor(modId));
    const respelled = original.path.replace('PrimalItem_Thing', 'PRIMALITEM_thing');
    assert.notEqual(respelled, original.path);
    const updated = await publish(server, user, { path: respelled, label: 'Respelled' } as EngramInput);
    assert.equal(updated.uid, original.uid);
    assert.equal(updated.path, respelled);
    assert.equal(updated.spawn, `cheat giveitem "Blueprint'${respelled}'" 1 0 false`);
    assert.equal(updated.class, `${respelled.slice(respelled.lastIndexOf('.') + 1)}_C`);
    assert.deepEqual(await listOfMod(server, modId), [updated]);
  });

  test('an array may mix new and existing engrams', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const [first, second] = await publish(server, user, [engramFor(modId), engramFor(modId)]);
    const fresh = engramFor(modId);
    const body = await publish(server, user, [{ path: second.path, label: 'Second, renamed' } as EngramInput, fresh]);
    assert.equal(body[0].uid, second.uid);
    assert.equal(body[0].label, 'Second, renamed');
    assert.equal(body[1].path, fresh.path);
    const listed = await listOfMod(server, modId);
    assert.equal(listed.length, 3);
    assert.deepEqual(
      listed.find((e: { uid: string }) => e.uid === first.uid),
      first,
    );
  });

  test('a large array mixing new and existing engrams is answered as stored, in the order sent', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    // Past the store's look-up (500) and insert (100) chunks: every third element exists already.
    const existing = await publish(
      server,
      user,
      Array.from({ length: 200 }, () => engramFor(modId)),
    );
    const inputs: EngramInput[] = Array.from({ length: 600 }, (_, n) =>
      n % 3 === 0
        ? ({ path: existing[n / 3].path, label: `Renamed ${n}` } as EngramInput)
        : engramFor(modId, { availability: n % 32 }),
    );
    const body = await publish(server, user, inputs);
    assert.deepEqual(
      body.map((engram: { path: string }) => engram.path),
      inputs.map((input) => input.path),
    );
    assert.equal(body[3].label, 'Renamed 3');
    assert.equal(body[3].uid, existing[1].uid);
    const listed = new Map((await listOfMod(server, modId)).map((engram: { uid: string }) => [engram.uid, engram]));
    assert.equal(listed.size, 600);
    for (const engram of body) assert.deepEqual(listed.get(engram.uid), engram);
  });

  test('an invalid update is 400 and leaves the engram unchanged', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const original = await publish(server, user, engramFor(modId));
    for (const change of [
      { label: '' },
      { availability: 64 },
      { can_blueprint: 'no' },
      { environments: ['Nowhere'] },
    ]) {
      const reply = await post(server, user, { path: original.path, ...change });
      assert.equal(reply.status, 400, JSON.stringify(change));
    }
    assert.deepEqual((await server.request('GET', `/v1/engram.php/${original.uid}`)).body, original);
  });

  test("an engram's mod cannot be changed by an update: 400; after deleting it, it may be published to the other mod", async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const other = await confirmedMod(server, workshop, user);
    const original = await publish(server, user, engramFor(modId));
    const moved = await post(server, user, { path: original.path, mod_id: Number(other.mod_id) });
    assert.equal(moved.status, 400, moved.text);
    assert.equal(moved.body.details.path, original.path);
    assert.deepEqual(await listOfMod(server, modId), [original]);

    assert.equal((await signed(server, user, 'DELETE', `/v1/engram.php/${original.uid}`)).status, 200);
    const republished = await publish(server, user, {
      path: original.path,
      label: original.label,
      mod_id: other.mod_id,
      availability: 31,
      can_blueprint: true,
    });
    assert.equal(republished.uid, original.uid);
    assert.equal(republished.mod_id, Number(other.mod_id));
    assert.deepEqual(await listOfMod(server, modId), []);
  });

  test("another user cannot update someone else's engram, with or without naming the mod", async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const original = await publish(server, alice.user, engramFor(alice.modId));
    const withoutMod = await post(server, bob.user, { path: original.path, label: 'Hijacked' });
    assert.equal(withoutMod.status, 400, withoutMod.text);
    const withMod = await post(server, bob.user, {
      path: original.path,
      label: 'Hijacked',
      mod_id: Number(alice.modId),
    });
    assert.equal(withMod.status, 403, withMod.text);
    const withOwnMod = await post(server, bob.user, {
      path: original.path,
      label: 'Hijacked',
      mod_id: Number(bob.modId),
    });
    assert.equal(withOwnMod.status, 400, withOwnMod.text);
    assert.deepEqual((await server.request('GET', `/v1/engram.php/${original.uid}`)).body, original);
  });

  test("mod_name is the owning mod's name as its Mod structure shows it", async () => {
    const { server } = context;
    const user = await registerUser(server, 'ed25519');
    const modId = publishMod(workshop, { name: 'Dino Storage "Deluxe" & More' });
    await confirmedMod(server, workshop, user, modId);
    const mod = (await signed(server, user, 'GET', `/v1/mod.php/${modId}`)).body;
    assert.equal(mod.name, 'Dino Storage "Deluxe" & More');
    const engram = await publish(server, user, engramFor(modId));
    assert.equal(engram.mod_name, mod.name);
    assert.equal((await server.request('GET', `/v1/engram.php/${engram.uid}`)).body.mod_name, mod.name);
  });
});

describe('deleting engrams', () => {
  const context = serverPerSuite();

  test('deleting by uid removes the engram and answers the deleted uids', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const [gone, kept] = await publish(server, user, [engramFor(modId), engramFor(modId)]);
    const reply = await signed(server, user, 'DELETE', `/v1/engram.php/${gone.uid}`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, { deleted: [gone.uid] });
    assert.equal((await server.request('GET', `/v1/engram.php/${gone.uid}`)).status, 404);
    assert.deepEqual(await listOfMod(server, modId), [kept]);
    // Deleted completely: a second delete finds nothing.
    assert.equal((await signed(server, user, 'DELETE', `/v1/engram.php/${gone.uid}`)).status, 404);
  });

  test('deleting by uid ignores the case of the uid', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const engram = await publish(server, user, engramFor(modId));
    const reply = await signed(server, user, 'DELETE', `/v1/engram.php/${engram.uid.toUpperCase()}`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, { deleted: [engram.uid] });
    assert.deepEqual(await listOfMod(server, modId), []);
  });

  test('deleting by class removes every engram of that class held by the caller', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const other = await confirmedMod(server, workshop, user);
    const object = `PrimalItem_Twin${++serial}`;
    const one = await publish(server, user, engramFor(modId, { path: `/Game/One/${object}.${object}` }));
    const two = await publish(server, user, engramFor(other.mod_id, { path: `/Game/Two/${object}.${object}` }));
    const kept = await publish(server, user, engramFor(modId));
    const reply = await signed(server, user, 'DELETE', `/v1/engram.php/${one.class}`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.deleted.sort(), [one.uid, two.uid].sort());
    assert.equal((await server.request('GET', `/v1/engram.php/${one.class}`)).status, 404);
    assert.deepEqual(await listOfMod(server, modId), [kept]);
    assert.deepEqual(await listOfMod(server, other.mod_id), []);
  });

  test('deleting a comma-separated list in the path removes each, uids and classes alike', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const [a, b, c, kept] = await publish(server, user, [
      engramFor(modId),
      engramFor(modId),
      engramFor(modId),
      engramFor(modId),
    ]);
    const reply = await signed(server, user, 'DELETE', `/v1/engram.php/${a.uid},${b.class},${c.uid}`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.deleted.sort(), [a.uid, b.uid, c.uid].sort());
    assert.deepEqual(await listOfMod(server, modId), [kept]);
  });

  test('deleting with a text/plain body of comma-separated identifiers, or of a single one', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const [a, b, c, kept] = await publish(server, user, [
      engramFor(modId),
      engramFor(modId),
      engramFor(modId),
      engramFor(modId),
    ]);
    const list = await signed(server, user, 'DELETE', '/v1/engram.php', `${a.uid}, ${b.class}\n`, 'text/plain');
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.deleted.sort(), [a.uid, b.uid].sort());
    const single = await signed(server, user, 'DELETE', '/v1/engram.php', c.class, 'text/plain; charset=utf-8');
    assert.equal(single.status, 200, single.text);
    assert.deepEqual(single.body, { deleted: [c.uid] });
    assert.deepEqual(await listOfMod(server, modId), [kept]);
  });

  test('a delete body that is not text/plain, or names nothing, is 400 and deletes nothing', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const engram = await publish(server, user, engramFor(modId));
    for (const [body, type] of [
      [engram.uid, 'application/json'],
      [JSON.stringify([engram.uid]), 'application/json'],
      ['', 'text/plain'],
      [' , ', 'text/plain'],
    ]) {
      const reply = await signed(server, user, 'DELETE', '/v1/engram.php', body, type);
      assert.equal(reply.status, 400, `${type} ${JSON.stringify(body)}: ${reply.text}`);
      assert.equal(reply.body.code, 'badRequest');
    }
    assert.deepEqual(await listOfMod(server, modId), [engram]);
  });

  test("deleting another user's engram is 403 and deletes nothing, even in a list with one's own", async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const hers = await publish(server, alice.user, engramFor(alice.modId));
    const his = await publish(server, bob.user, engramFor(bob.modId));
    for (const path of [
      `/v1/engram.php/${hers.uid}`,
      `/v1/engram.php/${hers.class}`,
      `/v1/engram.php/${his.uid},${hers.uid}`,
    ]) {
      const reply = await signed(server, bob.user, 'DELETE', path);
      assert.equal(reply.status, 403, `${path}: ${reply.text}`);
      assert.equal(reply.body.code, 'forbidden');
    }
    const byBody = await signed(server, bob.user, 'DELETE', '/v1/engram.php', `${his.uid},${hers.uid}`, 'text/plain');
    assert.equal(byBody.status, 403);
    assert.equal(byBody.body.details.identifier, hers.uid);
    assert.deepEqual(await listOfMod(server, alice.modId), [hers]);
    assert.deepEqual(await listOfMod(server, bob.modId), [his]);
  });

  test("deleting a class shared with another user's engram is 403 and deletes neither", async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const object = `PrimalItem_Both${++serial}`;
    const hers = await publish(server, alice.user, engramFor(alice.modId, { path: `/Game/A/${object}.${object}` }));
    const his = await publish(server, bob.user, engramFor(bob.modId, { path: `/Game/B/${object}.${object}` }));
    const reply = await signed(server, bob.user, 'DELETE', `/v1/engram.php/${his.class}`);
    assert.equal(reply.status, 403, reply.text);
    assert.deepEqual(await listOfMod(server, alice.modId), [hers]);
    assert.deepEqual(await listOfMod(server, bob.modId), [his]);
  });

  test('deleting a missing engram is 404 naming it; in a list, nothing is deleted', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const engram = await publish(server, user, engramFor(modId));
    const missing = md5('/game/never/published');
    const alone = await signed(server, user, 'DELETE', `/v1/engram.php/${missing}`);
    assert.equal(alone.status, 404);
    assert.equal(alone.body.code, 'notFound');
    assert.equal(alone.body.details.identifier, missing);
    const inList = await signed(server, user, 'DELETE', `/v1/engram.php/${engram.uid},Missing_C`);
    assert.equal(inList.status, 404);
    assert.equal(inList.body.details.identifier, 'Missing_C');
    const inBody = await signed(server, user, 'DELETE', '/v1/engram.php', `${engram.uid},${missing}`, 'text/plain');
    assert.equal(inBody.status, 404);
    assert.deepEqual(await listOfMod(server, modId), [engram]);
  });

  test('a bad signature on DELETE is 403 and deletes nothing', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const engram = await publish(server, user, engramFor(modId));
    const path = `/v1/engram.php/${engram.uid}`;
    const wrongPath = await server.request('DELETE', path, {
      headers: {
        authorization: basicAuth(user.userId, signatureHex(user, textToSign('DELETE', '/v1/engram.php/other', ''))),
      },
    });
    assert.equal(wrongPath.status, 403);
    assert.equal(wrongPath.body.details, textToSign('DELETE', path, ''));
    // A GET signature does not authorise a DELETE of the same path.
    const wrongMethod = await server.request('DELETE', path, {
      headers: { authorization: basicAuth(user.userId, signatureHex(user, textToSign('GET', path))) },
    });
    assert.equal(wrongMethod.status, 403);
    assert.deepEqual(await listOfMod(server, modId), [engram]);
  });

  test('a deleted engram may be published again by another user for another mod', async () => {
    const { server } = context;
    const alice = await ownerWithMod(server);
    const bob = await ownerWithMod(server);
    const input = engramFor(alice.modId);
    const hers = await publish(server, alice.user, input);
    assert.equal((await post(server, bob.user, { ...input, mod_id: Number(bob.modId) })).status, 400);
    assert.equal((await signed(server, alice.user, 'DELETE', `/v1/engram.php/${hers.uid}`)).status, 200);
    const his = await publish(server, bob.user, { ...input, mod_id: Number(bob.modId), label: 'Now Bob' });
    assert.equal(his.uid, hers.uid);
    assert.equal(his.mod_id, Number(bob.modId));
    assert.equal(his.mod_name, bob.modName);
  });

  test('deleting the mod deletes all its engrams, and only those', async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const other = await confirmedMod(server, workshop, user);
    const doomed = await publish(server, user, [engramFor(modId), engramFor(modId), engramFor(modId)]);
    const kept = await publish(server, user, engramFor(other.mod_id));
    assert.equal((await signed(server, user, 'DELETE', `/v1/mod.php/${modId}`)).status, 200);
    for (const engram of doomed)
      assert.equal((await server.request('GET', `/v1/engram.php/${engram.uid}`)).status, 404);
    assert.deepEqual(await listOfMod(server, modId), []);
    assert.deepEqual(await listOfMod(server, other.mod_id), [kept]);
    // The paths are free again.
    const again = await post(server, user, { ...engramFor(other.mod_id), path: doomed[0].path });
    assert.equal(again.status, 200, again.text);
  });

  test("deleting the user deletes their mods' engrams", async () => {
    const { server } = context;
    const { user, modId } = await ownerWithMod(server);
    const engram = await publish(server, user, engramFor(modId));
    assert.equal((await signed(server, user, 'DELETE', `/v1/user.php/${user.userId}`)).status, 200);
    assert.equal((await server.request('GET', `/v1/engram.php/${engram.uid}`)).status, 404);
    assert.deepEqual(await listOfMod(server, modId), []);
  });
});

describe('listing a mod with 10,000 engrams', () => {
  const context = serverPerSuite();

  test('all 10,000 are listed once each, with their fields intact, and the mod filter keeps them apart', async () => {
    const { server } = context;
    const { user, modId, modName } = await ownerWithMod(server);
    const neighbour = await ownerWithMod(server);
    const neighbours = await publish(server, neighbour.user, [engramFor(neighbour.modId), engramFor(neighbour.modId)]);

    const TOTAL = 10_000;
    const BATCH = 5_000; // the most one POST takes (docs/decisions/0050)
    const inputs = Array.from({ length: TOTAL }, (_, i) => ({
      path: `/Game/Mods/${modId}/Bulk/PrimalItem_Bulk${String(i).padStart(5, '0')}.PrimalItem_Bulk${String(i).padStart(5, '0')}`,
      label: `Bulk item ${i}`,
      mod_id: Number(modId),
      availability: i % 32,
      can_blueprint: i % 3 !== 0,
    }));
    for (let start = 0; start < TOTAL; start += BATCH) {
      const batch = inputs.slice(start, start + BATCH);
      const body = JSON.stringify(batch);
      assert.ok(Buffer.byteLength(body) < 1024 * 1024, 'each batch fits the 1 MiB body limit');
      const reply = await post(server, user, body);
      assert.equal(reply.status, 200, reply.text.slice(0, 500));
      assert.equal(reply.body.length, batch.length);
    }

    const listed = await listOfMod(server, modId);
    assert.equal(listed.length, TOTAL);
    const uids = listed.map((engram) => engram.uid);
    assert.equal(new Set(uids).size, TOTAL);
    const wantUids = new Set(inputs.map((input) => md5(input.path.toLowerCase())));
    assert.ok(uids.every((uid) => wantUids.has(uid)));
    const byUid = new Map(listed.map((engram) => [engram.uid, engram]));
    for (const i of [0, 1, 31, 32, 999, 1000, 1001, 4999, 5000, 7777, 9998, 9999]) {
      const input = inputs[i]!;
      assert.deepEqual(
        byUid.get(md5(input.path.toLowerCase())),
        expected(input, namesOf(i % 32), i % 3 !== 0, modName),
        `engram ${i}`,
      );
    }

    // The unfiltered list holds these and the neighbour's, each once.
    const all = await server.request('GET', '/v1/engram.php');
    assert.equal(all.status, 200);
    assert.equal(all.body.length, TOTAL + neighbours.length);
    assert.equal(new Set(all.body.map((engram: { uid: string }) => engram.uid)).size, TOTAL + neighbours.length);
    const both = await server.request('GET', `/v1/engram.php?mod_id=${neighbour.modId},${modId}`);
    assert.equal(both.body.length, TOTAL + neighbours.length);
    const byUidOrder = (x: { uid: string }, y: { uid: string }) => x.uid.localeCompare(y.uid);
    assert.deepEqual((await listOfMod(server, neighbour.modId)).sort(byUidOrder), [...neighbours].sort(byUidOrder));
  });
});
