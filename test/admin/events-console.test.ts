/**
 * The console's event log, /admin/events (DESIGN "Operating a public service"): newest first, 100
 * a page by keyset, filtered by kind, user (id, username or address), IP and time; the JSON-lines
 * download of the whole filtered set; a clear 400 page for a bad filter.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { makeOperator } from '../../src/accounts/lifecycle.ts';
import { totpCode } from '../../src/accounts/totp.ts';
import { uuidv7 } from '../../src/http/uuid.ts';
import { FormClient, newAccount } from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

const SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
const BASE_TIME = Date.UTC(2024, 0, 15, 12, 0, 0);
const MINUTE = 60_000;

describe('operator console: events', () => {
  let database: TestDatabase;
  let server: TestServer;
  let operator: FormClient;
  let subject: Awaited<ReturnType<typeof newAccount>>;
  before(async () => {
    database = await freshDatabase();
    server = await startServer({ database });
    const account = await newAccount(server, { totpSecret: SECRET });
    await makeOperator(
      {
        db: server.app.database.db,
        applicationSessions: server.app.applicationSessions,
        erasers: server.app.accountErasers,
        via: 'cli',
        actorId: null,
      },
      account.userId,
    );
    operator = new FormClient(server);
    const first = await operator.submit('/account/sign-in', { username: account.username, password: account.password });
    assert.equal(first.status, 303, first.text);
    const code = await operator.submit(first.location!, { code: totpCode(SECRET, Date.now()) });
    assert.equal(code.status, 303, code.text);
    subject = await newAccount(server);
    // 250 events of the subject from one IP, a minute apart (two at the same time, ordered by id),
    // and 30 of nobody from another IP.
    const rows = [];
    for (let i = 0; i < 250; i++)
      rows.push({
        event_id: uuidv7(),
        kind: i % 2 === 0 ? 'sign_in_failed' : 'two_step_failed',
        user_id: subject.userId,
        client_id: null,
        ip: '203.0.113.7',
        details: JSON.stringify({ page: 'sign_in', n: i }),
        created_at: BASE_TIME + Math.floor(i / 2) * MINUTE,
      });
    for (let i = 0; i < 30; i++)
      rows.push({
        event_id: randomUUID(),
        kind: 'client_authentication_failed',
        user_id: null,
        client_id: 'some-client',
        ip: '198.51.100.9',
        details: JSON.stringify({ n: i }),
        created_at: BASE_TIME + i * MINUTE,
      });
    for (let i = 0; i < rows.length; i += 50)
      await server.app.database.db
        .insertInto('security_events')
        .values(rows.slice(i, i + 50))
        .execute();
  });
  after(async () => {
    await server?.close();
    await database?.drop();
  });

  /** The `n` details of a page's events, in order. */
  const numbers = (html: string) => [...html.matchAll(/<code>n=([0-9]+)<\/code>/g)].map((m) => Number(m[1]));
  const olderLink = (html: string) =>
    /<a href="([^"]+)" rel="next">Older events/.exec(html)?.[1]?.replace(/&amp;/g, '&');

  test('newest first, 100 a page, the next page after the last one shown (no event twice or left out)', async () => {
    const seen: number[] = [];
    let path: string | undefined = '/admin/events?ip=203.0.113.7';
    let pages = 0;
    while (path) {
      const page = await operator.fetch(path);
      assert.equal(page.status, 200, page.text);
      assert.match(page.text, /aria-current="page">Events/);
      const found = numbers(page.text);
      assert.ok(found.length <= 100);
      seen.push(...found);
      path = olderLink(page.text);
      if (path) assert.match(path, /^\/admin\/events\?ip=203\.0\.113\.7&before=[0-9]+\.[0-9a-f-]+$/);
      pages++;
    }
    assert.equal(pages, 3);
    assert.equal(seen.length, 250);
    assert.equal(new Set(seen).size, 250);
    // Newest first: the later minutes before the earlier ones.
    for (let i = 1; i < seen.length; i++) assert.ok(Math.floor(seen[i]! / 2) <= Math.floor(seen[i - 1]! / 2));
  });

  test('filters: kind, user by id, username or address, IP, from and to', async () => {
    const count = async (query: string) => {
      const page = await operator.fetch(`/admin/events?${query}&format=jsonl`);
      assert.equal(page.status, 200, page.text);
      return page.text.split('\n').filter(Boolean).length;
    };
    assert.equal(await count('kind=two_step_failed&ip=203.0.113.7'), 125);
    assert.equal(await count(`user=${subject.userId}&kind=sign_in_failed`), 125);
    assert.equal(await count(`user=${subject.username.toUpperCase()}&ip=203.0.113.7`), 250);
    assert.equal(await count(`user=${encodeURIComponent(subject.email)}&ip=203.0.113.7`), 250);
    assert.equal(await count('ip=198.51.100.9'), 30);
    // A day, a time with a zone, and both ends included.
    assert.equal(await count('ip=198.51.100.9&from=2024-01-15&to=2024-01-15'), 30);
    assert.equal(await count('ip=198.51.100.9&from=2024-01-15T12:10Z&to=2024-01-15T12:19:00Z'), 10);
    assert.equal(await count('ip=198.51.100.9&from=2024-01-15T13:10%2B01:00&to=2024-01-15 12:19'), 10);
    assert.equal(await count('ip=198.51.100.9&from=2024-01-16'), 0);
    // An unknown kind or user matches nothing.
    assert.equal(await count('kind=no_such_kind'), 0);
    assert.equal(await count('user=nobody-at-all'), 0);
    const page = await operator.fetch('/admin/events?kind=two_step_failed&ip=203.0.113.7');
    assert.match(page.text, /<option value="two_step_failed" selected>/);
    assert.match(page.text, /value="203\.0\.113\.7"/);
    assert.match(page.text, /href="\/admin\/events\?kind=two_step_failed&amp;ip=203\.0\.113\.7&amp;format=jsonl"/);
  });

  test('the download: an attachment of JSON lines holding kind, at, user_id, ip and details', async () => {
    const download = await operator.fetch(`/admin/events?user=${subject.username}`);
    assert.equal(download.status, 200);
    const reply = await operator.fetch(`/admin/events?user=${subject.username}&format=jsonl`);
    assert.equal(reply.status, 200);
    assert.match(reply.headers.get('content-type') ?? '', /^application\/x-ndjson/);
    assert.equal(reply.headers.get('content-disposition'), 'attachment; filename="security-events.jsonl"');
    assert.equal(reply.headers.get('cache-control'), 'no-store');
    const lines = reply.text.split('\n');
    assert.equal(lines.pop(), '');
    assert.equal(lines.length, 250);
    const first = JSON.parse(lines[0]!);
    assert.equal(first.kind, 'two_step_failed');
    assert.equal(first.at, new Date(BASE_TIME + 124 * MINUTE).toISOString());
    assert.equal(first.user_id, subject.userId);
    assert.equal(first.username, subject.username);
    assert.equal(first.ip, '203.0.113.7');
    assert.deepEqual(first.details, { page: 'sign_in', n: 249 });
    const last = JSON.parse(lines.at(-1)!);
    assert.equal(last.at, new Date(BASE_TIME).toISOString());
  });

  test('a bad filter is a clear 400 page; nothing typed reaches a header', async () => {
    const cases: [string, RegExp][] = [
      ['from=yesterday', /The start time is not an ISO 8601 date or time/],
      ['to=2024-02-30', /The end time is not an ISO 8601 date or time/],
      ['from=2024-01-15T25:00Z', /The start time is not an ISO 8601/],
      [`user=${'x'.repeat(10_000)}`, /The user is too long: at most 254 characters/],
      [`kind=${'k'.repeat(10_000)}`, /The kind is too long/],
      ['ip=1.2.3.4%0d%0aSet-Cookie:%20x=1', /The IP address holds a control character/],
      ['user=a%01b', /The user holds a control character/],
      ['before=garbage', /The page link is damaged/],
      ['format=xml', /The format is jsonl/],
      ['format=jsonl&from=nope', /The start time is not/],
    ];
    for (const [query, message] of cases) {
      const page = await operator.fetch(`/admin/events?${query}`);
      assert.equal(page.status, 400, query);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/, query);
      assert.match(page.text, message, query);
      assert.match(page.text, /role="alert" id="filter-error"/, query);
      assert.equal(page.headers.get('set-cookie')?.includes('x=1') ?? false, false);
      assert.equal(page.headers.get('content-disposition'), null);
    }
    // A repeated parameter is refused before the page (the input guard), as clearly.
    const repeated = await operator.fetch('/admin/events?kind=a&kind=b');
    assert.equal(repeated.status, 400);
    assert.match(repeated.text, /kind is given more than once/);
    const nul = await operator.fetch('/admin/events?user=a%00b');
    assert.equal(nul.status, 400);
    assert.match(nul.text, /NUL character/);
  });

  test('anyone but an operator gets the 404 page, download included', async () => {
    const person = new FormClient(server);
    const account = await newAccount(server);
    await person.submit('/account/sign-in', { username: account.username, password: account.password });
    for (const client of [person, new FormClient(server)]) {
      const page = await client.fetch('/admin/events?format=jsonl');
      assert.equal(page.status, 404);
      assert.match(page.text, /Page not found/);
    }
  });
});
