/**
 * Expired rows are purged in the background in bounded batches: under an accelerated clock the
 * login tables stay bounded however many sign-ins and refreshes pass, live rows survive, two
 * purgers at once on one database are fine, and the background timer runs and stops cleanly.
 *
 * npm test: own process (the accelerated clock is the whole process's Date.now, and the UUIDv7
 * generator never goes back, so the ids later files make would be stamped 40 days ahead).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { EXPIRING_ROWS } from '../../src/app.ts';
import { purgeExpired } from '../../src/db/purge.ts';
import type { Schema } from '../../src/db/schema.ts';
import { issueAuthorizationCode } from '../../src/oauth/authorization-codes.ts';
import { createSession, REFRESH_TOKEN_TTL_MS } from '../../src/oauth/sessions.ts';
import {
  assertOAuthError,
  newAccount,
  newApp,
  pkcePair,
  REDIRECT_URI,
  startLogin,
  tokenRequest,
  tokensThroughPages,
} from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestServer } from '../helpers/server.ts';

const DAY = 24 * 60 * 60 * 1000;
const TABLES = [
  'authorization_codes',
  'interactions',
  'device_authorizations',
  'web_sessions',
  'sessions',
  'rotated_refresh_tokens',
] as const;

type Counts = Record<(typeof TABLES)[number], number>;

async function counts(db: Kysely<any>): Promise<Counts> {
  const result = {} as Counts;
  for (const table of TABLES) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    result[table] = Number(row.n);
  }
  return result;
}

/** Runs `work` with the whole process's clock (Date.now) moved forward by what `advance` adds. */
async function withAcceleratedClock<T>(work: (advance: (ms: number) => void) => Promise<T>): Promise<T> {
  const realNow = Date.now;
  let offset = 0;
  Date.now = () => realNow() + offset;
  try {
    return await work((ms) => {
      offset += ms;
    });
  } finally {
    Date.now = realNow;
  }
}

describe('an accelerated clock: 40 days of sign-ins, device requests and refreshes', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('with a purge pass a day, every login table stays bounded and live sessions keep working', async () => {
    const db = server.app.database.db;
    const app = await newApp(server, { scopes: ['common', 'users:read'] });
    const account = await newAccount(server);
    const refresh = async (refreshToken: string) => {
      const reply = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: refreshToken,
      });
      assert.equal(reply.status, 200, reply.text);
      return reply.body.refresh_token as string;
    };
    /** A sign-in's code (as the consent page issues it) exchanged at the token endpoint. */
    const signInWithCode = async () => {
      const { verifier, challenge } = pkcePair();
      const code = await issueAuthorizationCode(db, {
        clientId: app.clientId,
        userId: account.userId,
        redirectUri: REDIRECT_URI,
        scope: 'common',
        codeChallenge: challenge,
        deviceId: null,
      });
      const reply = await tokenRequest(server, {
        grant_type: 'authorization_code',
        client_id: app.clientId,
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
      });
      assert.equal(reply.status, 200, reply.text);
      return reply.body.refresh_token as string;
    };
    const DAYS = 40;
    const REFRESHES_PER_DAY = 4;
    const history: Counts[] = [];
    let refreshes = 0;
    let lastRotated = '';
    let kept = '';
    await withAcceleratedClock(async (advance) => {
      // One session refreshed every day for the whole run: it must survive every purge.
      kept = (await tokensThroughPages(server, app, account, 'common users:read')).refresh_token;
      for (let day = 0; day < DAYS; day++) {
        // Each day: a login started (an interaction) and, every tenth day, completed through the
        // pages (a browser sign-in too); a sign-in whose session is refreshed through the day and
        // then abandoned; a device request nobody completes.
        if (day % 10 === 0) await tokensThroughPages(server, app, account, 'common');
        else await startLogin(server, { client_id: app.clientId, code_challenge: pkcePair().challenge });
        let today = await signInWithCode();
        const device = await server.request('POST', '/v4/device', {
          body: new URLSearchParams({
            client_id: app.clientId,
            code_challenge: pkcePair().challenge,
            code_challenge_method: 'S256',
          }).toString(),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        });
        assert.equal(device.status, 201, device.text);
        for (let hour = 0; hour < REFRESHES_PER_DAY; hour++) {
          advance(DAY / (2 * REFRESHES_PER_DAY));
          today = await refresh(today);
          lastRotated = kept;
          kept = await refresh(kept);
          refreshes += 2;
        }
        advance(DAY / 2);
        await server.app.purger.runOnce();
        history.push(await counts(db));
      }

      assert.equal(refreshes, DAYS * REFRESHES_PER_DAY * 2);
      const end = history.at(-1)!;
      // What the lifetimes allow: 30 days of sessions and rotated tokens; less than a day of the rest.
      // (30 days of daily sessions, the kept one, and the three of the page sign-ins.)
      assert.ok(end.sessions <= 31 + 1 + 3, `sessions: ${end.sessions}`);
      assert.ok(end.rotated_refresh_tokens <= 31 * REFRESHES_PER_DAY * 2, `rotated: ${end.rotated_refresh_tokens}`);
      assert.ok(end.authorization_codes <= 1, `codes: ${end.authorization_codes}`);
      assert.ok(end.interactions <= 1, `interactions: ${end.interactions}`);
      assert.ok(end.web_sessions <= 1, `web sessions: ${end.web_sessions}`);
      assert.ok(end.device_authorizations <= 2, `device requests: ${end.device_authorizations}`);
      // Bounded, not merely smaller: the counts stopped growing once the 30-day lifetimes were reached.
      for (const table of TABLES) {
        const plateau = Math.max(...history.slice(29, 32).map((day) => day[table]));
        const later = Math.max(...history.slice(32).map((day) => day[table]));
        assert.ok(later <= plateau + 1, `${table} kept growing: ${history.map((day) => day[table]).join(',')}`);
      }
      assert.ok(history[5]!.sessions < history[25]!.sessions, 'sessions accumulate while they live');
      assert.ok(refreshes > end.rotated_refresh_tokens + 50, 'rotated tokens past their expiry were purged');

      // The session refreshed daily still works, and a token rotated away recently is still known:
      // presenting it again is reuse, which revokes the session.
      const still = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: kept,
      });
      assert.equal(still.status, 200, still.text);
      const reuse = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: lastRotated,
      });
      assertOAuthError(reuse, 'invalid_grant');
      assert.match(reuse.body.error_description, /already used/);
      const revoked = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: still.body.refresh_token,
      });
      assertOAuthError(revoked, 'invalid_grant');

      // Thirty-one days on, nothing of all that is left.
      advance(REFRESH_TOKEN_TTL_MS + DAY);
      await server.app.purger.runOnce();
      assert.deepEqual(
        Object.values(await counts(db)),
        TABLES.map(() => 0),
      );
    });
  });
});

describe('purging', () => {
  test('two purgers at once on one database delete every expired row once, in batches, and nothing live', async () => {
    const database = await freshDatabase();
    const first = await startServer({ database });
    const second = await startServer({ database });
    try {
      const db = first.app.database.db;
      const app = await newApp(first);
      const account = await newAccount(first);
      const grant = { userId: account.userId, clientId: app.clientId, scope: 'common' };
      const longAgo = Date.now() - REFRESH_TOKEN_TTL_MS - DAY;
      const code = { ...grant, redirectUri: REDIRECT_URI, codeChallenge: pkcePair().challenge, deviceId: null };
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < 1500; i++) await createSession(trx, grant, longAgo);
        for (let i = 0; i < 700; i++) await issueAuthorizationCode(trx, code, longAgo);
      });
      const live = await tokensThroughPages(first, app, account, 'common');
      const before = await counts(db);
      assert.equal(before.sessions, 1501);

      const passes = await Promise.all([
        purgeExpired(first.app.database.db, EXPIRING_ROWS, Date.now(), { batchSize: 50 }),
        purgeExpired(second.app.database.db, EXPIRING_ROWS, Date.now(), { batchSize: 50 }),
        first.app.purger.runOnce(),
        second.app.purger.runOnce(),
      ]);
      const deleted = (table: string) => passes.reduce((sum, pass) => sum + pass[table]!, 0);
      assert.equal(deleted('sessions'), 1500);
      assert.equal(deleted('authorization_codes'), 700);
      const afterwards = await counts(db);
      assert.equal(afterwards.sessions, 1);
      assert.equal(afterwards.authorization_codes, before.authorization_codes - 700);

      // The live sign-in is untouched: its token works and refreshes.
      const me = await first.request('GET', '/v4/projects', {
        headers: { authorization: `Bearer ${live.access_token}` },
      });
      assert.equal(me.status, 200, me.text);
      const refreshed = await tokenRequest(second, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: live.refresh_token,
      });
      assert.equal(refreshed.status, 200, refreshed.text);
    } finally {
      await first.close();
      await second.close();
      await database.drop();
    }
  });

  /** A server holding `live` unexpired sessions, then `expired` ones (session ids are time-ordered, so in that key order). */
  async function withSessions(
    live: number,
    expired: number,
    check: (db: Kysely<Schema>) => Promise<void>,
  ): Promise<void> {
    const server = await startServer();
    try {
      const db = server.app.database.db;
      const grant = {
        userId: (await newAccount(server)).userId,
        clientId: (await newApp(server)).clientId,
        scope: 'common',
      };
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < live; i++) await createSession(trx, grant);
        for (let i = 0; i < expired; i++) await createSession(trx, grant, Date.now() - REFRESH_TOKEN_TTL_MS - DAY);
      });
      await check(db);
    } finally {
      await server.close();
    }
  }

  test('a pass deletes at most maxBatches batches per table; the next pass goes on', () =>
    withSessions(0, 250, async (db) => {
      assert.equal((await purgeExpired(db, EXPIRING_ROWS, Date.now(), { batchSize: 40, maxBatches: 3 })).sessions, 120);
      assert.equal((await counts(db)).sessions, 130);
      assert.equal((await purgeExpired(db, EXPIRING_ROWS, Date.now(), { batchSize: 40, maxBatches: 3 })).sessions, 120);
      assert.equal((await purgeExpired(db, EXPIRING_ROWS, Date.now(), { batchSize: 40, maxBatches: 3 })).sessions, 10);
      assert.equal((await counts(db)).sessions, 0);
    }));

  test('sessions are found by walking the table: expired ones behind many live ones go, live ones stay', () =>
    // The 100 live sessions fill the walk's first four chunks; chunks that delete nothing are not batches.
    withSessions(100, 100, async (db) => {
      assert.equal((await purgeExpired(db, EXPIRING_ROWS, Date.now(), { batchSize: 25, maxBatches: 3 })).sessions, 75);
      assert.equal((await purgeExpired(db, EXPIRING_ROWS, Date.now(), { batchSize: 25, maxBatches: 3 })).sessions, 25);
      assert.equal((await purgeExpired(db, EXPIRING_ROWS, Date.now(), { batchSize: 25, maxBatches: 3 })).sessions, 0);
      assert.equal((await counts(db)).sessions, 100);
    }));

  test('the background purge runs by itself while the server listens and stops with it', async () => {
    const server = await startServer({ purgeIntervalMs: 40 });
    let closed = false;
    try {
      const db = server.app.database.db;
      const app = await newApp(server);
      const account = await newAccount(server);
      const longAgo = Date.now() - REFRESH_TOKEN_TTL_MS - DAY;
      for (let i = 0; i < 30; i++)
        await createSession(db, { userId: account.userId, clientId: app.clientId, scope: 'common' }, longAgo);
      const live = await createSession(db, { userId: account.userId, clientId: app.clientId, scope: 'common' });
      // A pass logs once it has been through every table, after the sessions are gone: wait for both.
      const logged = () => server.logs.some((line) => line.includes('expired rows purged'));
      for (let waited = 0; (await counts(db)).sessions > 1 || !logged(); waited += 20) {
        assert.ok(
          waited < 10_000,
          `the background purge did not run, or a pass that deleted rows did not say so in the log:\n${server.logs.join('\n')}`,
        );
        await sleep(20);
      }
      const me = await server.request('GET', '/v4/projects', {
        headers: { authorization: `Bearer ${live.accessToken}` },
      });
      assert.equal(me.status, 200, me.text);
      const started = Date.now();
      await server.close();
      closed = true;
      assert.ok(Date.now() - started < 5_000, 'closing waited on the purge timer');
    } finally {
      if (!closed) await server.close();
    }
  });
});

describe('security events and device trust', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('events go after 90 days and device trust after 30; younger ones stay', async () => {
    const db = server.app.database.db;
    const account = await newAccount(server);
    const now = Date.now();
    const event = (id: string, ageDays: number) => ({
      event_id: id,
      kind: 'sign_in_failed',
      user_id: account.userId,
      client_id: null,
      ip: '127.0.0.1',
      details: '{}',
      created_at: now - ageDays * DAY,
    });
    await db
      .insertInto('security_events')
      .values([event('old-event', 91), event('young-event', 89)])
      .execute();
    const trust = (hash: string, ageDays: number) => ({
      device_hash: hash,
      user_id: account.userId,
      created_at: now - ageDays * DAY,
    });
    await db
      .insertInto('trusted_devices')
      .values([trust('old-trust', 31), trust('young-trust', 29)])
      .execute();

    const purged = await purgeExpired(db, EXPIRING_ROWS, now);
    assert.equal(purged.security_events, 1);
    assert.equal(purged.trusted_devices, 1);
    assert.deepEqual(
      (
        await db
          .selectFrom('security_events')
          .select('event_id')
          .where('event_id', 'in', ['old-event', 'young-event'])
          .execute()
      ).map((row) => row.event_id),
      ['young-event'],
    );
    assert.deepEqual(
      (
        await db.selectFrom('trusted_devices').select('device_hash').where('user_id', '=', account.userId).execute()
      ).map((row) => row.device_hash),
      ['young-trust'],
    );
  });
});
