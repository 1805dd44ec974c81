/**
 * v4 Project class through the generic REST engine: create-or-update, get, replace, patch,
 * delete (one and bulk), listing (paging, sorting, filters), validation, ownership and tokens.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServer, type TestServer } from '../helpers/server.ts';
import { assertError, ISO_UTC, type SignedIn, signIn, UUID } from './fixtures/clients.ts';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

const PROJECT_KEYS = ['createdAt', 'description', 'gameId', 'projectId', 'revision', 'title', 'updatedAt', 'userId'];

async function post(client: SignedIn, body: unknown) {
  const reply = await client.call('POST', '/v4/projects', { body });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as { created: any[]; updated: any[] };
}

async function createMany(client: SignedIn, items: object[]) {
  const { created, updated } = await post(client, items);
  assert.equal(created.length, items.length);
  assert.deepEqual(updated, []);
  return created;
}

async function list(client: SignedIn, query = '') {
  const reply = await client.call('GET', `/v4/projects${query ? `?${query}` : ''}`);
  assert.equal(reply.status, 200, reply.text);
  return reply.body as { totalResults: number; pageSize: number; pages: number; page: number; results: any[] };
}

async function getProject(client: SignedIn, id: string) {
  const reply = await client.call('GET', `/v4/projects/${id}`);
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

const ids = (items: Array<{ projectId: string }>) => items.map((item) => item.projectId);

function assertProject(project: any, owner: SignedIn) {
  assert.deepEqual(Object.keys(project).sort(), PROJECT_KEYS);
  assert.match(project.projectId, UUID);
  assert.equal(project.userId, owner.account.userId);
  assert.match(project.createdAt, ISO_UTC);
  assert.match(project.updatedAt, ISO_UTC);
  assert.equal(typeof project.revision, 'number');
}

describe('POST /v4/projects creates or updates', () => {
  let owner: SignedIn;
  before(async () => {
    owner = await signIn(server);
  });

  test('one object creates a project with defaults, revision 1 and equal ISO 8601 UTC timestamps', async () => {
    const before = Date.now();
    const { created, updated } = await post(owner, { title: 'First' });
    assert.deepEqual(updated, []);
    assert.equal(created.length, 1);
    const [project] = created;
    assertProject(project, owner);
    assert.equal(project.title, 'First');
    assert.equal(project.description, '');
    assert.equal(project.gameId, 'Ark');
    assert.equal(project.revision, 1);
    assert.equal(project.createdAt, project.updatedAt);
    const createdMs = Date.parse(project.createdAt);
    assert.ok(createdMs >= before - 1000 && createdMs <= Date.now() + 1000, project.createdAt);
    assert.deepEqual(await getProject(owner, project.projectId), project);
  });

  test('ids the server makes are UUIDv7: time-ordered, in the order of the array, stamped with the time of creation', async () => {
    const before = Date.now();
    const created = await createMany(
      owner,
      Array.from({ length: 60 }, (_, index) => ({ title: `Ordered ${index}` })),
    );
    const after = Date.now();
    for (const project of created) {
      assert.equal(project.projectId[14], '7', project.projectId);
      assert.match(project.projectId[19], /[89ab]/);
      const stamp = parseInt(project.projectId.replace(/-/g, '').slice(0, 12), 16);
      assert.ok(stamp >= before && stamp <= after + 1, `${stamp} within [${before}, ${after}]`);
    }
    const made = ids(created);
    assert.deepEqual([...made].sort(), made);
  });

  test('a client-supplied id of a new project is honoured, lowercased', async () => {
    const id = randomUUID();
    const { created } = await post(owner, {
      projectId: id.toUpperCase(),
      title: 'Given id',
      description: 'd',
      gameId: 'ArkSA',
    });
    assert.equal(created[0].projectId, id);
    assert.equal(created[0].description, 'd');
    assert.equal(created[0].gameId, 'ArkSA');
    assert.equal((await getProject(owner, id)).title, 'Given id');
  });

  test('a POST naming an existing project changes only the supplied properties, increments revision and keeps createdAt', async () => {
    const [original] = await createMany(owner, [{ title: 'Old title', description: 'kept', gameId: 'ArkSA' }]);
    await sleep(5);
    const { created, updated } = await post(owner, { projectId: original.projectId, title: 'New title' });
    assert.deepEqual(created, []);
    assert.equal(updated.length, 1);
    const [changed] = updated;
    assertProject(changed, owner);
    assert.equal(changed.title, 'New title');
    assert.equal(changed.description, 'kept');
    assert.equal(changed.gameId, 'ArkSA');
    assert.equal(changed.revision, 2);
    assert.equal(changed.createdAt, original.createdAt);
    assert.ok(
      Date.parse(changed.updatedAt) > Date.parse(original.updatedAt),
      `${changed.updatedAt} after ${original.updatedAt}`,
    );
    await sleep(5);
    const again = await post(owner, { projectId: original.projectId, description: 'changed' });
    assert.equal(again.updated[0].revision, 3);
    assert.equal(again.updated[0].title, 'New title');
    assert.equal(again.updated[0].createdAt, original.createdAt);
    assert.deepEqual(await getProject(owner, original.projectId), again.updated[0]);
  });

  test('an array creates and updates in one request, each object in created or updated', async () => {
    const [existing] = await createMany(owner, [{ title: 'Existing' }]);
    const newId = randomUUID();
    const { created, updated } = await post(owner, [
      { title: 'Brand new' },
      { projectId: existing.projectId, gameId: 'Other' },
      { projectId: newId, title: 'New with id' },
    ]);
    assert.deepEqual(
      created.map((p) => p.title),
      ['Brand new', 'New with id'],
    );
    assert.equal(created[1].projectId, newId);
    for (const project of created) assert.equal(project.revision, 1);
    assert.equal(updated.length, 1);
    assert.equal(updated[0].projectId, existing.projectId);
    assert.equal(updated[0].gameId, 'Other');
    assert.equal(updated[0].title, 'Existing');
    assert.equal(updated[0].revision, 2);
  });

  test('read-only properties in a write are accepted and ignored', async () => {
    const [project] = await createMany(owner, [{ title: 'Read-only test' }]);
    const { updated } = await post(owner, {
      ...project,
      title: 'Changed',
      revision: 99,
      createdAt: '2000-01-01T00:00:00.000Z',
      userId: randomUUID(),
    });
    assert.equal(updated[0].title, 'Changed');
    assert.equal(updated[0].revision, 2);
    assert.equal(updated[0].createdAt, project.createdAt);
    assert.equal(updated[0].userId, owner.account.userId);
    const { created } = await post(owner, { title: 'New with read-only', revision: 7, updatedAt: 'x' });
    assert.equal(created[0].revision, 1);
  });

  test('an unknown property is 400 naming it, and nothing is created', async () => {
    const count = (await list(owner)).totalResults;
    const single = await owner.call('POST', '/v4/projects', { body: { title: 'x', colour: 'red' } });
    assertError(single, 400, 'badRequest', /colour/);
    const inArray = await owner.call('POST', '/v4/projects', { body: [{ title: 'ok' }, { title: 'x', owner: 'me' }] });
    assertError(inArray, 400, 'badRequest', /owner/);
    assert.equal((await list(owner)).totalResults, count);
  });

  test('bad values are 400: wrong types, empty or too long title, null, not an object', async () => {
    const bodies: unknown[] = [
      { title: 5 },
      { title: '' },
      { title: 'x'.repeat(201) },
      { title: null },
      { title: 'ok', description: null },
      { title: 'ok', gameId: '' },
      { title: 'ok', description: ['a'] },
      { title: 'ok', projectId: 'not-a-uuid' },
      [],
      'just text',
      42,
    ];
    const count = (await list(owner)).totalResults;
    for (const body of bodies) {
      const reply = await owner.call('POST', '/v4/projects', {
        body: typeof body === 'string' ? JSON.stringify(body) : body,
        headers: { 'content-type': 'application/json' },
      });
      assertError(reply, 400, 'badRequest');
    }
    assert.equal((await list(owner)).totalResults, count);
  });

  test('a new project without title is 400', async () => {
    const reply = await owner.call('POST', '/v4/projects', { body: { description: 'no title' } });
    assertError(reply, 400, 'badRequest', /title/);
  });

  test('a bulk POST with one invalid element (wrong type) is 400 and changes nothing', async () => {
    const [existing] = await createMany(owner, [{ title: 'Bulk target' }]);
    const before = await list(owner);
    const reply = await owner.call('POST', '/v4/projects', {
      body: [{ title: 'Would be new' }, { projectId: existing.projectId, title: 'Would change' }, { title: 12 }],
    });
    assertError(reply, 400, 'badRequest');
    assert.deepEqual(await list(owner), before);
  });

  test('a bulk POST whose last element misses the required title is 400 and keeps none of the earlier elements', async () => {
    const [existing] = await createMany(owner, [{ title: 'Bulk target 2' }]);
    const before = await list(owner);
    const reply = await owner.call('POST', '/v4/projects', {
      body: [
        { title: 'Would be new' },
        { projectId: existing.projectId, title: 'Would change' },
        { description: 'no title' },
      ],
    });
    assertError(reply, 400, 'badRequest', /title/);
    assert.deepEqual(await list(owner), before);
    assert.equal((await getProject(owner, existing.projectId)).revision, 1);
  });

  test('a bulk POST naming one id twice is 400 and changes nothing', async () => {
    const before = await list(owner);
    const id = randomUUID();
    const reply = await owner.call('POST', '/v4/projects', {
      body: [
        { projectId: id, title: 'a' },
        { projectId: id.toUpperCase(), title: 'b' },
      ],
    });
    assertError(reply, 400, 'badRequest');
    assert.deepEqual(await list(owner), before);
  });

  test('a bulk POST of more than 1,000 objects is 400', async () => {
    const reply = await owner.call('POST', '/v4/projects', {
      body: Array.from({ length: 1001 }, (_, i) => ({ title: `t${i}` })),
    });
    assertError(reply, 400, 'badRequest');
  });
});

describe('a bulk POST answers each project as a later GET shows it', () => {
  test('plain and awkward text (quotes, control characters, non-ASCII, a lone surrogate) alike', async () => {
    const owner = await signIn(server);
    const titles = ['plain', 'say "hi" \\ bye', 'tab\there\u0001', 'Größe 中文 😀', 'lone \ud800 half', '</script>'];
    const { created } = await post(
      owner,
      titles.map((title, index) => ({
        title,
        description: `d${index}`,
        ...(index % 2 === 0 ? { projectId: randomUUID().toUpperCase() } : {}),
      })),
    );
    assert.equal(created.length, titles.length);
    for (const project of created) {
      const reply = await owner.call('GET', `/v4/projects/${project.projectId}`);
      assert.equal(reply.status, 200);
      assert.deepEqual(project, reply.body);
    }
  });
});

describe('one project: GET, PUT, PATCH, DELETE', () => {
  let owner: SignedIn;
  before(async () => {
    owner = await signIn(server);
  });

  test('GET answers the instance, also for the id in upper case', async () => {
    const [project] = await createMany(owner, [{ title: 'Get me', description: 'text' }]);
    assert.deepEqual(await getProject(owner, project.projectId), project);
    assert.deepEqual(await getProject(owner, project.projectId.toUpperCase()), project);
  });

  test('GET of an unknown id or a non-UUID is 404', async () => {
    assertError(await owner.call('GET', `/v4/projects/${randomUUID()}`), 404, 'notFound');
    assertError(await owner.call('GET', '/v4/projects/not-a-uuid'), 404, 'notFound');
  });

  test('PUT of a new id is 201 with the instance, created with that id', async () => {
    const id = randomUUID();
    const reply = await owner.call('PUT', `/v4/projects/${id}`, { body: { title: 'Put new', gameId: 'ArkSA' } });
    assert.equal(reply.status, 201, reply.text);
    assertProject(reply.body, owner);
    assert.equal(reply.body.projectId, id);
    assert.equal(reply.body.title, 'Put new');
    assert.equal(reply.body.description, '');
    assert.equal(reply.body.revision, 1);
    assert.deepEqual(await getProject(owner, id), reply.body);
  });

  test('PUT of an existing project is 200 and replaces it: omitted properties go back to their defaults', async () => {
    const [project] = await createMany(owner, [{ title: 'Before', description: 'will reset', gameId: 'ArkSA' }]);
    await sleep(5);
    const reply = await owner.call('PUT', `/v4/projects/${project.projectId}`, { body: { title: 'After' } });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, {
      ...project,
      title: 'After',
      description: '',
      gameId: 'Ark',
      revision: 2,
      updatedAt: reply.body.updatedAt,
    });
    assert.ok(Date.parse(reply.body.updatedAt) > Date.parse(project.updatedAt));
    assert.deepEqual(await getProject(owner, project.projectId), reply.body);
  });

  test('PUT back what GET answered is accepted (read-only properties ignored) and counts as an update', async () => {
    const [project] = await createMany(owner, [{ title: 'Round trip', description: 'same' }]);
    const reply = await owner.call('PUT', `/v4/projects/${project.projectId}`, { body: project });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.revision, 2);
    assert.equal(reply.body.description, 'same');
    assert.equal(reply.body.createdAt, project.createdAt);
  });

  test('PUT without the required title, with an unknown property, or with another id in the body is 400 and changes nothing', async () => {
    const [project] = await createMany(owner, [{ title: 'Unchanged' }]);
    const path = `/v4/projects/${project.projectId}`;
    assertError(await owner.call('PUT', path, { body: { description: 'no title' } }), 400, 'badRequest', /title/);
    assertError(await owner.call('PUT', path, { body: { title: 'x', extra: 1 } }), 400, 'badRequest', /extra/);
    assertError(await owner.call('PUT', path, { body: { projectId: randomUUID(), title: 'x' } }), 400, 'badRequest');
    assertError(await owner.call('PUT', '/v4/projects/not-a-uuid', { body: { title: 'x' } }), 400, 'badRequest');
    assert.deepEqual(await getProject(owner, project.projectId), project);
  });

  test('PATCH changes only the given properties, increments revision and keeps createdAt', async () => {
    const [project] = await createMany(owner, [{ title: 'Patch me', description: 'keep', gameId: 'ArkSA' }]);
    await sleep(5);
    const reply = await owner.call('PATCH', `/v4/projects/${project.projectId}`, { body: { title: 'Patched' } });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, { ...project, title: 'Patched', revision: 2, updatedAt: reply.body.updatedAt });
    assert.ok(Date.parse(reply.body.updatedAt) > Date.parse(project.updatedAt));
    const second = await owner.call('PATCH', `/v4/projects/${project.projectId}`, { body: { description: '' } });
    assert.equal(second.body.revision, 3);
    assert.equal(second.body.description, '');
    assert.equal(second.body.title, 'Patched');
    assert.deepEqual(await getProject(owner, project.projectId), second.body);
  });

  test('PATCH of a project that does not exist is 404 and creates nothing', async () => {
    const id = randomUUID();
    assertError(await owner.call('PATCH', `/v4/projects/${id}`, { body: { title: 'x' } }), 404, 'notFound');
    assertError(await owner.call('GET', `/v4/projects/${id}`), 404, 'notFound');
  });

  test('PATCH with an unknown property or a bad value is 400 and changes nothing', async () => {
    const [project] = await createMany(owner, [{ title: 'Patch validation' }]);
    const path = `/v4/projects/${project.projectId}`;
    assertError(await owner.call('PATCH', path, { body: { nope: true } }), 400, 'badRequest', /nope/);
    assertError(await owner.call('PATCH', path, { body: { title: '' } }), 400, 'badRequest');
    assertError(await owner.call('PATCH', path, { body: { gameId: 3 } }), 400, 'badRequest');
    assert.deepEqual(await getProject(owner, project.projectId), project);
  });

  test('DELETE is 204 without a body; the project is gone and a second DELETE is 404', async () => {
    const [project] = await createMany(owner, [{ title: 'Delete me' }]);
    const reply = await owner.call('DELETE', `/v4/projects/${project.projectId}`);
    assert.equal(reply.status, 204);
    assert.equal(reply.text, '');
    assertError(await owner.call('GET', `/v4/projects/${project.projectId}`), 404, 'notFound');
    assertError(await owner.call('DELETE', `/v4/projects/${project.projectId}`), 404, 'notFound');
    assert.ok(!ids((await list(owner)).results).includes(project.projectId));
  });
});

describe('bulk DELETE /v4/projects', () => {
  let owner: SignedIn;
  let other: SignedIn;
  before(async () => {
    [owner, other] = await Promise.all([signIn(server), signIn(server)]);
  });

  test('deletes every listed project (other properties ignored) and answers 204', async () => {
    const [keep, ...gone] = await createMany(owner, [
      { title: 'keep' },
      { title: 'gone 1' },
      { title: 'gone 2' },
      { title: 'gone 3' },
    ]);
    const reply = await owner.call('DELETE', '/v4/projects', {
      body: [
        gone[0],
        { projectId: gone[1].projectId.toUpperCase() },
        { projectId: gone[2].projectId, title: 'ignored' },
      ],
    });
    assert.equal(reply.status, 204, reply.text);
    assert.equal(reply.text, '');
    const left = ids((await list(owner)).results);
    assert.ok(left.includes(keep.projectId));
    for (const project of gone) assert.ok(!left.includes(project.projectId));
  });

  test('a missing id aborts the whole request: 404 and nothing deleted', async () => {
    const mine = await createMany(owner, [{ title: 'stay 1' }, { title: 'stay 2' }]);
    const before = await list(owner);
    const missing = randomUUID();
    const reply = await owner.call('DELETE', '/v4/projects', {
      body: [{ projectId: mine[0].projectId }, { projectId: missing }, { projectId: mine[1].projectId }],
    });
    assertError(reply, 404, 'notFound');
    assert.deepEqual(await list(owner), before);
  });

  test("another user's id aborts the whole request: 404 and nothing deleted, theirs included", async () => {
    const [mine] = await createMany(owner, [{ title: 'mine' }]);
    const [theirs] = await createMany(other, [{ title: 'theirs' }]);
    const before = await list(owner);
    const reply = await owner.call('DELETE', '/v4/projects', {
      body: [{ projectId: mine.projectId }, { projectId: theirs.projectId }],
    });
    assertError(reply, 404, 'notFound');
    assert.deepEqual(await list(owner), before);
    assert.deepEqual(await getProject(other, theirs.projectId), theirs);
  });

  test('an empty array, an object without projectId or a non-UUID id is 400', async () => {
    const before = await list(owner);
    assertError(await owner.call('DELETE', '/v4/projects', { body: [] }), 400, 'badRequest');
    assertError(await owner.call('DELETE', '/v4/projects', { body: [{ title: 'x' }] }), 400, 'badRequest');
    assertError(await owner.call('DELETE', '/v4/projects', { body: [{ projectId: 'nope' }] }), 400, 'badRequest');
    assertError(
      await owner.call('DELETE', '/v4/projects', { body: { projectId: before.results[0].projectId } }),
      400,
      'badRequest',
    );
    assert.deepEqual(await list(owner), before);
  });
});

describe('listing: paging', () => {
  let owner: SignedIn;
  let all: any[];
  before(async () => {
    owner = await signIn(server);
    all = await createMany(
      owner,
      Array.from({ length: 23 }, (_, i) => ({ title: `paged${String(i).padStart(2, '0')}` })),
    );
  });

  test('without parameters: every project on page 1 of 1, pageSize 250', async () => {
    const page = await list(owner);
    assert.deepEqual(
      { ...page, results: undefined },
      { totalResults: 23, pageSize: 250, pages: 1, page: 1, results: undefined },
    );
    assert.deepEqual(ids(page.results).sort(), ids(all).sort());
    for (const project of page.results) assertProject(project, owner);
  });

  test('a page is JSON in UTF-8, compressed when the client accepts it, and HEAD has its headers only', async () => {
    const plain = await owner.call('GET', '/v4/projects');
    assert.equal(plain.headers.get('content-type'), 'application/json; charset=utf-8');
    const compressed = await owner.call('GET', '/v4/projects', { headers: { 'accept-encoding': 'br' } });
    assert.equal(compressed.headers.get('content-encoding'), 'br');
    assert.deepEqual(compressed.body, plain.body);
    const head = await owner.call('HEAD', '/v4/projects');
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers.get('content-type'), 'application/json; charset=utf-8');
  });

  test('23 projects with pageSize 5 are pages 1 to 5, the last with 3, each project exactly once', async () => {
    const seen: string[] = [];
    for (let number = 1; number <= 5; number++) {
      const page = await list(owner, `pageSize=5&page=${number}`);
      assert.equal(page.totalResults, 23);
      assert.equal(page.pageSize, 5);
      assert.equal(page.pages, 5);
      assert.equal(page.page, number);
      assert.equal(page.results.length, number < 5 ? 5 : 3);
      seen.push(...ids(page.results));
    }
    assert.equal(new Set(seen).size, 23);
    assert.deepEqual([...seen].sort(), ids(all).sort());
  });

  test('a page past the end is empty but still reports the totals', async () => {
    const page = await list(owner, 'pageSize=5&page=6');
    assert.deepEqual(page, { totalResults: 23, pageSize: 5, pages: 5, page: 6, results: [] });
    const far = await list(owner, 'page=1000');
    assert.deepEqual(far, { totalResults: 23, pageSize: 250, pages: 1, page: 1000, results: [] });
  });

  test('pages is totalResults / pageSize rounded up', async () => {
    for (const [pageSize, pages] of [
      [1, 23],
      [22, 2],
      [23, 1],
      [24, 1],
      [250, 1],
    ] as const) {
      const page = await list(owner, `pageSize=${pageSize}`);
      assert.equal(page.pages, pages, `pageSize ${pageSize}`);
      assert.equal(page.results.length, Math.min(pageSize, 23));
    }
  });

  test('a user without projects gets an empty first page', async () => {
    const empty = await signIn(server);
    assert.deepEqual(await list(empty), { totalResults: 0, pageSize: 250, pages: 0, page: 1, results: [] });
  });

  test('many projects with the same title sorted by title: no project repeated or lost across pages, either direction', async () => {
    const ties = await signIn(server);
    const created = await createMany(
      ties,
      Array.from({ length: 23 }, () => ({ title: 'same' })),
    );
    for (const direction of ['ascending', 'descending']) {
      const seen: string[] = [];
      for (let number = 1; number <= 6; number++) {
        const page = await list(ties, `sortedColumn=title&sortDirection=${direction}&pageSize=4&page=${number}`);
        assert.equal(page.pages, 6);
        seen.push(...ids(page.results));
      }
      assert.equal(seen.length, 23);
      assert.deepEqual([...seen].sort(), ids(created).sort(), direction);
      const whole = ids((await list(ties, `sortedColumn=title&sortDirection=${direction}`)).results);
      assert.deepEqual(seen, whole, `pages concatenated equal the whole list (${direction})`);
    }
  });
});

describe('listing: sorting', () => {
  let owner: SignedIn;
  let projects: any[];
  before(async () => {
    owner = await signIn(server);
    for (const title of ['delta', 'alpha', 'echo', 'charlie', 'bravo']) {
      await createMany(owner, [{ title }]);
      await sleep(3);
    }
    // Update in another order, so updatedAt's order differs from createdAt's.
    const current = (await list(owner)).results;
    for (const title of ['charlie', 'delta', 'alpha']) {
      const project = current.find((p: any) => p.title === title);
      const reply = await owner.call('PATCH', `/v4/projects/${project.projectId}`, {
        body: { description: `touched ${title}` },
      });
      assert.equal(reply.status, 200, reply.text);
      await sleep(3);
    }
    projects = (await list(owner)).results;
  });

  /** The order the API must give: by the column, ties broken by id, all in the given direction. */
  function expected(column: string, direction: 'ascending' | 'descending') {
    const sorted = [...projects].sort((a, b) =>
      a[column] < b[column] ? -1 : a[column] > b[column] ? 1 : a.projectId < b.projectId ? -1 : 1,
    );
    return ids(direction === 'ascending' ? sorted : sorted.reverse());
  }

  for (const column of ['title', 'createdAt', 'updatedAt']) {
    for (const direction of ['ascending', 'descending'] as const) {
      test(`sortedColumn=${column} sortDirection=${direction}`, async () => {
        const page = await list(owner, `sortedColumn=${column}&sortDirection=${direction}`);
        assert.deepEqual(ids(page.results), expected(column, direction));
      });
    }
  }

  test('the orders differ, so the sorts are really applied', () => {
    assert.notDeepEqual(expected('title', 'ascending'), expected('createdAt', 'ascending'));
    assert.notDeepEqual(expected('createdAt', 'ascending'), expected('updatedAt', 'ascending'));
    assert.deepEqual(
      expected('title', 'ascending').map((id) => projects.find((p) => p.projectId === id).title),
      ['alpha', 'bravo', 'charlie', 'delta', 'echo'],
    );
  });

  test('the default is updatedAt ascending; sortDirection defaults to ascending', async () => {
    assert.deepEqual(ids((await list(owner)).results), expected('updatedAt', 'ascending'));
    assert.deepEqual(ids((await list(owner, 'sortDirection=descending')).results), expected('updatedAt', 'descending'));
    assert.deepEqual(ids((await list(owner, 'sortedColumn=title')).results), expected('title', 'ascending'));
  });

  test('sorting applies before paging', async () => {
    const second = await list(owner, 'sortedColumn=title&sortDirection=descending&pageSize=2&page=2');
    assert.deepEqual(ids(second.results), expected('title', 'descending').slice(2, 4));
  });
});

describe('listing: filters', () => {
  let owner: SignedIn;
  const titles = (page: { results: any[] }) => page.results.map((p) => p.title).sort();
  before(async () => {
    owner = await signIn(server);
    await createMany(owner, [
      { title: 'Alpha Base', gameId: 'Ark' },
      { title: 'my ALPHABET', gameId: 'ArkSA' },
      { title: 'Beta', gameId: 'ArkSA' },
      { title: '100% done', gameId: 'Ark' },
      { title: 'snake_case', gameId: 'Ark' },
      { title: 'back\\slash', gameId: 'Ark' },
      { title: 'plain', gameId: 'Ark' },
    ]);
  });

  test('title matches a substring ignoring case', async () => {
    for (const text of ['alpha', 'ALPHA', 'lPhA']) {
      const page = await list(owner, `title=${encodeURIComponent(text)}`);
      assert.deepEqual(titles(page), ['Alpha Base', 'my ALPHABET'], text);
      assert.equal(page.totalResults, 2);
      assert.equal(page.pages, 1);
    }
    assert.deepEqual(titles(await list(owner, 'title=ase')), ['Alpha Base', 'snake_case']);
    assert.deepEqual(titles(await list(owner, 'title=zzz')), []);
  });

  test('%, _ and \\ in a title filter match only themselves', async () => {
    assert.deepEqual(titles(await list(owner, 'title=%25')), ['100% done']);
    assert.deepEqual(titles(await list(owner, 'title=_')), ['snake_case']);
    assert.deepEqual(titles(await list(owner, `title=${encodeURIComponent('\\')}`)), ['back\\slash']);
    assert.deepEqual(titles(await list(owner, 'title=a%25e')), []);
    assert.deepEqual(titles(await list(owner, 'title=e_c')), ['snake_case']);
    assert.deepEqual(titles(await list(owner, 'title=a_e')), []);
  });

  test('gameId matches exactly (not a substring, case-sensitive)', async () => {
    assert.deepEqual(titles(await list(owner, 'gameId=Ark')), [
      '100% done',
      'Alpha Base',
      'back\\slash',
      'plain',
      'snake_case',
    ]);
    assert.deepEqual(titles(await list(owner, 'gameId=ArkSA')), ['Beta', 'my ALPHABET']);
    assert.deepEqual(titles(await list(owner, 'gameId=Ar')), []);
    assert.deepEqual(titles(await list(owner, 'gameId=ark')), []);
  });

  test('filters combine (both must match) and the totals count only matches', async () => {
    const page = await list(owner, 'title=alpha&gameId=ArkSA');
    assert.deepEqual(titles(page), ['my ALPHABET']);
    assert.equal(page.totalResults, 1);
    const paged = await list(owner, 'gameId=Ark&pageSize=2&page=3');
    assert.deepEqual(
      { ...paged, results: paged.results.length },
      { totalResults: 5, pageSize: 2, pages: 3, page: 3, results: 1 },
    );
  });

  test("filters never reach another user's projects", async () => {
    const other = await signIn(server);
    assert.deepEqual(await list(other, 'title=alpha'), {
      totalResults: 0,
      pageSize: 250,
      pages: 0,
      page: 1,
      results: [],
    });
  });
});

describe('listing: invalid parameters are 400', () => {
  let owner: SignedIn;
  before(async () => {
    owner = await signIn(server);
  });

  const cases: Array<[string, string, RegExp?]> = [
    ['an unknown sortedColumn', 'sortedColumn=description', /sortedColumn/],
    ['sortedColumn naming a non-sortable property', 'sortedColumn=gameId', /sortedColumn/],
    ['a sortDirection other than ascending/descending', 'sortDirection=asc', /sortDirection/],
    ['pageSize 0', 'pageSize=0', /pageSize/],
    ['pageSize 251', 'pageSize=251', /pageSize/],
    ['a negative pageSize', 'pageSize=-5', /pageSize/],
    ['a pageSize that is not a number', 'pageSize=ten', /pageSize/],
    ['page 0', 'page=0', /page/],
    ['a page that is not a number', 'page=first', /page/],
    ['a page whose offset no database can take', 'page=1e20', /page/],
    [
      'a page just above the highest whose offset is an exact integer',
      `page=${Math.floor(Number.MAX_SAFE_INTEGER / 250) + 1}`,
      /page/,
    ],
    ['an unknown parameter', 'colour=red', /colour/],
    ['a filter on a property that is not filterable', 'description=x', /description/],
  ];
  for (const [name, query, pattern] of cases) {
    test(`${name} (${query})`, async () => {
      const reply = await owner.call('GET', `/v4/projects?${query}`);
      assertError(reply, 400, 'badRequest', pattern);
    });
  }

  test('the limits themselves are accepted: pageSize 1 and 250, page 1 and the highest page', async () => {
    for (const query of ['pageSize=1', 'pageSize=250', 'page=1', `page=${Math.floor(Number.MAX_SAFE_INTEGER / 250)}`]) {
      const reply = await owner.call('GET', `/v4/projects?${query}`);
      assert.equal(reply.status, 200, `${query}: ${reply.text}`);
    }
  });
});

describe("another user's project", () => {
  let owner: SignedIn;
  let intruder: SignedIn;
  let project: any;
  before(async () => {
    [owner, intruder] = await Promise.all([signIn(server), signIn(server)]);
    [project] = await createMany(owner, [{ title: 'Private', description: 'secret' }]);
  });

  test('is 404 for GET, PUT, PATCH and DELETE, and stays unchanged', async () => {
    const path = `/v4/projects/${project.projectId}`;
    assertError(await intruder.call('GET', path), 404, 'notFound');
    assertError(await intruder.call('PUT', path, { body: { title: 'Hijacked' } }), 404, 'notFound');
    assertError(await intruder.call('PATCH', path, { body: { title: 'Hijacked' } }), 404, 'notFound');
    assertError(await intruder.call('DELETE', path), 404, 'notFound');
    assert.deepEqual(await getProject(owner, project.projectId), project);
  });

  test('a POST naming its id is 404, neither created nor overwritten', async () => {
    assertError(
      await intruder.call('POST', '/v4/projects', { body: { projectId: project.projectId, title: 'Hijacked' } }),
      404,
      'notFound',
    );
    assertError(
      await intruder.call('POST', '/v4/projects', {
        body: [{ title: 'mine' }, { projectId: project.projectId, title: 'Hijacked' }],
      }),
      404,
      'notFound',
    );
    assert.deepEqual(await getProject(owner, project.projectId), project);
    assert.equal((await list(intruder)).totalResults, 0);
  });

  test('a bulk POST of more than one INSERT naming it last is 404 and creates none of the others', async () => {
    const body = [
      ...Array.from({ length: 120 }, (_, n) => ({ title: `mine ${n}` })),
      { projectId: project.projectId, title: 'Hijacked' },
    ];
    assertError(await intruder.call('POST', '/v4/projects', { body }), 404, 'notFound');
    assert.equal((await list(intruder)).totalResults, 0);
    assert.deepEqual(await getProject(owner, project.projectId), project);
  });

  test('is not listed for anyone but its owner', async () => {
    assert.deepEqual(ids((await list(intruder)).results), []);
    assert.ok(ids((await list(owner)).results).includes(project.projectId));
  });
});

describe('tokens', () => {
  let client: SignedIn;
  before(async () => {
    client = await signIn(server, 'common');
  });

  test('no token is 401 with WWW-Authenticate: Bearer, for every method', async () => {
    const id = randomUUID();
    for (const [method, path, body] of [
      ['GET', '/v4/projects', undefined],
      ['POST', '/v4/projects', { title: 'x' }],
      ['DELETE', '/v4/projects', [{ projectId: id }]],
      ['GET', `/v4/projects/${id}`, undefined],
      ['PUT', `/v4/projects/${id}`, { title: 'x' }],
      ['PATCH', `/v4/projects/${id}`, { title: 'x' }],
      ['DELETE', `/v4/projects/${id}`, undefined],
    ] as const) {
      const reply = await server.request(method, path, { body });
      assertError(reply, 401, 'unauthorized');
      assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer realm="v4"/, `${method} ${path}`);
    }
    assertError(await client.call('GET', `/v4/projects/${id}`), 404, 'notFound');
  });

  test('an unknown token is 401 invalid_token', async () => {
    const reply = await server.request('GET', '/v4/projects', {
      headers: { authorization: 'Bearer not-a-real-token' },
    });
    assertError(reply, 401, 'unauthorized');
    assert.match(reply.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  });

  test('a token with only the common scope may use projects; X-Service-Token works like Authorization', async () => {
    const { created } = await post(client, { title: 'common scope' });
    const reply = await server.request('GET', `/v4/projects/${created[0].projectId}`, {
      headers: { 'x-service-token': client.accessToken },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, created[0]);
  });
});
