import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { TestUser } from '../helpers/keys.ts';
import { type Reply, startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';
import { confirmedMod, registerUser as createUser, publishMod, signed as signedWith } from '../helpers/v1.ts';
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

const registerUser = () => createUser(server);
const signed = (user: TestUser, method: string, path: string, body?: unknown, contentType?: string): Promise<Reply> =>
  signedWith(server, user, method, path, body, contentType);
const newMod = (item: { name?: string; description?: string; appId?: string } = {}) => publishMod(workshop, item);
const confirmed = (user: TestUser, modId: string) => confirmedMod(server, workshop, user, modId);
const unusedModId = () => publishMod(new FakeWorkshop());

let alice: TestUser;
let bob: TestUser;
beforeEach(async () => {
  alice = await registerUser();
  bob = await registerUser();
});

describe('registering mods', () => {
  test('every method needs a signature', async () => {
    for (const [method, path] of [
      ['GET', '/v1/mod.php'],
      ['GET', '/v1/mod.php/1'],
      ['POST', '/v1/mod.php'],
      ['DELETE', '/v1/mod.php/1'],
    ]) {
      const reply = await server.request(method!, path!);
      assert.equal(reply.status, 401, `${method} ${path}`);
    }
  });

  test('registers a mod with every field of the Mod structure', async () => {
    const modId = newMod({ name: 'Super Structures & Co' });
    const reply = await signed(alice, 'POST', '/v1/mod.php', {
      mod_id: modId,
      name: 'ignored',
      pull_url: 'https://example.com/engrams.json',
    });
    assert.equal(reply.status, 200, reply.text);
    const base = `https://${TEST_HOST}`;
    assert.match(reply.body.confirmation_code, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.deepEqual(reply.body, {
      mod_id: modId,
      name: 'Super Structures & Co',
      workshop_url: workshop.template.replace('{id}', modId),
      confirmed: false,
      confirmation_code: reply.body.confirmation_code,
      resource_url: `${base}/v1/mod.php/${modId}`,
      confirm_url: `${base}/v1/mod.php/${modId}?action=confirm`,
      engrams_url: `${base}/v1/engram.php?mod_id=${modId}`,
      spawncodes_url: `${base}/spawn?mod_id=${modId}`,
      pull_url: 'https://example.com/engrams.json',
    });
    const listed = await signed(alice, 'GET', '/v1/mod.php');
    assert.deepEqual(listed.body, [reply.body]);
  });

  test('accepts an array, all or nothing', async () => {
    const good = newMod();
    const missing = unusedModId();
    const failed = await signed(alice, 'POST', '/v1/mod.php', [{ mod_id: good }, { mod_id: Number(missing) }]);
    assert.equal(failed.status, 400);
    assert.equal(failed.body.details.mod_id, missing);
    assert.deepEqual((await signed(alice, 'GET', '/v1/mod.php')).body, []);
    const other = newMod();
    const ok = await signed(alice, 'POST', '/v1/mod.php', [{ mod_id: good }, { mod_id: Number(other) }]);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(
      ok.body.map((mod: { mod_id: string }) => mod.mod_id),
      [good, other],
    );
  });

  test('a mod of another game, or no workshop page, is not found (400)', async () => {
    const foreign = newMod({ appId: '440' });
    const reply = await signed(alice, 'POST', '/v1/mod.php', { mod_id: foreign });
    assert.equal(reply.status, 400);
    assert.match(reply.body.message, /not found/);
    const nothing = await signed(alice, 'POST', '/v1/mod.php', { mod_id: '999999999' });
    assert.equal(nothing.status, 400);
  });

  test('bad input is 400', async () => {
    for (const body of [{}, { mod_id: 'abc' }, { mod_id: -5 }, [], { mod_id: newMod(), pull_url: 'ftp://x' }, 'null']) {
      const reply = await signed(alice, 'POST', '/v1/mod.php', body);
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.equal(reply.body.code, 'badRequest');
    }
    const duplicate = newMod();
    const twice = await signed(alice, 'POST', '/v1/mod.php', [{ mod_id: duplicate }, { mod_id: duplicate }]);
    assert.equal(twice.status, 400);
  });

  test('registering a mod twice is 400', async () => {
    const modId = newMod();
    assert.equal((await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId })).status, 200);
    const again = await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId });
    assert.equal(again.status, 400);
    assert.match(again.body.message, /already registered/);
  });

  test('a slow workshop is 503 within about 5 s and nothing changes', async () => {
    const modId = unusedModId();
    workshop.items.set(modId, { name: 'slow', hang: true });
    const started = Date.now();
    const reply = await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId });
    const elapsed = Date.now() - started;
    assert.equal(reply.status, 503);
    assert.equal(reply.body.code, 'serviceUnavailable');
    assert.ok(elapsed >= 4500 && elapsed < 7000, `answered after ${elapsed} ms`);
    assert.deepEqual((await signed(alice, 'GET', '/v1/mod.php')).body, []);
  });

  test('a workshop server error is 503', async () => {
    const modId = unusedModId();
    workshop.items.set(modId, { name: 'down', status: 502 });
    const reply = await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId });
    assert.equal(reply.status, 503);
  });
});

describe('two users and confirmation', () => {
  test('two users may hold unconfirmed registrations, each seeing their own', async () => {
    const modId = newMod();
    const a = await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId });
    const b = await signed(bob, 'POST', '/v1/mod.php', { mod_id: modId });
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.equal(a.body.resource_url, b.body.resource_url);
    assert.notEqual(a.body.confirmation_code, b.body.confirmation_code);
    assert.equal((await signed(alice, 'GET', `/v1/mod.php/${modId}`)).body.confirmation_code, a.body.confirmation_code);
    assert.equal((await signed(bob, 'GET', `/v1/mod.php/${modId}`)).body.confirmation_code, b.body.confirmation_code);
  });

  test('confirmation without the code on the page is 412 and changes nothing', async () => {
    const modId = newMod({ description: 'no code here' });
    assert.equal((await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId })).status, 200);
    assert.equal((await signed(bob, 'POST', '/v1/mod.php', { mod_id: modId })).status, 200);
    const reply = await signed(alice, 'GET', `/v1/mod.php/${modId}?action=confirm`);
    assert.equal(reply.status, 412);
    assert.equal(reply.body.code, 'preconditionFailed');
    assert.equal((await signed(alice, 'GET', `/v1/mod.php/${modId}`)).body.confirmed, false);
    assert.equal((await signed(bob, 'GET', `/v1/mod.php/${modId}`)).status, 200);
  });

  test('confirming removes every other unconfirmed registration; nobody may register it afterwards', async () => {
    const modId = newMod();
    assert.equal((await signed(bob, 'POST', '/v1/mod.php', { mod_id: modId })).status, 200);
    const mod = await confirmed(alice, modId);
    assert.equal(mod.confirmed, true);
    assert.equal((await signed(bob, 'GET', `/v1/mod.php/${modId}`)).status, 404);
    assert.deepEqual((await signed(bob, 'GET', '/v1/mod.php')).body, []);
    const late = await signed(bob, 'POST', '/v1/mod.php', { mod_id: modId });
    assert.equal(late.status, 400);
    assert.match(late.body.message, /confirmed by another/);
    // Confirming again is harmless.
    assert.equal((await signed(alice, 'GET', `/v1/mod.php/${modId}?action=confirm`)).body.confirmed, true);
  });

  test('the registration race: both confirm at once, exactly one wins', async () => {
    const modId = newMod();
    const a = await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId });
    const b = await signed(bob, 'POST', '/v1/mod.php', { mod_id: modId });
    workshop.items.get(modId)!.description = `${a.body.confirmation_code} ${b.body.confirmation_code}`;
    const replies = await Promise.all([
      signed(alice, 'GET', `/v1/mod.php/${modId}?action=confirm`),
      signed(bob, 'GET', `/v1/mod.php/${modId}?action=confirm`),
    ]);
    const winners = replies.filter((reply) => reply.status === 200);
    assert.equal(winners.length, 1, replies.map((r) => `${r.status} ${r.text}`).join('\n'));
    const loser = replies.find((reply) => reply.status !== 200)!;
    assert.ok([400, 404].includes(loser.status), loser.text);
    const holders = [await signed(alice, 'GET', '/v1/mod.php'), await signed(bob, 'GET', '/v1/mod.php')].map(
      (r) => r.body.length,
    );
    assert.deepEqual(holders.sort(), [0, 1]);
  });

  test('registering while another confirms never leaves a second registration of a confirmed mod', async () => {
    const modId = newMod();
    const a = await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId });
    workshop.items.get(modId)!.description = a.body.confirmation_code;
    const [, late] = await Promise.all([
      signed(alice, 'GET', `/v1/mod.php/${modId}?action=confirm`),
      signed(bob, 'POST', '/v1/mod.php', { mod_id: modId }),
    ]);
    const bobs = (await signed(bob, 'GET', '/v1/mod.php')).body;
    // Either Bob registered first and was then removed, or he was refused: never both held.
    assert.deepEqual(bobs, [], late.text);
  });

  test('confirming a mod you did not register is 404; an unknown action is 400', async () => {
    const modId = newMod();
    assert.equal((await signed(alice, 'GET', `/v1/mod.php/${modId}?action=confirm`)).status, 404);
    await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId });
    assert.equal((await signed(alice, 'GET', `/v1/mod.php/${modId}?action=explode`)).status, 400);
  });
});

describe('reading and deleting mods', () => {
  test('one id answers an object, a list an array of those found, none 404', async () => {
    const [m1, m2] = [newMod(), newMod()];
    await signed(alice, 'POST', '/v1/mod.php', [{ mod_id: m1 }, { mod_id: m2 }]);
    assert.equal((await signed(alice, 'GET', `/v1/mod.php/${m1}`)).body.mod_id, m1);
    const both = await signed(alice, 'GET', `/v1/mod.php/${m1},${m2},424242`);
    assert.deepEqual(
      both.body.map((m: { mod_id: string }) => m.mod_id),
      [m1, m2],
    );
    assert.equal((await signed(alice, 'GET', '/v1/mod.php/424242,434343')).status, 404);
    assert.equal((await signed(bob, 'GET', `/v1/mod.php/${m1}`)).status, 404);
  });

  test('delete by path list and by text/plain body, all or nothing', async () => {
    const [m1, m2, m3] = [newMod(), newMod(), newMod()];
    await signed(alice, 'POST', '/v1/mod.php', [{ mod_id: m1 }, { mod_id: m2 }, { mod_id: m3 }]);
    const partial = await signed(alice, 'DELETE', `/v1/mod.php/${m1},424242`);
    assert.equal(partial.status, 404);
    assert.equal(partial.body.details.mod_id, '424242');
    assert.equal((await signed(alice, 'GET', '/v1/mod.php')).body.length, 3);
    assert.equal((await signed(alice, 'DELETE', `/v1/mod.php/${m1}`)).status, 200);
    const body = await signed(alice, 'DELETE', '/v1/mod.php', `${m2}, ${m3}`, 'text/plain');
    assert.equal(body.status, 200, body.text);
    assert.deepEqual((await signed(alice, 'GET', '/v1/mod.php')).body, []);
    const wrongType = await signed(alice, 'DELETE', '/v1/mod.php', `${m2}`, 'application/json');
    assert.equal(wrongType.status, 400);
  });

  test("deleting someone else's registration is not possible", async () => {
    const modId = newMod();
    await signed(alice, 'POST', '/v1/mod.php', { mod_id: modId });
    assert.equal((await signed(bob, 'DELETE', `/v1/mod.php/${modId}`)).status, 404);
    assert.equal((await signed(alice, 'GET', `/v1/mod.php/${modId}`)).status, 200);
  });

  test('deleting a mod deletes its engrams; deleting the user deletes mods and engrams', async () => {
    const modId = newMod();
    await confirmed(alice, modId);
    const engram = {
      path: `/Game/Mods/${modId}/PrimalItem_Thing.PrimalItem_Thing`,
      label: 'Thing',
      mod_id: Number(modId),
      availability: 1,
      can_blueprint: true,
    };
    const saved = await signed(alice, 'POST', '/v1/engram.php', engram);
    assert.equal(saved.status, 200, saved.text);
    assert.equal((await server.request('GET', `/v1/engram.php/${saved.body.uid}`)).status, 200);
    assert.equal((await signed(alice, 'DELETE', `/v1/mod.php/${modId}`)).status, 200);
    assert.equal((await server.request('GET', `/v1/engram.php/${saved.body.uid}`)).status, 404);

    const other = newMod();
    await confirmed(alice, other);
    const again = await signed(alice, 'POST', '/v1/engram.php', { ...engram, mod_id: other });
    assert.equal(again.status, 200, again.text);
    const self = `/v1/user.php/${alice.userId}`;
    assert.equal((await signed(alice, 'DELETE', self)).status, 200);
    assert.equal((await server.request('GET', `/v1/engram.php/${again.body.uid}`)).status, 404);
    assert.deepEqual((await server.request('GET', `/v1/engram.php?mod_id=${other}`)).body, []);
  });
});

describe('spawn code page', () => {
  test("spawncodes_url is a public page listing the mod's spawn commands, escaped", async () => {
    const modId = newMod({ name: 'Dino <Storage>' });
    const mod = await confirmed(alice, modId);
    const path = `/Game/Mods/${modId}/PrimalItem_Box.PrimalItem_Box`;
    const saved = await signed(alice, 'POST', '/v1/engram.php', {
      path,
      label: 'Box <b>big</b>',
      mod_id: modId,
      availability: 3,
      can_blueprint: true,
    });
    assert.equal(saved.status, 200, saved.text);
    const page = await server.request('GET', new URL(mod.spawncodes_url).pathname + new URL(mod.spawncodes_url).search);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.ok(page.text.includes(`cheat giveitem &quot;Blueprint&#39;${path}&#39;&quot; 1 0 false`), page.text);
    assert.ok(page.text.includes('Box &lt;b&gt;big&lt;/b&gt;'));
    assert.ok(page.text.includes('Dino &lt;Storage&gt;'));
    assert.equal((await server.request('GET', '/spawn?mod_id=abc')).status, 400);
  });
});
