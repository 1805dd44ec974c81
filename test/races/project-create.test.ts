/**
 * Concurrent writes of one new projectId: exactly one request creates it, every other is the
 * update the spec promises (never 409, never "No project"), and another user can still not take it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startServer, type TestServer } from '../helpers/server.ts';
import { assertError, type SignedIn, signIn } from '../rest/fixtures/clients.ts';

let server: TestServer;
let owner: SignedIn;
let intruder: SignedIn;
before(async () => {
  server = await startServer();
  owner = await signIn(server);
  intruder = await signIn(server);
});
after(() => server.close());

describe('concurrent writes of one new projectId', () => {
  test('200 simultaneous POSTs by its owner: one creates it, the other 199 update it', async () => {
    const projectId = randomUUID();
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        owner.call('POST', '/v4/projects', { body: { projectId, title: `Title ${index}` } }),
      ),
    );
    const statuses = replies.map((reply) => reply.status);
    assert.deepEqual([...new Set(statuses)], [200], replies.find((reply) => reply.status !== 200)?.text);
    const created = replies.filter((reply) => reply.body.created.length === 1);
    const updated = replies.filter((reply) => reply.body.updated.length === 1);
    assert.equal(created.length, 1);
    assert.equal(updated.length, 199);
    for (const reply of replies) assert.equal(reply.body.created.length + reply.body.updated.length, 1);
    assert.equal(created[0]!.body.created[0].projectId, projectId);
    assert.equal(created[0]!.body.created[0].revision, 1);
    for (const reply of updated) assert.equal(reply.body.updated[0].projectId, projectId);
    // Every update counted: one create plus 199 updates.
    const stored = await owner.call('GET', `/v4/projects/${projectId}`);
    assert.equal(stored.status, 200, stored.text);
    assert.equal(stored.body.revision, 200);
    assert.deepEqual(
      [...new Set(updated.map((reply) => reply.body.updated[0].revision))].length,
      199,
      'each update saw its own revision',
    );
    // Still the owner's: another user's POST naming it is 404 and changes nothing.
    assertError(
      await intruder.call('POST', '/v4/projects', { body: { projectId, title: 'Hijacked' } }),
      404,
      'notFound',
    );
    assert.equal((await owner.call('GET', `/v4/projects/${projectId}`)).body.revision, 200);
  });

  test('bulk POSTs naming overlapping new ids in opposite orders all succeed; each id is created once', async () => {
    const ids = Array.from({ length: 5 }, () => randomUUID());
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, index) => {
        const order = index % 2 === 0 ? ids : [...ids].reverse();
        return owner.call('POST', '/v4/projects', {
          body: order.map((projectId) => ({ projectId, title: `T${index}` })),
        });
      }),
    );
    for (const reply of replies) assert.equal(reply.status, 200, reply.text);
    const createdIds = replies.flatMap((reply) =>
      reply.body.created.map((project: { projectId: string }) => project.projectId),
    );
    assert.deepEqual(createdIds.sort(), [...ids].sort());
    const updates = replies.reduce((sum, reply) => sum + reply.body.updated.length, 0);
    assert.equal(updates, 40 * 5 - 5);
  });

  test('simultaneous PUTs of a new id by its owner: one 201, the others 200', async () => {
    const projectId = randomUUID();
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        owner.call('PUT', `/v4/projects/${projectId}`, { body: { title: `P${index}` } }),
      ),
    );
    const statuses = replies.map((reply) => reply.status).sort();
    assert.equal(statuses.filter((status) => status === 201).length, 1, replies.map((reply) => reply.text).join('\n'));
    assert.equal(statuses.filter((status) => status === 200).length, 49);
    assert.equal((await owner.call('GET', `/v4/projects/${projectId}`)).body.revision, 50);
  });

  test('the owner and another user racing for one new id: whoever creates it keeps it, the other gets 404', async () => {
    const projectId = randomUUID();
    const replies = await Promise.all(
      Array.from({ length: 60 }, (_, index) =>
        (index % 2 === 0 ? owner : intruder).call('POST', '/v4/projects', { body: { projectId, title: `R${index}` } }),
      ),
    );
    const winner = replies.find((reply) => reply.status === 200 && reply.body.created.length === 1);
    assert.ok(winner, 'one request created it');
    const holder = winner.body.created[0].userId as string;
    for (const [index, reply] of replies.entries()) {
      const client = index % 2 === 0 ? owner : intruder;
      if (client.account.userId === holder) assert.equal(reply.status, 200, reply.text);
      else assertError(reply, 404, 'notFound');
    }
    assert.equal(replies.filter((reply) => reply.status === 200 && reply.body.created.length === 1).length, 1);
  });
});
