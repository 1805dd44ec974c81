/**
 * A PostgreSQL outage under load: while the server's database refuses connections (closed with
 * ALLOW_CONNECTIONS false, its backends terminated), every face answers 503 with Retry-After in its
 * own shape, never 500; the warning is logged once per outage; the service recovers without a
 * restart, and every write it acknowledged is there afterwards. The server gets a database of its
 * own (not a schema), so that closing it touches no other test.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { isDatabaseUnreachable } from '../../src/db/errors.ts';
import type { TestUser } from '../helpers/keys.ts';
import { tokenRequest } from '../helpers/oauth.ts';
import { freshDatabase, type Reply, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';
import { registerUser, signed } from '../helpers/v1.ts';
import { assertError, type SignedIn, signIn } from '../rest/fixtures/clients.ts';

const target = process.env.DATABASE_URL;
const onPostgres = target?.startsWith('postgres') === true;

const UNREACHABLE_WARNING = 'the database cannot be reached: answering 503 until it is back';
const BACK_AGAIN = 'the database is reachable again: requests are served again';

/** Runs one statement as the cluster's administrator, on the database DATABASE_URL names. */
async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: target });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A new database of the cluster DATABASE_URL points at, for one server. */
async function ownDatabase(): Promise<TestDatabase & { name: string }> {
  const name = `outage_${randomBytes(6).toString('hex')}`;
  await admin(`create database ${name}`);
  const url = new URL(target!);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => admin(`drop database if exists ${name} with (force)`),
  };
}

/** The database stops taking connections and loses the ones it has: what a restart looks like to the pool. */
async function closeDatabase(name: string): Promise<void> {
  await admin(`alter database ${name} allow_connections false`);
  await admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`);
}

const openDatabase = (name: string) => admin(`alter database ${name} allow_connections true`);

/** Every answer of the load, by what was asked. */
interface Answer {
  kind: 'v4 write' | 'v4 read' | 'v1 read' | 'token' | 'page';
  reply: Reply;
}

function assertRetryAfter(reply: Reply): void {
  assert.equal(reply.status, 503, reply.text);
  assert.match(reply.headers.get('retry-after') ?? '', /^[1-9]\d*$/, 'Retry-After');
}

/** A 503 answer in the shape of the face that gave it (see docs/api.md). */
function assertUnavailable(answer: Answer): void {
  const { kind, reply } = answer;
  assertRetryAfter(reply);
  if (kind === 'token') {
    assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'error_description'], reply.text);
    assert.equal(reply.body.error, 'temporarily_unavailable');
  } else if (kind === 'page') {
    assert.match(reply.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(reply.text, /Try again in a moment/);
  } else {
    assertError(reply, 503, 'serviceUnavailable');
  }
}

describe('a PostgreSQL outage', {
  skip: onPostgres ? false : 'needs PostgreSQL (DATABASE_URL=postgres://…): SQLite is a file, never out of reach',
}, () => {
  let database: TestDatabase & { name: string };
  let server: TestServer;
  let writer: SignedIn;
  let v1User: TestUser;
  const written: string[] = [];
  const answers: Answer[] = [];
  const thrown: unknown[] = [];

  before(async () => {
    database = await ownDatabase();
    server = await startServer({ database });
    writer = await signIn(server, 'common');
    v1User = await registerUser(server);
  });
  after(async () => {
    await openDatabase(database.name).catch(() => {});
    await server?.close();
    await database?.drop();
  });

  const ask: Record<Answer['kind'], () => Promise<Reply>> = {
    'v4 write': async () => {
      const reply = await writer.call('POST', '/v4/projects', { body: { title: `p ${randomUUID()}` } });
      if (reply.status === 200) written.push(reply.body.created[0].projectId);
      return reply;
    },
    'v4 read': () => writer.call('GET', `/v4/projects/${written.at(-1) ?? randomUUID()}`),
    'v1 read': () => signed(server, v1User, 'GET', '/v1/mod.php'),
    // A code that does not exist: invalid_grant while the database answers.
    token: () =>
      tokenRequest(server, {
        grant_type: 'authorization_code',
        client_id: writer.clientId,
        code: 'nope',
        redirect_uri: 'http://127.0.0.1:9/callback',
        code_verifier: 'x'.repeat(43),
      }),
    page: () => server.request('GET', `/spawn?mod_id=${1_000_000 + Math.floor(Math.random() * 1_000_000)}`),
  };
  /** What each kind answers while the database is there. */
  const healthy: Record<Answer['kind'], number[]> = {
    'v4 write': [200],
    'v4 read': [200, 404],
    'v1 read': [200],
    token: [400],
    page: [200],
  };

  /** Concurrent loops of every kind of request until `stop` resolves. */
  async function load(stop: Promise<void>): Promise<void> {
    let running = true;
    void stop.then(() => (running = false));
    const loop = async (kind: Answer['kind']) => {
      while (running) {
        try {
          answers.push({ kind, reply: await ask[kind]() });
        } catch (error) {
          thrown.push(error);
        }
        await sleep(5);
      }
    };
    const kinds: Answer['kind'][] = [
      'v4 write',
      'v4 write',
      'v4 write',
      'v4 read',
      'v4 read',
      'v1 read',
      'token',
      'page',
    ];
    await Promise.all(kinds.map(loop));
  }

  /** Waits until every kind of request is served as usual again (the pool reconnects by itself). */
  async function recovered(): Promise<void> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const replies = await Promise.all(
        (Object.keys(ask) as Answer['kind'][]).map(async (kind) => ({ kind, status: (await ask[kind]()).status })),
      );
      if (replies.every(({ kind, status }) => healthy[kind].includes(status))) return;
      assert.ok(Date.now() < deadline, `not recovered: ${JSON.stringify(replies)}`);
      await sleep(200);
    }
  }

  async function outage(closedMs: number): Promise<void> {
    let stopLoad!: () => void;
    const loading = load(new Promise((resolve) => (stopLoad = resolve)));
    try {
      await sleep(400);
      await closeDatabase(database.name);
      // Each face, once the database is closed: its 503 in its shape.
      for (const kind of Object.keys(ask) as Answer['kind'][]) assertUnavailable({ kind, reply: await ask[kind]() });
      const health = await server.request('GET', '/healthz');
      assert.equal(health.status, 503, health.text);
      await sleep(closedMs);
    } finally {
      await openDatabase(database.name);
      await sleep(600);
      stopLoad();
      await loading;
    }
    await recovered();
  }

  test('answers 503 with Retry-After in every shape, never 500, logs it once, recovers, and loses no acknowledged write', async () => {
    await outage(2_500);

    assert.deepEqual(thrown, [], 'no request failed at the socket (the process stayed up)');
    const statuses = new Map<string, number>();
    for (const { kind, reply } of answers) {
      const key = `${kind} ${reply.status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
    const seen = JSON.stringify(Object.fromEntries(statuses));
    for (const answer of answers) {
      if (answer.reply.status === 503) assertUnavailable(answer);
      else
        assert.ok(
          healthy[answer.kind].includes(answer.reply.status),
          `${answer.kind}: ${answer.reply.status} ${answer.reply.text.slice(0, 300)} (all: ${seen})`,
        );
    }
    for (const kind of Object.keys(ask)) {
      assert.ok(statuses.get(`${kind} 503`), `${kind} met the outage: ${seen}`);
      assert.ok(
        [...statuses.keys()].some((key) => key.startsWith(kind) && !key.endsWith(' 503')),
        `${kind} was served too: ${seen}`,
      );
    }

    // Every acknowledged write is there.
    assert.ok(written.length > 0);
    for (let i = 0; i < written.length; i += 8) {
      const replies = await Promise.all(written.slice(i, i + 8).map((id) => writer.call('GET', `/v4/projects/${id}`)));
      for (const reply of replies) assert.equal(reply.status, 200, reply.text);
    }

    const logged = server.logs.map((line) => JSON.parse(line) as { level: number; msg: string });
    assert.equal(logged.filter((line) => line.msg === UNREACHABLE_WARNING).length, 1, 'the outage is logged once');
    assert.equal(logged.find((line) => line.msg === UNREACHABLE_WARNING)?.level, 40, 'as a warning');
    assert.equal(logged.filter((line) => line.msg === BACK_AGAIN).length, 1, 'and its end once');
    const errors = logged.filter((line) => line.level >= 50);
    assert.deepEqual(errors, [], 'nothing is logged as an error');
  });

  test('a second outage after recovery is logged again', async () => {
    await outage(1_000);
    const logged = server.logs.map((line) => JSON.parse(line) as { level: number; msg: string });
    assert.equal(logged.filter((line) => line.msg === UNREACHABLE_WARNING).length, 2);
    assert.equal(logged.filter((line) => line.msg === BACK_AGAIN).length, 2);
    assert.deepEqual(
      logged.filter((line) => line.level >= 50),
      [],
    );
    assert.ok(!answers.some(({ reply }) => reply.status >= 500 && reply.status !== 503));
  });

  test('a connection lost in the middle of a transaction fails that transaction as unreachable; the process stays up', async () => {
    const { db } = server.app.database;
    let failure: unknown;
    const uncaught: unknown[] = [];
    const noteUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', noteUncaught);
    try {
      await db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        // The connection is checked out and idle between two statements when its server goes: pg
        // emits 'error' on the client, which would end the process if no one listened.
        await closeDatabase(database.name);
        await sleep(300);
        await sql`select 1`.execute(trx);
      });
    } catch (error) {
      failure = error;
    } finally {
      process.off('uncaughtException', noteUncaught);
      await openDatabase(database.name);
    }
    assert.deepEqual(uncaught.map(String), [], 'no error event went unheard');
    assert.ok(isDatabaseUnreachable(failure), String(failure));
    await recovered();
  });
});

/**
 * A TCP proxy to PostgreSQL that can go away and come back on the same port: to the server behind
 * it, what a restart of PostgreSQL looks like (connections reset, then refused), without stopping
 * the machine's cluster.
 */
class RestartingProxy {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly upstream: { host: string; port: number }) {}

  async start(): Promise<void> {
    if (this.#server?.listening) return;
    const server = createServer((client) => {
      const upstream = tcpConnect(this.upstream.port, this.upstream.host);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('close', () => this.#sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.port = (server.address() as { port: number }).port;
  }

  /** Refuses new connections and resets the open ones. */
  async stop(): Promise<void> {
    const server = this.#server;
    if (!server?.listening) return;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of this.#sockets) socket.resetAndDestroy();
    await closed;
  }
}

describe('a PostgreSQL restart (connections reset, then refused)', {
  skip: onPostgres ? false : 'needs PostgreSQL (DATABASE_URL=postgres://…)',
}, () => {
  let database: TestDatabase;
  let proxy: RestartingProxy;
  let server: TestServer;
  let writer: SignedIn;
  let v1User: TestUser;

  before(async () => {
    database = await freshDatabase();
    const upstream = new URL(database.url);
    proxy = new RestartingProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) });
    await proxy.start();
    upstream.hostname = '127.0.0.1';
    upstream.port = String(proxy.port);
    server = await startServer({ database: { url: upstream.toString(), drop: async () => {} } });
    writer = await signIn(server, 'common');
    v1User = await registerUser(server);
  });
  after(async () => {
    await proxy?.start().catch(() => {});
    await server?.close();
    await proxy?.stop();
    await database?.drop();
  });

  test('answers 503 (v4, v1 shape, OAuth, page) while PostgreSQL is away, and serves again once it is back', async () => {
    const created = await writer.call('POST', '/v4/projects', { body: { title: 'before the restart' } });
    assert.equal(created.status, 200, created.text);
    const projectId = created.body.created[0].projectId;
    await proxy.stop();
    try {
      assertError(await writer.call('GET', `/v4/projects/${projectId}`), 503, 'serviceUnavailable');
      assertError(await writer.call('POST', '/v4/projects', { body: { title: 'during' } }), 503, 'serviceUnavailable');
      assertUnavailable({ kind: 'v1 read', reply: await signed(server, v1User, 'GET', '/v1/mod.php') });
      const token = await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: writer.clientId,
        refresh_token: writer.refreshToken,
      });
      assertUnavailable({ kind: 'token', reply: token });
      assertUnavailable({ kind: 'page', reply: await server.request('GET', '/spawn?mod_id=1234567') });
      assert.equal((await server.request('GET', '/healthz')).status, 503);
    } finally {
      await proxy.start();
    }
    const deadline = Date.now() + 10_000;
    let reply: Reply;
    do {
      reply = await writer.call('GET', `/v4/projects/${projectId}`);
      if (reply.status !== 200) await sleep(200);
    } while (reply.status !== 200 && Date.now() < deadline);
    assert.equal(reply.status, 200, reply.text);

    const logged = server.logs.map(
      (line) => JSON.parse(line) as { level: number; msg: string; err?: { code?: string } },
    );
    const warnings = logged.filter((line) => line.msg === UNREACHABLE_WARNING);
    assert.equal(warnings.length, 1, 'the outage is logged once');
    assert.equal(logged.filter((line) => line.msg === BACK_AGAIN).length, 1);
    assert.deepEqual(
      logged.filter((line) => line.level >= 50),
      [],
      'nothing is logged as an error',
    );
  });
});
