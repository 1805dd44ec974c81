/**
 * The client library's v1 calls against the real server, with each key type (RSA over SHA-1 with
 * a PKCS#1 PEM key, RSA over SHA-256 and Ed25519 with PKCS#8 PEM keys): users, mods (register,
 * confirm, delete), engrams and documents; a wrong signature is a 403 whose details show the text.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ContentServiceError, type SignatureHash, V1Client } from '../../client/src/index.ts';
import { rsaKeyPair } from '../helpers/keys.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { publishMod } from '../helpers/v1.ts';
import { FakeWorkshop } from '../helpers/workshop.ts';

let server: TestServer;
let workshop: FakeWorkshop;

before(async () => {
  workshop = await new FakeWorkshop().start();
  server = await startServer({ baseUrlIsOwnAddress: true, env: { WORKSHOP_URL: workshop.template } });
});
after(async () => {
  await server.close();
  await workshop.stop();
});

const KEYS: Array<{ name: string; hash: SignatureHash; make: () => { privatePem: string; publicPem: string } }> = [
  {
    name: 'RSA over SHA-1, PKCS#1 PEM',
    hash: 'sha1',
    make: () => {
      const pair = rsaKeyPair(0);
      return {
        privatePem: pair.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
        publicPem: pair.publicKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
      };
    },
  },
  {
    name: 'RSA over SHA-256, PKCS#8 PEM',
    hash: 'sha256',
    make: () => {
      const pair = rsaKeyPair(1);
      return {
        privatePem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        publicPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      };
    },
  },
  {
    name: 'Ed25519, PKCS#8 PEM',
    hash: 'sha256',
    make: () => {
      const pair = generateKeyPairSync('ed25519');
      return {
        privatePem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        publicPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      };
    },
  },
];

for (const key of KEYS) {
  describe(`v1 with ${key.name}`, () => {
    const { privatePem, publicPem } = key.make();
    const userId = randomUUID();
    const v1 = () => new V1Client({ baseUrl: server.url, userId, privateKey: privatePem, hash: key.hash });

    test('users: create, get, get several, and a wrong key is 403 with the signed text in details', async () => {
      const created = await v1().users.create({ user_id: userId.toUpperCase(), public_key: publicPem });
      assert.equal(created.user_id, userId);
      assert.match(created.public_key, /BEGIN PUBLIC KEY/);
      assert.equal((await v1().users.get(userId)).user_id, userId);
      const several = await v1().users.getMany([userId, randomUUID()]);
      assert.deepEqual(
        several.map((user) => user.user_id),
        [userId],
      );
      assert.deepEqual(await v1().users.getMany([randomUUID()]), []);

      const other = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const failure = await new V1Client({ baseUrl: server.url, userId, privateKey: other }).mods
        .list()
        .catch((error) => error);
      assert.ok(failure instanceof ContentServiceError);
      assert.equal(failure.status, 403);
      assert.equal(failure.details, `GET\nhttps://${new URL(server.url).host}/v1/mod.php`);
    });

    test('mods: register, confirm (412 until the code is on the workshop page), list, get; engrams: save, list, get, delete', async () => {
      const modId = publishMod(workshop, { name: 'Client Mod' });
      const registered = await v1().mods.register(modId);
      assert.equal(registered.mod_id, modId);
      assert.equal(registered.confirmed, false);
      const early = await v1()
        .mods.confirm(modId)
        .catch((error) => error);
      assert.equal(early.status, 412);
      workshop.items.get(modId)!.description = `mine: ${registered.confirmation_code}`;
      const confirmed = await v1().mods.confirm(modId);
      assert.equal(confirmed.confirmed, true);
      assert.deepEqual(
        (await v1().mods.list()).map((mod) => mod.mod_id),
        [modId],
      );
      assert.equal((await v1().mods.get(modId)).name, 'Client Mod');

      const path = `/Game/Mods/${modId}/Items/Sword.Sword`;
      const saved = await v1().engrams.save({
        path,
        label: 'Sword',
        mod_id: modId,
        availability: ['Island', 'Scorched'],
        can_blueprint: true,
      });
      assert.equal(saved.class, 'Sword_C');
      assert.deepEqual(saved.environments, ['Island', 'Scorched']);
      const many = await v1().engrams.save([{ path, label: 'Better sword' }]);
      assert.equal(many[0]!.label, 'Better sword');
      const listed = await new V1Client({ baseUrl: server.url }).engrams.list({ modIds: [modId] });
      assert.deepEqual(
        listed.map((engram) => engram.uid),
        [saved.uid],
      );
      assert.equal(((await v1().engrams.get(saved.uid)) as { label: string }).label, 'Better sword');
      assert.deepEqual((await v1().engrams.delete(saved.uid)).deleted, [saved.uid]);
      assert.deepEqual(await v1().engrams.list({ modIds: [modId] }), []);

      assert.deepEqual((await v1().mods.delete(modId)).deleted, [modId]);
      assert.deepEqual(await v1().mods.list(), []);
    });

    test('documents: publish (one and several), list, metadata, download, exists, delete', async () => {
      const one = { Identifier: randomUUID(), Title: 'Loot: one', Description: 'first', Version: 1, LootSources: [] };
      const two = {
        Identifier: randomUUID(),
        Title: 'Two',
        Description: 'second',
        LootSources: [{ Class: 'Crate_C' }],
      };
      const published = await v1().documents.publish(one);
      assert.equal(published.document_id, one.Identifier);
      assert.equal(published.user_id, userId);
      const both = await v1().documents.publish([{ ...one, Description: 'first, again' }, two]);
      assert.deepEqual(
        both.map((meta) => meta.revision),
        [2, 1],
      );
      const mine = await v1().documents.list({ user_id: userId, sort: 'last_updated', direction: 'asc' });
      assert.deepEqual(new Set(mine.map((meta) => meta.document_id)), new Set([one.Identifier, two.Identifier]));
      assert.equal((await v1().documents.metadata(two.Identifier)).name, 'Two');
      assert.equal((await v1().documents.metadataMany([one.Identifier, two.Identifier])).length, 2);
      assert.equal(JSON.parse(await v1().documents.download(two.Identifier)).Title, 'Two');
      assert.equal((await v1().documents.metadata(two.Identifier)).download_count, 1);
      assert.equal(await v1().documents.exists(one.Identifier), true);
      assert.deepEqual(
        new Set((await v1().documents.delete([one.Identifier, two.Identifier])).deleted),
        new Set([one.Identifier, two.Identifier]),
      );
      assert.equal(await v1().documents.exists(one.Identifier), false);
    });

    test('users: delete yourself', async () => {
      assert.deepEqual((await v1().users.delete()).deleted, [userId]);
      const gone = await v1()
        .users.get(userId)
        .catch((error) => error);
      assert.equal(gone.status, 404);
    });
  });
}
