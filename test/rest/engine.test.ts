/**
 * The REST engine serves a class declared outside src/ (test/rest/fixtures/note.ts), mounted
 * through startServer's beforeListen, with every generic operation and no engine change.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startServer, type TestServer } from '../helpers/server.ts';
import { assertError, ISO_UTC, type SignedIn, signIn, UUID } from './fixtures/clients.ts';
import { createNotesTable, Note, serveClasses } from './fixtures/note.ts';

let server: TestServer;
let writer: SignedIn;
let reader: SignedIn;
let stranger: SignedIn;

before(async () => {
  server = await startServer({
    beforeListen: async (app) => {
      await createNotesTable(app.database.db);
      await serveClasses(app, [Note]);
    },
  });
  writer = await signIn(server, 'common users:update');
  [reader, stranger] = await Promise.all([
    signIn(server, 'common', writer.account),
    signIn(server, 'common users:update'),
  ]);
});
after(() => server.close());

const NOTE_KEYS = ['colour', 'createdAt', 'noteId', 'ownerId', 'priority', 'text'];

async function create(client: SignedIn, body: unknown) {
  const reply = await client.call('POST', '/v4/notes', { body });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as { created: any[]; updated: any[] };
}

async function list(client: SignedIn, query = '') {
  const reply = await client.call('GET', `/v4/notes${query ? `?${query}` : ''}`);
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

const texts = (page: { results: any[] }) => page.results.map((n) => n.text);

describe('a class declared outside src/', () => {
  test('POST creates an instance with the declared defaults, owner and timestamp, named by property (not column)', async () => {
    const { created, updated } = await create(writer, { text: 'first note' });
    assert.deepEqual(updated, []);
    const [note] = created;
    assert.deepEqual(Object.keys(note).sort(), NOTE_KEYS);
    assert.match(note.noteId, UUID);
    assert.equal(note.ownerId, writer.account.userId);
    assert.equal(note.text, 'first note');
    assert.equal(note.colour, 'yellow');
    assert.equal(note.priority, 0);
    assert.match(note.createdAt, ISO_UTC);
  });

  test('GET one answers the instance; an unknown id is 404', async () => {
    const [note] = (await create(writer, { text: 'get me', colour: 'blue', priority: 3 })).created;
    const reply = await reader.call('GET', `/v4/notes/${note.noteId}`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, note);
    assertError(await reader.call('GET', `/v4/notes/${randomUUID()}`), 404, 'notFound');
  });

  test('POST of an existing id updates only the given properties; createdAt is kept', async () => {
    const [note] = (await create(writer, { text: 'to update', colour: 'green', priority: 1 })).created;
    const { created, updated } = await create(writer, [{ noteId: note.noteId, priority: 5 }, { text: 'another' }]);
    assert.equal(created.length, 1);
    assert.deepEqual(updated, [{ ...note, priority: 5 }]);
  });

  test('PATCH changes the given properties; PUT replaces (defaults back) or creates with 201', async () => {
    const [note] = (await create(writer, { text: 'patch me', colour: 'red', priority: 2 })).created;
    const patched = await writer.call('PATCH', `/v4/notes/${note.noteId}`, { body: { text: 'patched' } });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.body, { ...note, text: 'patched' });
    const replaced = await writer.call('PUT', `/v4/notes/${note.noteId}`, { body: { text: 'replaced' } });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual(replaced.body, { ...note, text: 'replaced', colour: 'yellow', priority: 0 });
    const id = randomUUID();
    const put = await writer.call('PUT', `/v4/notes/${id}`, { body: { text: 'put new', priority: 9 } });
    assert.equal(put.status, 201, put.text);
    assert.equal(put.body.noteId, id);
    assert.equal(put.body.priority, 9);
    assertError(await writer.call('PATCH', `/v4/notes/${randomUUID()}`, { body: { text: 'x' } }), 404, 'notFound');
  });

  test('the declared write shape is enforced: unknown property, out-of-range integer, missing required property are 400', async () => {
    const before = await list(writer);
    assertError(
      await writer.call('POST', '/v4/notes', { body: { text: 'x', body: 'column name' } }),
      400,
      'badRequest',
      /body/,
    );
    assertError(
      await writer.call('POST', '/v4/notes', { body: { text: 'x', priority: 10 } }),
      400,
      'badRequest',
      /priority/,
    );
    assertError(await writer.call('POST', '/v4/notes', { body: { colour: 'blue' } }), 400, 'badRequest', /text/);
    assertError(await writer.call('POST', '/v4/notes', { body: [{ text: 'ok' }, { text: '' }] }), 400, 'badRequest');
    assert.deepEqual(await list(writer), before);
  });

  test('listing pages, sorts by the declared columns and filters with the declared modes', async () => {
    const lister = await signIn(server, 'common users:update');
    await create(lister, [
      { text: 'Buy MILK', colour: 'blue', priority: 2 },
      { text: 'call mum', colour: 'blue', priority: 7 },
      { text: 'milkshake', colour: 'pink', priority: 4 },
      { text: '50% off', colour: 'pink', priority: 1 },
      { text: 'nothing', colour: 'blue', priority: 9 },
    ]);
    const page = await list(lister, 'sortedColumn=priority&sortDirection=descending&pageSize=2&page=2');
    assert.deepEqual(
      { ...page, results: texts(page) },
      { totalResults: 5, pageSize: 2, pages: 3, page: 2, results: ['milkshake', 'Buy MILK'] },
    );
    assert.deepEqual(texts(await list(lister, 'sortedColumn=priority')), [
      '50% off',
      'Buy MILK',
      'milkshake',
      'call mum',
      'nothing',
    ]);
    assert.deepEqual(texts(await list(lister, 'text=milk&sortedColumn=priority')), ['Buy MILK', 'milkshake']);
    assert.deepEqual(texts(await list(lister, 'text=%25')), ['50% off']);
    assert.deepEqual(texts(await list(lister, 'colour=pink&sortedColumn=priority')), ['50% off', 'milkshake']);
    assert.deepEqual(texts(await list(lister, 'colour=pin')), []);
    assert.deepEqual(texts(await list(lister, 'colour=blue&text=M&sortedColumn=priority')), ['Buy MILK', 'call mum']);
    assertError(await lister.call('GET', '/v4/notes?sortedColumn=text'), 400, 'badRequest', /sortedColumn/);
    assertError(await lister.call('GET', '/v4/notes?ownerId=x'), 400, 'badRequest', /ownerId/);
    assertError(await lister.call('GET', '/v4/notes?pageSize=251'), 400, 'badRequest', /pageSize/);
  });

  test('DELETE one is 204; bulk DELETE is all or nothing', async () => {
    const { created } = await create(writer, [{ text: 'del 1' }, { text: 'del 2' }, { text: 'del 3' }]);
    const one = await writer.call('DELETE', `/v4/notes/${created[0].noteId}`);
    assert.equal(one.status, 204, one.text);
    assertError(await writer.call('GET', `/v4/notes/${created[0].noteId}`), 404, 'notFound');
    const rest = [{ noteId: created[1].noteId }, { noteId: created[2].noteId }];
    assertError(
      await writer.call('DELETE', '/v4/notes', { body: [...rest, { noteId: created[0].noteId }] }),
      404,
      'notFound',
    );
    assert.equal((await writer.call('GET', `/v4/notes/${created[1].noteId}`)).status, 200);
    const bulk = await writer.call('DELETE', '/v4/notes', { body: rest });
    assert.equal(bulk.status, 204, bulk.text);
    for (const { noteId } of rest) assertError(await writer.call('GET', `/v4/notes/${noteId}`), 404, 'notFound');
  });

  test("the declared visibility applies: another user's note is 404 for every method and is not listed", async () => {
    const [note] = (await create(writer, { text: 'private note' })).created;
    const path = `/v4/notes/${note.noteId}`;
    assertError(await stranger.call('GET', path), 404, 'notFound');
    assertError(await stranger.call('PATCH', path, { body: { text: 'x' } }), 404, 'notFound');
    assertError(await stranger.call('PUT', path, { body: { text: 'x' } }), 404, 'notFound');
    assertError(await stranger.call('DELETE', path), 404, 'notFound');
    assertError(
      await stranger.call('POST', '/v4/notes', { body: { noteId: note.noteId, text: 'x' } }),
      404,
      'notFound',
    );
    assert.ok(!(await list(stranger)).results.some((n: any) => n.noteId === note.noteId));
    assert.deepEqual((await writer.call('GET', path)).body, note);
  });

  test('the declared scopes apply: reading needs a token only, writing needs users:update', async () => {
    const [note] = (await create(writer, { text: 'scoped' })).created;
    assert.equal((await reader.call('GET', '/v4/notes')).status, 200);
    for (const [method, path, body] of [
      ['POST', '/v4/notes', { text: 'x' }],
      ['PATCH', `/v4/notes/${note.noteId}`, { text: 'x' }],
      ['PUT', `/v4/notes/${note.noteId}`, { text: 'x' }],
      ['DELETE', `/v4/notes/${note.noteId}`, undefined],
      ['DELETE', '/v4/notes', [{ noteId: note.noteId }]],
    ] as const) {
      const reply = await reader.call(method, path, { body });
      assertError(reply, 403, 'forbidden');
      assert.deepEqual(reply.body.details, { missingScopes: ['users:update'] }, `${method} ${path}`);
    }
    assertError(await server.request('GET', '/v4/notes'), 401, 'unauthorized');
    assert.deepEqual((await writer.call('GET', `/v4/notes/${note.noteId}`)).body, note);
  });

  test('a method the class path does not have is 405 with Allow', async () => {
    const reply = await writer.call('PUT', '/v4/notes', { body: { text: 'x' } });
    assertError(reply, 405, 'methodNotAllowed');
    assert.deepEqual(reply.headers.get('allow')?.split(', ').sort(), ['DELETE', 'GET', 'HEAD', 'POST']);
  });

  test('the built-in classes are still served beside it, and the OpenAPI document lists it', async () => {
    assert.equal((await writer.call('GET', '/v4/projects')).status, 200);
    const doc = (await server.request('GET', '/v4/openapi.json')).body;
    assert.deepEqual(Object.keys(doc.paths['/v4/notes']).sort(), ['delete', 'get', 'post']);
    assert.deepEqual(Object.keys(doc.paths['/v4/notes/{id}']).sort(), ['delete', 'get', 'patch', 'put']);
    const schema = doc.paths['/v4/notes/{id}'].get.responses['200'].content['application/json'].schema;
    assert.deepEqual(Object.keys(schema.properties).sort(), NOTE_KEYS);
  });
});
