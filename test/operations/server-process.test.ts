/**
 * The production server as operators run it: the compiled output (`npm run build`, what `npm start`
 * runs with plain node, under the start script's node flags and environment, so that each Node line
 * CI runs is seen to accept them) and WORKERS (DESIGN "Operational contract"): several workers serve one port,
 * a worker that dies is replaced without losing service, /metrics adds up every worker, and SIGTERM
 * stops them all with exit code 0.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { productionStart } from '../../bench/processes.ts';
import { startMailbox } from '../helpers/mail.ts';
import { FormClient } from '../helpers/oauth.ts';
import { newAddress, submitForm } from '../helpers/self-service.ts';
import { freshDatabase, send, type TestDatabase, type TestServer } from '../helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const CONFIG_KEYS = [
  'PORT',
  'HOST',
  'BASE_URL',
  'DATABASE_URL',
  'REDIS_URL',
  'RATE_LIMIT_V1',
  'RATE_LIMIT_V4',
  'TRUST_PROXY',
  'LOG_LEVEL',
  'WORKERS',
  'METRICS_TOKEN',
];
const METRICS_TOKEN = 'a-long-random-metrics-token';
const TIMEOUT_MS = 60_000;

interface Cluster {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Process ids of the workers that logged "Server listening". */
  workerPids: () => number[];
}

const production = productionStart();
let build: string;
let database: TestDatabase;
const started = new Set<ChildProcess>();

before(() => {
  // Inside the repository (.scratch/ is ignored by git), so the build finds node_modules and
  // package.json's "type": "module" as dist/ does.
  mkdirSync(join(ROOT, '.scratch'), { recursive: true });
  build = mkdtempSync(join(ROOT, '.scratch', 'build-'));
  execFileSync(process.execPath, ['scripts/build.mjs', build], { cwd: ROOT, stdio: 'pipe' });
});

after(async () => {
  for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(build, { recursive: true, force: true });
  await database?.drop();
});

async function startCluster(env: Record<string, string>): Promise<Cluster> {
  database ??= await freshDatabase();
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !CONFIG_KEYS.includes(key)));
  const child = spawn(process.execPath, [...production.flags, join(build, 'server.js')], {
    cwd: ROOT,
    env: { ...base, ...production.env, PORT: '0', DATABASE_URL: database.url, METRICS_TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on('exit', (code, signal) => done({ code, signal })),
  );
  const workerPids = () =>
    output
      .split('\n')
      .filter((line) => line.includes('Server listening at'))
      .map((line) => JSON.parse(line).pid as number);
  const expected = Number(env.WORKERS ?? 1);
  const deadline = Date.now() + TIMEOUT_MS;
  while (workerPids().length < expected) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`cluster did not start:\n${output}`);
    await new Promise((done) => setTimeout(done, 50));
  }
  const url = /Server listening at (http:\/\/[^"\s]+)/.exec(output)![1]!;
  return { child, url, output: () => output, exited, workerPids };
}

/** The pids that answered `count` requests for GET /, from the request log lines (one per request). */
async function answeringPids(cluster: Cluster, count: number): Promise<Set<number>> {
  const before = cluster.output().length;
  for (let i = 0; i < count; i++) {
    // A new connection per request: the primary hands connections to the workers in turn.
    const reply = await send(cluster.url, 'GET', '/', { headers: { connection: 'close' } });
    assert.equal(reply.status, 200);
  }
  // Each worker writes its log lines when it gets to it: wait for all of them (a fixed 300 ms
  // missed a busy worker's lines once, on a machine running three test workers).
  const deadline = Date.now() + 10_000;
  let lines: string[] = [];
  for (;;) {
    lines = cluster
      .output()
      .slice(before)
      .split('\n')
      .filter((line) => line.includes('"path":"/"'));
    if (lines.length >= count || Date.now() > deadline) break;
    await new Promise((done) => setTimeout(done, 20));
  }
  return new Set(lines.map((line) => JSON.parse(line).pid as number));
}

function metricValue(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('the compiled server with WORKERS=2', { timeout: 180_000 }, () => {
  let cluster: Cluster;

  before(async () => {
    // LOG_LEVEL info: the request lines name the worker (pid) that answered.
    cluster = await startCluster({ WORKERS: '2', LOG_LEVEL: 'info' });
  });

  test('serves pages from the compiled output (templates and stylesheet found beside it)', async () => {
    const home = await send(cluster.url, 'GET', '/');
    assert.equal(home.status, 200);
    assert.match(home.text, /href="\/v4\/docs"/);
    assert.equal((await send(cluster.url, 'GET', '/assets/site.css')).status, 200);
  });

  test('both workers answer requests on the one port', async () => {
    const workers = cluster.workerPids();
    assert.equal(new Set(workers).size, 2);
    const pids = await answeringPids(cluster, 12);
    assert.deepEqual([...pids].sort(), [...workers].sort());
  });

  test("every worker runs under the start script's node flags (the heap limits and the GC mode apply to each)", () => {
    assert.ok(production.flags.length > 0, 'the start script passes node flags');
    for (const pid of cluster.workerPids()) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      for (const flag of production.flags)
        assert.ok(argv.includes(flag), `worker ${pid} runs without ${flag}: ${argv.join(' ')}`);
    }
  });

  test('/metrics adds up the requests of every worker', async () => {
    const metrics = () =>
      send(cluster.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const first = await metrics();
    assert.equal(first.status, 200, first.text);
    const before = metricValue(first.text, 'http_requests_total', 'route="/",status="200"');
    await answeringPids(cluster, 10);
    const second = await metrics();
    assert.equal(metricValue(second.text, 'http_requests_total', 'route="/",status="200"'), before + 10);
    assert.ok(metricValue(second.text, 'process_cpu_user_seconds_total', '') >= 0);
    assert.match(second.text, /^process_resident_memory_bytes \d+/m);
  });

  test('a worker killed mid-service is replaced and no request fails meanwhile', async () => {
    const [victim, survivor] = cluster.workerPids().slice(-2);
    process.kill(victim!, 'SIGKILL');
    // A connection handed to the victim in the instant it died is lost with it; from the moment
    // the primary knows, every request is answered (by the survivor until the replacement listens).
    const deadline = Date.now() + 30_000;
    while (!cluster.output().includes('a worker stopped; starting another')) {
      assert.ok(Date.now() < deadline, `the primary did not notice:\n${cluster.output()}`);
      await new Promise((done) => setTimeout(done, 10));
    }
    const failures: string[] = [];
    let answered = 0;
    while (cluster.workerPids().length < 3 || answered < 5) {
      assert.ok(Date.now() < deadline, `no replacement worker:\n${cluster.output()}`);
      const reply = await send(cluster.url, 'GET', '/healthz', { headers: { connection: 'close' } }).catch(
        (error: Error) => ({ status: 0, text: error.message }),
      );
      if (reply.status === 200) answered++;
      else failures.push(`${reply.status} ${reply.text}`);
    }
    assert.deepEqual(failures, []);
    const replacement = cluster.workerPids().at(-1)!;
    assert.notEqual(replacement, victim);
    const pids = await answeringPids(cluster, 12);
    assert.deepEqual([...pids].sort(), [survivor!, replacement].sort());
  });

  test('SIGTERM stops every worker and exits 0', async () => {
    const workers = cluster.workerPids().slice(-2);
    cluster.child.kill('SIGTERM');
    const { code, signal } = await cluster.exited;
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, cluster.output());
    for (const pid of workers) assert.throws(() => process.kill(pid, 0), /ESRCH/, `worker ${pid} still runs`);
    await assert.rejects(send(cluster.url, 'GET', '/healthz'));
  });
});

describe('the compiled server with WORKERS=1', { timeout: 120_000 }, () => {
  test('serves in one process and stops on SIGTERM with exit 0', async () => {
    const single = await startCluster({ WORKERS: '1', LOG_LEVEL: 'info' });
    assert.deepEqual(single.workerPids(), [single.child.pid]);
    assert.equal((await send(single.url, 'GET', '/healthz')).status, 200);
    single.child.kill('SIGTERM');
    assert.deepEqual(await single.exited, { code: 0, signal: null });
  });

  test('writes every log line once and in order: batches under load, a lone line within the flush interval, the rest at exit', async () => {
    const single = await startCluster({ WORKERS: '1', LOG_LEVEL: 'info' });
    const requestLines = () =>
      single
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"request"'))
        .map((line) => JSON.parse(line).path as string);
    // Far more than one batch (4 KiB) of lines, sent ten at a time.
    const paths = Array.from({ length: 400 }, (_, index) => `/nothing-${index}`);
    for (let start = 0; start < paths.length; start += 10) {
      await Promise.all(paths.slice(start, start + 10).map((path) => send(single.url, 'GET', path)));
    }
    // A lone line is written by the periodic flush (a quarter second), not held until the next batch.
    await send(single.url, 'GET', '/lone');
    const deadline = Date.now() + 2_000;
    while (!requestLines().includes('/lone') && Date.now() < deadline)
      await new Promise((done) => setTimeout(done, 20));
    assert.ok(requestLines().includes('/lone'), 'the lone request line was not written within 2 s');
    // Lines still waiting when the process stops are written before it exits.
    await Promise.all(['/last-1', '/last-2', '/last-3'].map((path) => send(single.url, 'GET', path)));
    single.child.kill('SIGTERM');
    assert.deepEqual(await single.exited, { code: 0, signal: null });
    const logged = requestLines();
    const batchOf = (path: string) => Math.floor(Number(path.slice('/nothing-'.length)) / 10);
    const loaded = logged.slice(0, paths.length);
    assert.deepEqual([...loaded].sort(), [...paths].sort(), 'every request line once');
    assert.ok(
      loaded.every((path, index) => index === 0 || batchOf(loaded[index - 1]!) <= batchOf(path)),
      'the lines of each batch of requests come after the batch before',
    );
    assert.equal(logged[paths.length], '/lone');
    assert.deepEqual(logged.slice(paths.length + 1).sort(), ['/last-1', '/last-2', '/last-3']);
    const lines = single.output().trimEnd().split('\n');
    assert.ok(
      lines.findIndex((line) => line.includes('"msg":"shutting down"')) >
        lines.map((line) => line.includes('"path":"/last-')).lastIndexOf(true),
      'the shutdown line comes after the last request lines',
    );
  });

  test('sends mail: nodemailer, left out of the bundle, loads from node_modules on first use', async () => {
    const mailbox = await startMailbox();
    const single = await startCluster({ WORKERS: '1', SMTP_URL: mailbox.url });
    try {
      const browser = new FormClient({ url: single.url } as TestServer);
      const page = await browser.fetch('/account/sign-up');
      assert.equal(page.status, 200, page.text);
      const email = newAddress();
      const sent = await submitForm(browser, page.text, { email }, /^\/account\/sign-up$/);
      assert.equal(sent.status, 303, sent.text);
      const message = await mailbox.next(email);
      assert.match(message.text, /(?<![0-9])[0-9]{6}(?![0-9])/, 'the sign-up code');
    } finally {
      single.child.kill('SIGTERM');
      await single.exited;
      await mailbox.close();
    }
  });

  // Node 20 only: there pg's Cloudflare check loads undici (later Nodes have a navigator, which the
  // check reads first), and on Node 26.12.1 undici was loaded at start by another path (not traced).
  const notNode20 = !process.versions.node.startsWith('20.') && 'Node 20 only';
  test("on SQLite, loads neither pg nor, through it, Node's fetch (undici) at start", {
    skip: (process.env.DATABASE_URL?.startsWith('postgres') && 'SQLite only') || notNode20,
  }, async () => {
    // On Node 20 pg's Cloudflare check constructs a Response at load, and with it undici: ~2 MiB of
    // idle memory (docs/decisions/0031). pg is imported only for PostgreSQL.
    const record = join(build, 'node-modules.txt');
    const preload = join(ROOT, 'test/fixtures/record-node-modules.mjs');
    const single = await startCluster({
      WORKERS: '1',
      NODE_OPTIONS: `--import ${preload}`,
      RECORD_NODE_MODULES: record,
    });
    assert.equal((await send(single.url, 'GET', '/v4/user')).status, 401);
    single.child.kill('SIGTERM');
    assert.deepEqual(await single.exited, { code: 0, signal: null });
    const loaded = readFileSync(record, 'utf8').split('\n');
    assert.ok(loaded.includes('NativeModule http'), 'the record lists the modules loaded');
    assert.ok(!loaded.some((name) => name.includes('undici')), 'undici was loaded');
  });

  test('starts with REDIS_URL: ioredis, left out of the bundle, loads from node_modules', async () => {
    // buildApp imports ioredis when REDIS_URL is set, before listening: a failed import stops the start.
    const single = await startCluster({ WORKERS: '1', REDIS_URL: 'redis://127.0.0.1:6379' });
    assert.equal((await send(single.url, 'GET', '/healthz')).status, 200);
    single.child.kill('SIGTERM');
    assert.deepEqual(await single.exited, { code: 0, signal: null });
  });
});

describe('the compiled SQLite thread (its own bundle, dist/db/sqlite-thread-worker.js): checkpoints', {
  skip: process.env.DATABASE_URL?.startsWith('postgres') && 'SQLite only',
}, () => {
  test('copies the log back into the database file', async () => {
    // The compiled connection module starts the worker from the file beside it, as the server bundle does.
    const { openDatabase } = (await import(
      join(build, 'db/connection.js')
    )) as typeof import('../../src/db/connection.ts');
    const { migrateToLatest } = (await import(
      join(build, 'db/migrate.js')
    )) as typeof import('../../src/db/migrate.ts');
    const dir = mkdtempSync(join(ROOT, '.scratch', 'wal-'));
    const path = join(dir, 'test.db');
    const sqlite = openDatabase({ kind: 'sqlite', path }, { checkpointWorkerAfterWrites: 1 });
    try {
      await migrateToLatest(sqlite.db);
      const sizeBefore = statSync(path).size;
      // ~300 pages, fewer than SQLite's own automatic checkpoint waits for: only the worker copies them.
      for (let batch = 0; batch < 6; batch++) {
        await sqlite.db.transaction().execute(async (trx) => {
          for (let i = 0; i < 50; i++)
            await trx
              .insertInto('content_versions')
              .values({ name: `${batch}-${i}-${'x'.repeat(3000)}`, version: i })
              .execute();
        });
      }
      const deadline = Date.now() + 5000;
      while (statSync(path).size <= sizeBefore + 800_000) {
        if (Date.now() > deadline) assert.fail('the worker did not copy the log into the database file within 5 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the compiled SQLite thread (its own bundle, dist/db/sqlite-thread-worker.js): batches', {
  skip: process.env.DATABASE_URL?.startsWith('postgres') && 'SQLite only',
}, () => {
  test('writes a batch on its thread', async () => {
    const { openDatabase } = (await import(
      join(build, 'db/connection.js')
    )) as typeof import('../../src/db/connection.ts');
    const dir = mkdtempSync(join(ROOT, '.scratch', 'batch-'));
    const sqlite = openDatabase({ kind: 'sqlite', path: join(dir, 'test.db') });
    try {
      await sqlite.db.schema
        .createTable('items')
        .addColumn('name', 'text', (col) => col.primaryKey())
        .execute();
      const written = await sqlite.writeBatch!([
        { sql: 'insert into items (name) values (?), (?)', parameters: ['one', 'two'] },
      ]);
      assert.equal(written, true);
      const rows = await sqlite.db
        .selectFrom('items' as never)
        .select('name' as never)
        .execute();
      assert.equal(rows.length, 2);
    } finally {
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
