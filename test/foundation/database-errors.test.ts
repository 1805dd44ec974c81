/**
 * Which database failures are "unreachable" (answered 503 and counted as an outage) and which are
 * not, from the drivers' own error values, and the outage tracker that logs an outage once.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import pg from 'pg';
import { isDatabaseBusy, isDatabaseUnreachable } from '../../src/db/errors.ts';
import { DatabaseOutage } from '../../src/db/outage.ts';

/** An error as Node's sockets or pg raise it: a message and a code. */
function failure(message: string, code?: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code }, extra);
}

describe('isDatabaseUnreachable', () => {
  const unreachable: [string, unknown][] = [
    ['refused (server down)', failure('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['reset', failure('read ECONNRESET', 'ECONNRESET')],
    ['timed out', failure('connect ETIMEDOUT 10.0.0.9:5432', 'ETIMEDOUT')],
    ['broken pipe', failure('write EPIPE', 'EPIPE')],
    ['host unreachable', failure('connect EHOSTUNREACH', 'EHOSTUNREACH')],
    ['pg: socket closed under a query', failure('Connection terminated unexpectedly')],
    ['pg: client broken earlier', failure('Client has encountered a connection error and is not queryable')],
    ['08000 connection_exception', failure('connection exception', '08000')],
    ['08006 connection_failure', failure('connection failure', '08006')],
    ['08001 unable to connect', failure('could not connect', '08001')],
    ['57P01 admin_shutdown', failure('terminating connection due to administrator command', '57P01')],
    ['57P02 crash_shutdown', failure('terminating connection because of crash of another server process', '57P02')],
    ['57P03 cannot_connect_now', failure('the database system is starting up', '57P03')],
    ['57P03 not accepting connections', failure('the database system is not accepting connections', '57P03')],
    ['57P04 database_dropped', failure('database dropped', '57P04')],
    ['55000 database closed to connections', failure('database "app" is not currently accepting connections', '55000')],
    [
      'AggregateError of refused addresses (localhost on ::1 and 127.0.0.1)',
      Object.assign(new AggregateError([failure('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED')], ''), {
        code: 'ECONNREFUSED',
      }),
    ],
    [
      'AggregateError without its own code',
      new AggregateError([failure('a', 'ECONNREFUSED'), failure('b', 'ECONNREFUSED')], ''),
    ],
    ['the socket error as a cause', new Error('wrapped', { cause: failure('read ECONNRESET', 'ECONNRESET') })],
  ];
  for (const [name, error] of unreachable) {
    test(`unreachable: ${name}`, () => assert.equal(isDatabaseUnreachable(error), true));
  }

  const other: [string, unknown][] = [
    ['a unique violation', failure('duplicate key value violates unique constraint', '23505')],
    ['a syntax error', failure('syntax error at or near "x"', '42601')],
    ['another 55000 (object not in prerequisite state)', failure('cannot do that now', '55000')],
    ['a query cancelled by statement timeout (57014, not 57P)', failure('canceling statement', '57014')],
    ['SQLite busy (busy, not unreachable)', failure('database is locked', 'SQLITE_BUSY')],
    ["the pool's wait running out (busy)", failure('timeout exceeded when trying to connect')],
    ['a client ended on purpose', failure('Connection terminated')],
    ['a plain error', new Error('boom')],
    [
      'a cycle of causes',
      (() => {
        const a = new Error('a');
        const b = new Error('b', { cause: a });
        Object.assign(a, { cause: b });
        return a;
      })(),
    ],
    ['null', null],
    ['a string', 'ECONNREFUSED'],
    ['a number code', { code: 8 }],
  ];
  for (const [name, error] of other) {
    test(`not unreachable: ${name}`, () => assert.equal(isDatabaseUnreachable(error), false));
  }

  test('busy and unreachable stay apart where they should', () => {
    assert.equal(isDatabaseBusy(failure('timeout exceeded when trying to connect')), true);
    assert.equal(isDatabaseUnreachable(failure('timeout exceeded when trying to connect')), false);
    assert.equal(isDatabaseBusy(failure('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')), false);
  });
});

/** A port on this machine that nothing listens on (the system's choice, then closed). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe("the drivers' own errors for a server that is not there", () => {
  for (const host of ['127.0.0.1', 'localhost']) {
    test(`pg connecting to ${host} where nothing listens is unreachable`, async () => {
      const pool = new pg.Pool({ connectionString: `postgres://nobody@${host}:${await closedPort()}/none` });
      pool.on('error', () => {});
      const failure = await pool.query('select 1').then(
        () => undefined,
        (error: unknown) => error,
      );
      await pool.end();
      assert.ok(failure, 'the query failed');
      assert.equal(isDatabaseUnreachable(failure), true, String(failure));
    });
  }
});

describe('DatabaseOutage', () => {
  test('reports the first failure of an outage only, and a new outage after the database is back', () => {
    const outage = new DatabaseOutage();
    const ended: number[] = [];
    outage.onEnd((lasted) => ended.push(lasted));
    assert.equal(outage.since, undefined);
    outage.reachable(500); // no outage: nothing ends
    assert.deepEqual(ended, []);
    assert.equal(outage.unreachable(1_000), true);
    assert.equal(outage.unreachable(1_100), false);
    assert.equal(outage.unreachable(2_000), false);
    assert.equal(outage.since, 1_000);
    outage.reachable(3_500);
    assert.deepEqual(ended, [2_500]);
    assert.equal(outage.since, undefined);
    outage.reachable(3_600);
    assert.deepEqual(ended, [2_500], 'a second sign of life ends nothing');
    assert.equal(outage.unreachable(4_000), true, 'a new outage is reported again');
    assert.equal(outage.unreachable(4_001), false);
  });
});
