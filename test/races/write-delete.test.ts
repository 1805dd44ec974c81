/**
 * A PUT or PATCH of one project racing a DELETE of it: whichever commits first, every answer is
 * one the spec allows (never 500), and what is stored afterwards agrees with the answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Reply, startServer, type TestServer } from '../helpers/server.ts';
import { type SignedIn, signIn } from '../rest/fixtures/clients.ts';

const RACES = 60;
/** Races run side by side, so the two requests of one race meet other requests' statements too. */
const AT_ONCE = 10;

let server: TestServer;
let owner: SignedIn;
before(async () => {
  server = await startServer();
  owner = await signIn(server);
});
after(() => server.close());

async function newProjects(count: number): Promise<string[]> {
  const reply = await owner.call('POST', '/v4/projects', {
    body: Array.from({ length: count }, (_, index) => ({ title: `Race ${index}` })),
  });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.created.map((project: { projectId: string }) => project.projectId);
}

/** Runs `race` once per id, AT_ONCE at a time, the write and the DELETE of each sent together. */
async function raceAll(
  ids: string[],
  write: (id: string, index: number) => Promise<Reply>,
): Promise<Array<{ id: string; index: number; write: Reply; remove: Reply }>> {
  const results: Array<{ id: string; index: number; write: Reply; remove: Reply }> = [];
  for (let from = 0; from < ids.length; from += AT_ONCE) {
    const batch = ids.slice(from, from + AT_ONCE);
    results.push(
      ...(await Promise.all(
        batch.map(async (id, offset) => {
          const index = from + offset;
          // Alternate which request leaves first.
          const [first, second] =
            index % 2 === 0
              ? [() => write(id, index), () => owner.call('DELETE', `/v4/projects/${id}`)]
              : [() => owner.call('DELETE', `/v4/projects/${id}`), () => write(id, index)];
          const [a, b] = await Promise.all([first(), second()]);
          return index % 2 === 0 ? { id, index, write: a, remove: b } : { id, index, write: b, remove: a };
        }),
      )),
    );
  }
  return results;
}

describe('a write racing a DELETE of the same project', () => {
  test(`${RACES} PUTs racing DELETEs: 200 or 201, 204 or 404, never 500; the project exists afterwards exactly when the PUT created it anew`, async () => {
    const ids = await newProjects(RACES);
    const results = await raceAll(ids, (id, index) =>
      owner.call('PUT', `/v4/projects/${id}`, { body: { title: `Put ${index}` } }),
    );
    for (const { id, index, write, remove } of results) {
      assert.ok([200, 201].includes(write.status), `PUT ${id}: ${write.status} ${write.text}`);
      assert.ok([204, 404].includes(remove.status), `DELETE ${id}: ${remove.status} ${remove.text}`);
      // The DELETE always finds the project: either the original or the one the PUT created after it.
      assert.equal(remove.status, 204, remove.text);
      assert.equal(write.body.title, `Put ${index}`);
      const stored = await owner.call('GET', `/v4/projects/${id}`);
      if (write.status === 201) {
        // Deleted first, then created anew by the PUT: a new instance, revision 1.
        assert.equal(stored.status, 200, stored.text);
        assert.equal(stored.body.title, `Put ${index}`);
        assert.equal(stored.body.revision, 1);
      } else {
        // Replaced first (revision 2), then deleted.
        assert.equal(write.body.revision, 2);
        assert.equal(stored.status, 404, stored.text);
      }
    }
  });

  test(`${RACES} PATCHes racing DELETEs: 200 or 404, 204, never 500; the project is gone afterwards`, async () => {
    const ids = await newProjects(RACES);
    const results = await raceAll(ids, (id, index) =>
      owner.call('PATCH', `/v4/projects/${id}`, { body: { title: `Patch ${index}` } }),
    );
    for (const { id, index, write, remove } of results) {
      assert.ok([200, 404].includes(write.status), `PATCH ${id}: ${write.status} ${write.text}`);
      assert.equal(remove.status, 204, `DELETE ${id}: ${remove.status} ${remove.text}`);
      if (write.status === 200) {
        assert.equal(write.body.title, `Patch ${index}`);
        assert.equal(write.body.revision, 2);
      } else {
        assert.equal(write.body.code, 'notFound', write.text);
      }
      assert.equal((await owner.call('GET', `/v4/projects/${id}`)).status, 404);
    }
  });

  test('bulk POSTs racing bulk DELETEs of the same projects: each all or nothing, never 500, stored state as answered', async () => {
    for (let round = 0; round < 6; round++) {
      const ids = await newProjects(40);
      const [post, remove] = await Promise.all([
        owner.call('POST', '/v4/projects', { body: ids.map((projectId) => ({ projectId, title: `Posted ${round}` })) }),
        owner.call('DELETE', '/v4/projects', { body: ids.map((projectId) => ({ projectId })) }),
      ]);
      assert.equal(post!.status, 200, post!.text);
      assert.equal(remove!.status, 204, remove!.text);
      const { created, updated } = post!.body as { created: unknown[]; updated: unknown[] };
      // Updated all, then all deleted; or all deleted first, then created anew by the POST.
      assert.ok(
        (created.length === 0 && updated.length === 40) || (created.length === 40 && updated.length === 0),
        `created ${created.length}, updated ${updated.length}`,
      );
      const list = await owner.call('GET', `/v4/projects?pageSize=250&title=${encodeURIComponent(`Posted ${round}`)}`);
      assert.equal(list.status, 200, list.text);
      assert.equal(
        list.body.results.filter((project: { projectId: string }) => ids.includes(project.projectId)).length,
        created.length,
      );
    }
  });
});
