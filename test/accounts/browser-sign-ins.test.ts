/**
 * What is kept of a browser sign-in and how it is named: the User-Agent bounded and without
 * control characters, last activity written at most once a minute, the browser, device and
 * network read from what the browser sent.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createWebSession,
  findWebSession,
  LAST_SEEN_STEP_MS,
  listWebSessions,
  touchWebSession,
  USER_AGENT_LIMIT,
} from '../../src/accounts/web-sessions.ts';
import { describeBrowser, networkOf } from '../../src/web/browser-description.ts';
import { newAccount } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

describe('browser sign-ins', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server?.close();
  });

  test('the User-Agent is stored without CR, LF, NUL or other control characters, and cut to its bound', async () => {
    const db = server.app.database.db;
    const { userId } = await newAccount(server);
    const now = Date.now();
    await createWebSession(db, userId, false, now, ['pwd'], {
      userAgent: 'Evil\r\nSet-Cookie: x\u0000y\u0007',
      ip: '192.0.2.7',
    });
    await createWebSession(db, userId, false, now - 1, ['pwd'], { userAgent: `Long/1 ${'x'.repeat(5000)}` });
    const [first, second] = await listWebSessions(db, userId, now);
    assert.equal(first?.userAgent, 'Evil  Set-Cookie: x y');
    assert.equal(first?.ip, '192.0.2.7');
    assert.equal(second?.userAgent?.length, USER_AGENT_LIMIT);
    assert.equal(second?.ip, null);
    assert.match(first?.publicId ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(first?.publicId, second?.publicId);
  });

  test('last activity is written at most once a minute, and a sign-in still waiting for its code is not listed', async () => {
    const db = server.app.database.db;
    const { userId } = await newAccount(server);
    const start = Date.now();
    const { token } = await createWebSession(db, userId, false, start, ['pwd'], { ip: '192.0.2.1' });
    await createWebSession(db, userId, true, start);
    const at = async (now: number, ip: string) => {
      const session = await findWebSession(db, token, now);
      assert.ok(session);
      await touchWebSession(db, session, ip, now);
      return (await listWebSessions(db, userId, now))[0]!;
    };
    assert.equal((await at(start + 30_000, '192.0.2.2')).lastSeenAt, start, 'inside the minute: not written');
    const later = start + LAST_SEEN_STEP_MS + 5;
    const seen = await at(later, '192.0.2.3');
    assert.equal(seen.lastSeenAt, later);
    assert.equal(seen.ip, '192.0.2.3');
    // A stale read of the sign-in (a simultaneous load) writes nothing once another has.
    await touchWebSession(db, { token, lastSeenAt: start }, '192.0.2.9', later + 10);
    const [only, ...rest] = await listWebSessions(db, userId, later + 10);
    assert.equal(only?.lastSeenAt, later);
    assert.equal(only?.ip, '192.0.2.3');
    assert.deepEqual(rest, [], 'a sign-in waiting for its two-step code is not listed');
  });

  test('browser and device from the User-Agent; the network, never a place', () => {
    const cases: [string | null, string, string][] = [
      [
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.87',
        'Edge 126',
        'Windows computer',
      ],
      [
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
        'Safari 17',
        'Mac',
      ],
      [
        'Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1',
        'Chrome 126',
        'iPad',
      ],
      [
        'Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Safari/537.36',
        'Samsung Internet 25',
        'Android tablet',
      ],
      ['Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0', 'Firefox 128', 'Linux computer'],
      ['curl/8.5.0', 'curl', 'Unknown device'],
      [null, 'Unknown browser', 'Unknown device'],
    ];
    for (const [ua, browser, device] of cases) assert.deepEqual(describeBrowser(ua), { browser, device }, `${ua}`);
    assert.equal(networkOf('203.0.113.77'), '203.0.113.0/24');
    assert.equal(networkOf('::ffff:198.51.100.9'), '198.51.100.0/24');
    assert.equal(networkOf('2001:db8:abcd:12::1'), '2001:db8:abcd::/48');
    assert.equal(networkOf('2001:db8::1'), '2001:db8:0::/48');
    assert.equal(networkOf('::1'), '0:0:0::/48');
    assert.equal(networkOf(null), undefined);
    assert.equal(networkOf('not an address'), undefined);
  });
});
