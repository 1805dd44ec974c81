/**
 * The client library's v4 classes against the real server: lists as async iterators that read
 * pages on demand (1,000 projects), and every write: create-or-update (single and bulk),
 * replace, patch, delete, bulk delete; the caller's user and sessions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ContentServiceClient, Project } from '../../client/src/index.ts';
import { type Account, countingFetch, newClient, signInQuickly } from '../helpers/client.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let client: ContentServiceClient;
let account: Account;
let counter: ReturnType<typeof countingFetch>;

before(async () => {
  server = await startServer({ baseUrlIsOwnAddress: true });
  counter = countingFetch();
  ({ client, account } = await newClient(server, { fetch: counter.fetch }));
  await signInQuickly(server, client, account);
});
after(() => server.close());

describe('projects', () => {
  test('paging through 1,000 projects: every one exactly once, each page fetched only when needed', async () => {
    const titles = Array.from({ length: 1000 }, (_, i) => `Paged ${String(i).padStart(4, '0')}`);
    const saved = await client.projects.save(titles.map((title) => ({ title })));
    assert.equal(saved.created.length, 1000);
    assert.equal(saved.updated.length, 0);

    const before = counter.count('GET /v4/projects');
    const seen: Project[] = [];
    for await (const project of client.projects.list({ title: 'Paged', pageSize: 100, sortedColumn: 'title' }))
      seen.push(project);
    assert.equal(counter.count('GET /v4/projects') - before, 10);
    assert.deepEqual(
      seen.map((project) => project.title),
      titles,
    );
    assert.equal(new Set(seen.map((project) => project.projectId)).size, 1000);

    // Stopping early reads no further page.
    const start = counter.count('GET /v4/projects');
    for await (const project of client.projects.list({
      title: 'Paged',
      pageSize: 100,
      sortedColumn: 'title',
      sortDirection: 'descending',
    })) {
      assert.equal(project.title, 'Paged 0999');
      break;
    }
    assert.equal(counter.count('GET /v4/projects') - start, 1);

    const page = await client.projects.listPage({ title: 'Paged', pageSize: 250, page: 4 });
    assert.equal(page.totalResults, 1000);
    assert.equal(page.pages, 4);
    assert.equal(page.results.length, 250);

    await client.projects.deleteMany(seen.map((project) => project.projectId));
    assert.equal((await client.projects.listPage({ title: 'Paged' })).totalResults, 0);
  });

  test('create, get, update by POST (single and bulk), replace, patch, delete', async () => {
    const created = await client.projects.create({ title: 'First', description: 'about it' });
    assert.equal(created.title, 'First');
    assert.equal(created.gameId, 'Ark');
    assert.equal(created.userId, account.userId);
    assert.equal(created.revision, 1);
    assert.deepEqual(await client.projects.get(created.projectId), created);

    const bulk = await client.projects.save([
      { projectId: created.projectId, title: 'First, renamed' },
      { title: 'Second' },
    ]);
    assert.deepEqual(
      bulk.updated.map((project) => project.title),
      ['First, renamed'],
    );
    assert.deepEqual(
      bulk.created.map((project) => project.title),
      ['Second'],
    );
    assert.equal(bulk.updated[0]!.description, 'about it');

    const replaced = await client.projects.replace(created.projectId, { title: 'Replaced' });
    assert.equal(replaced.description, ''); // PUT resets what it omits
    const patched = await client.projects.patch(created.projectId, { gameId: 'Other' });
    assert.equal(patched.title, 'Replaced');
    assert.equal(patched.gameId, 'Other');
    assert.ok(patched.revision > replaced.revision);

    await client.projects.delete(created.projectId);
    const gone = await client.projects.get(created.projectId).catch((error) => error);
    assert.equal(gone.status, 404);
    await client.projects.deleteMany([bulk.created[0]!.projectId]);
    assert.equal((await client.projects.get(bulk.created[0]!.projectId).catch((error) => error)).status, 404);
  });

  test('a bulk delete naming a missing project deletes nothing', async () => {
    const kept = await client.projects.create({ title: 'Kept' });
    const failure = await client.projects
      .deleteMany([kept.projectId, '00000000-0000-4000-8000-000000000000'])
      .catch((error) => error);
    assert.equal(failure.status, 404);
    assert.equal((await client.projects.get(kept.projectId)).title, 'Kept');
  });
});

describe('user and sessions', () => {
  test('the caller as user: get and patch; users list and get', async () => {
    const me = await client.user.get();
    assert.equal(me.userId, account.userId);
    const renamed = await client.user.patch({ username: `${account.username}x` });
    assert.equal(renamed.username, `${account.username}x`);
    assert.equal((await client.users.get(account.userId)).username, `${account.username}x`);
    const listed = [];
    for await (const user of client.users.list({ username: `${account.username}x` })) listed.push(user.userId);
    assert.deepEqual(listed, [account.userId]);
    await client.user.patch({ username: account.username });
  });

  test('sessions: the current one is listed', async () => {
    const current = await client.sessions.current();
    const ids = [];
    for await (const session of client.sessions.list()) ids.push(session.sessionId);
    assert.ok(ids.includes(current.sessionId));
    assert.deepEqual(current.scopes, ['common', 'users:read', 'users:update']);
    assert.equal(current.applicationId, client.client.client_id);
  });
});
