/**
 * v1 mods and engrams under concurrency, and workshop ids too large for a JavaScript number.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestUser } from '../helpers/keys.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { confirmedMod, publishMod, registerUser, signed } from '../helpers/v1.ts';
import { FakeWorkshop } from '../helpers/workshop.ts';

const workshop = new FakeWorkshop();
let server: TestServer;
before(async () => {
  await workshop.start();
  server = await startServer({ env: { WORKSHOP_URL: workshop.template } });
});
after(async () => {
  await server.close();
  await workshop.stop();
});

let serial = 0;
function engram(modId: string, path?: string) {
  const object = `PrimalItem_Race${++serial}`;
  return {
    path: path ?? `/Game/Mods/${modId}/Race/${object}.${object}`,
    label: `Race ${serial}`,
    mod_id: modId,
    availability: 31,
    can_blueprint: true,
  };
}

async function modIdsOf(user: TestUser): Promise<string[]> {
  const reply = await signed(server, user, 'GET', '/v1/mod.php');
  assert.equal(reply.status, 200, reply.text);
  return reply.body.map((mod: { mod_id: string }) => mod.mod_id).sort();
}

describe('registering mods concurrently', () => {
  test('two users registering the same mods in opposite orders, many times at once: every request succeeds', async () => {
    const rounds = await Promise.all(
      Array.from({ length: 12 }, async () => ({
        alice: await registerUser(server, 'ed25519'),
        bob: await registerUser(server, 'ed25519'),
        mods: Array.from({ length: 5 }, () => publishMod(workshop)),
      })),
    );
    const replies = await Promise.all(
      rounds.flatMap(({ alice, bob, mods }) => [
        signed(
          server,
          alice,
          'POST',
          '/v1/mod.php',
          mods.map((mod_id) => ({ mod_id })),
        ),
        signed(
          server,
          bob,
          'POST',
          '/v1/mod.php',
          [...mods].reverse().map((mod_id) => ({ mod_id })),
        ),
      ]),
    );
    for (const reply of replies) assert.equal(reply.status, 200, reply.text);
    for (const { alice, bob, mods } of rounds) {
      assert.deepEqual(await modIdsOf(alice), [...mods].sort());
      assert.deepEqual(await modIdsOf(bob), [...mods].sort());
    }
  });

  test('one user sending the same mods twice in opposite orders at once: one registers them, the other is 400', async () => {
    const rounds = await Promise.all(
      Array.from({ length: 10 }, async () => ({
        user: await registerUser(server, 'ed25519'),
        mods: Array.from({ length: 4 }, () => publishMod(workshop)),
      })),
    );
    const pairs = await Promise.all(
      rounds.map(({ user, mods }) =>
        Promise.all([
          signed(
            server,
            user,
            'POST',
            '/v1/mod.php',
            mods.map((mod_id) => ({ mod_id })),
          ),
          signed(
            server,
            user,
            'POST',
            '/v1/mod.php',
            [...mods].reverse().map((mod_id) => ({ mod_id })),
          ),
        ]),
      ),
    );
    for (const [index, pair] of pairs.entries()) {
      assert.deepEqual(
        pair.map((reply) => reply.status).sort(),
        [200, 400],
        pair.map((reply) => reply.text).join('\n'),
      );
      assert.equal(pair.find((reply) => reply.status === 400)!.body.code, 'badRequest');
      assert.deepEqual(await modIdsOf(rounds[index]!.user), [...rounds[index]!.mods].sort());
    }
  });
});

describe("engram writes racing their mod's deletion", () => {
  test('answer 200 (then removed with the mod) or a clean 404, never a 500; nothing of the mod is left', async () => {
    const rounds = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const user = await registerUser(server, 'ed25519');
        const mod = await confirmedMod(server, workshop, user);
        const existing = engram(mod.mod_id);
        assert.equal((await signed(server, user, 'POST', '/v1/engram.php', existing)).status, 200);
        return { user, modId: mod.mod_id as string, existing };
      }),
    );
    const outcomes = await Promise.all(
      rounds.map(async ({ user, modId, existing }) => {
        const writes = Array.from(
          { length: 12 },
          (_, index) =>
            index % 3 === 0
              ? { ...existing, label: `Renamed ${index}` } // an update naming the mod
              : index % 3 === 1
                ? engram(modId) // a new engram
                : [engram(modId), engram(modId)], // several at once
        );
        const deletion = signed(server, user, 'DELETE', `/v1/mod.php/${modId}`);
        const replies = await Promise.all(writes.map((body) => signed(server, user, 'POST', '/v1/engram.php', body)));
        return { user, modId, writes, replies, deleted: await deletion };
      }),
    );
    for (const { modId, writes, replies, deleted } of outcomes) {
      assert.equal(deleted.status, 200, deleted.text);
      for (const reply of replies) {
        assert.ok(reply.status === 200 || reply.status === 404, `${reply.status}: ${reply.text}`);
        if (reply.status === 404) {
          assert.equal(reply.body.code, 'notFound', reply.text);
          assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'details', 'message']);
        }
      }
      const left = await server.request('GET', `/v1/engram.php?mod_id=${modId}`);
      assert.deepEqual(left.body, [], `engrams of deleted mod ${modId} remain`);
      for (const write of writes.flat()) {
        const uid = createHash('md5').update(write.path.toLowerCase()).digest('hex');
        assert.equal((await server.request('GET', `/v1/engram.php/${uid}`)).status, 404);
      }
    }
    // After the deletion, a write to the mod is 404 (there is no such mod any more).
    const { user, modId } = outcomes[0]!;
    const late = await signed(server, user, 'POST', '/v1/engram.php', engram(modId));
    assert.equal(late.status, 404, late.text);
  });
});

describe('workshop ids of up to 20 digits', () => {
  const HUGE = ['18446744073709551615', '12345678901234567891'];
  let user: TestUser;
  before(async () => {
    user = await registerUser(server, 'ed25519');
    for (const id of HUGE) workshop.items.set(id, { name: `Huge ${id}` });
  });

  test('round-trip exactly through registration, confirmation, lists, engrams and deletion', async () => {
    const registered = await signed(
      server,
      user,
      'POST',
      '/v1/mod.php',
      HUGE.map((mod_id) => ({ mod_id })),
    );
    assert.equal(registered.status, 200, registered.text);
    assert.deepEqual(
      registered.body.map((mod: { mod_id: string }) => mod.mod_id),
      HUGE,
    );
    for (const mod of registered.body) {
      assert.equal(mod.engrams_url, `${server.config.baseUrl}/v1/engram.php?mod_id=${mod.mod_id}`);
      assert.match(mod.workshop_url, new RegExp(`id=${mod.mod_id}$`));
      workshop.items.get(mod.mod_id)!.description = `code: ${mod.confirmation_code}`;
      const confirmed = await signed(server, user, 'GET', `/v1/mod.php/${mod.mod_id}?action=confirm`);
      assert.equal(confirmed.status, 200, confirmed.text);
      assert.equal(confirmed.body.mod_id, mod.mod_id);
      assert.equal(confirmed.body.confirmed, true);
    }
    assert.deepEqual(await modIdsOf(user), [...HUGE].sort());
    const one = await signed(server, user, 'GET', `/v1/mod.php/${HUGE[0]}`);
    assert.equal(one.body.mod_id, HUGE[0]);

    // Engrams: mod_id is an integer in the Engram structure, written with every digit.
    for (const modId of HUGE) {
      const input = engram(modId);
      const posted = await signed(server, user, 'POST', '/v1/engram.php', input);
      assert.equal(posted.status, 200, posted.text);
      assert.match(posted.text, new RegExp(`"mod_id":${modId}[,}]`));
      const listed = await server.request('GET', `/v1/engram.php?mod_id=${modId}`);
      assert.equal(listed.status, 200, listed.text);
      assert.equal(listed.body.length, 1);
      assert.match(listed.text, new RegExp(`"mod_id":${modId}[,}]`));
      const byUid = await server.request('GET', `/v1/engram.php/${posted.body.uid}`);
      assert.match(byUid.text, new RegExp(`"mod_id":${modId}[,}]`));
      const everything = await server.request('GET', '/v1/engram.php');
      assert.match(everything.text, new RegExp(`"mod_id":${modId}[,}]`));
      assert.equal(byUid.body.mod_name, `Huge ${modId}`);
    }
    // A nearby id is another mod: nothing was rounded onto it.
    const neighbour = await server.request('GET', '/v1/engram.php?mod_id=18446744073709551614');
    assert.deepEqual(neighbour.body, []);

    const deleted = await signed(server, user, 'DELETE', `/v1/mod.php/${HUGE.join(',')}`);
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body.deleted, HUGE);
    assert.deepEqual(await modIdsOf(user), []);
  });

  test('a JSON number too large to be exact is 400 asking for a string; beyond 2^64 − 1 is 400', async () => {
    const asNumber = await signed(server, user, 'POST', '/v1/mod.php', '{"mod_id":12345678901234567891}');
    assert.equal(asNumber.status, 400, asNumber.text);
    assert.equal(asNumber.body.code, 'badRequest');
    assert.match(asNumber.body.message, /string/);
    const engramNumber = await signed(
      server,
      user,
      'POST',
      '/v1/engram.php',
      '{"path":"/Game/X/Y.Y","label":"Y","mod_id":18446744073709551615,"availability":1,"can_blueprint":true}',
    );
    assert.equal(engramNumber.status, 400, engramNumber.text);
    assert.match(engramNumber.body.message, /string/);
    assert.equal(engramNumber.body.details.field, 'mod_id');
    for (const id of ['18446744073709551616', '99999999999999999999', '123456789012345678901', '0']) {
      const reply = await signed(server, user, 'POST', '/v1/mod.php', { mod_id: id });
      assert.equal(reply.status, 400, `${id}: ${reply.text}`);
      assert.equal(reply.body.code, 'badRequest');
    }
    // The largest exact JSON number is still accepted as a number.
    workshop.items.set(String(Number.MAX_SAFE_INTEGER), { name: 'Largest exact' });
    const exact = await signed(server, user, 'POST', '/v1/mod.php', `{"mod_id":${Number.MAX_SAFE_INTEGER}}`);
    assert.equal(exact.status, 200, exact.text);
    assert.equal(exact.body.mod_id, String(Number.MAX_SAFE_INTEGER));
  });
});
