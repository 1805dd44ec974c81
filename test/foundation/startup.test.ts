/**
 * The real process (`tsx src/server.ts`): configuration errors, the default SQLite file,
 * /healthz once listening, and graceful shutdown on SIGTERM and SIGINT.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { newUser, signedHeaders } from '../helpers/keys.ts';
import { freshDatabase, send, TEST_HOST, type TestDatabase } from '../helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const SERVER = join(ROOT, 'src/server.ts');
/** tsx's loader, resolved from the repository (the server may run in another working directory). */
const TSX_LOADER = import.meta.resolve('tsx');
const CONFIG_KEYS = [
  'PORT',
  'HOST',
  'BASE_URL',
  'DATABASE_URL',
  'REDIS_URL',
  'WORKSHOP_URL',
  'RATE_LIMIT_V1',
  'RATE_LIMIT_V4',
  'TRUST_PROXY',
  'LOG_LEVEL',
];

interface Running {
  child: ChildProcess;
  /** stdout and stderr, in arrival order. */
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

// Generous: on a loaded two-core machine a cold tsx start alone has taken several seconds.
const PROCESS_TIMEOUT_MS = 60_000;
/** Every process started, so none outlives the file when a test fails half-way. */
const started = new Set<ChildProcess>();

/** Starts the server process with only `env` as its configuration (nothing inherited). */
function run(env: Record<string, string>, cwd = ROOT): Running {
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !CONFIG_KEYS.includes(key)));
  // One process, node with tsx's loader (as production runs node): tsx's own CLI runs the server as a
  // child and relays signals, and on a busy machine a SIGTERM could kill it before it learnt that the
  // server handles SIGTERM itself (exit 143 instead of a clean 0).
  const child = spawn(process.execPath, ['--import', TSX_LOADER, SERVER], {
    cwd,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on('exit', (code, signal) => done({ code, signal })),
  );
  return { child, output: () => output, exited };
}

/** Waits for pino's "Server listening at" line and answers that address. */
async function listening(running: Running, timeoutMs = PROCESS_TIMEOUT_MS): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const match = /Server listening at (http:\/\/[^"\s]+)/.exec(running.output());
    if (match) return match[1]!;
    if (running.child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  running.child.kill('SIGKILL');
  throw new Error(`server did not start:\n${running.output()}`);
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms).unref()),
  ]);
}

/** Whether a new TCP connection to the server's address is refused. */
function connectionRefused(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((done) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      done(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code === 'ECONNREFUSED'));
  });
}

const scratch = mkdtempSync(join(tmpdir(), 'svc-startup-'));
after(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

// Each case is its own process (most of the time is tsx starting up), so they run side by side.
describe('the server process', { concurrency: true }, () => {
  describe('configuration errors', { concurrency: true }, () => {
    for (const [variable, value] of [
      ['PORT', 'abc'],
      ['DATABASE_URL', 'mysql://localhost/db'],
      ['RATE_LIMIT_V1', '-1'],
    ] as const) {
      test(`${variable}=${value} exits with code 1 and exactly one output line naming ${variable}`, async () => {
        const running = run({ DATABASE_URL: `sqlite:${join(scratch, 'config.db')}`, PORT: '0', [variable]: value });
        const { code } = await withTimeout(running.exited, PROCESS_TIMEOUT_MS, 'exit');
        assert.equal(code, 1, running.output());
        const lines = running
          .output()
          .split('\n')
          .filter((line) => line.trim() !== '');
        assert.equal(lines.length, 1, running.output());
        assert.match(lines[0]!, new RegExp(`\\b${variable}\\b`));
        assert.equal(
          existsSync(join(scratch, 'config.db')),
          false,
          'nothing is opened before the configuration is valid',
        );
      });
    }

    // The same validation, in process (a process per value would be slow): every variable is named.
    for (const [variable, value] of [
      ['PORT', '70000'],
      ['PORT', '-1'],
      ['RATE_LIMIT_V4', '1.5'],
      ['RATE_LIMIT_V1', 'many'],
      ['LOG_LEVEL', 'loud'],
      ['REDIS_URL', 'http://127.0.0.1:6379'],
      ['WORKSHOP_URL', 'https://example.com/no-placeholder'],
      ['BASE_URL', 'ftp://api.example.com'],
      ['DATABASE_URL', 'sqlite:'],
    ] as const) {
      test(`${variable}=${JSON.stringify(value)} is a configuration error naming ${variable}`, () => {
        assert.throws(
          () => loadConfig({ [variable]: value }),
          (error: Error) => {
            assert.ok(error instanceof ConfigError);
            assert.match(error.message, new RegExp(`^${variable}\\b`));
            assert.doesNotMatch(error.message, /\n/);
            return true;
          },
        );
      });
    }
  });

  describe('a good configuration', () => {
    let database: TestDatabase;
    before(async () => {
      database = await freshDatabase();
    });
    after(() => database.drop());

    test('serves GET /healthz 200 {"status":"ok"}, logs the BASE_URL pages use, and SIGINT exits 0', async () => {
      const running = run({
        DATABASE_URL: database.url,
        PORT: '0',
        LOG_LEVEL: 'info',
        BASE_URL: 'http://127.0.0.1:8080',
      });
      const url = await listening(running);
      const health = await send(url, 'GET', '/healthz');
      assert.equal(health.status, 200);
      assert.deepEqual(health.body, { status: 'ok' });
      assert.match(health.headers.get('content-type') ?? '', /^application\/json/);
      running.child.kill('SIGINT');
      const exit = await withTimeout(running.exited, 15_000, 'exit after SIGINT');
      assert.deepEqual(exit, { code: 0, signal: null }, running.output());
      assert.match(running.output(), /"signal":"SIGINT"/);
      // Listening on a random port, but what pages, links and passkeys use is BASE_URL, said so once.
      assert.match(
        running.output(),
        /"msg":"pages and links use BASE_URL http:\/\/127\.0\.0\.1:8080; Passkeys are not available here: [^"]*IP address/,
      );
      assert.equal(await connectionRefused(url), true);
    });
  });

  describe('SIGTERM with a request in flight', () => {
    let database: TestDatabase;
    let workshop: Server;
    let workshopUrl: string;
    /** Called when the workshop receives the mod lookup; the answer follows after DELAY_MS. */
    let onLookup: () => void = () => {};
    const DELAY_MS = 1_500;

    before(async () => {
      database = await freshDatabase();
      workshop = createServer((_request, response) => {
        onLookup();
        setTimeout(() => {
          response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
            `<html><body><div class="breadcrumbs"><a href="https://steamcommunity.com/app/346110/workshop/">Workshop</a></div>
  <div class="workshopItemTitle">Slow Mod</div><div id="highlightContent">nothing yet</div></body></html>`,
          );
        }, DELAY_MS);
      });
      await new Promise<void>((done) => workshop.listen(0, '127.0.0.1', done));
      workshopUrl = `http://127.0.0.1:${(workshop.address() as AddressInfo).port}/sharedfiles/filedetails/?id={id}`;
    });
    after(async () => {
      workshop.closeAllConnections();
      await new Promise((done) => workshop.close(done));
      await database.drop();
    });

    test('the request finishes with its normal answer, new connections are refused, then the process exits 0', async () => {
      const running = run({
        DATABASE_URL: database.url,
        PORT: '0',
        BASE_URL: `https://${TEST_HOST}`,
        WORKSHOP_URL: workshopUrl,
        RATE_LIMIT_V1: '0',
      });
      const url = await listening(running);
      const user = newUser('ed25519');
      const created = await send(url, 'POST', '/v1/user.php', {
        body: { user_id: user.userId, public_key: user.publicPem },
      });
      assert.equal(created.status, 200, created.text);

      const lookedUp = new Promise<void>((done) => (onLookup = done));
      const body = JSON.stringify({ mod_id: '5550001' });
      const startedAt = Date.now();
      const inFlight = send(url, 'POST', '/v1/mod.php', {
        headers: signedHeaders(user, 'POST', '/v1/mod.php', body),
        body,
      });
      await withTimeout(lookedUp, 10_000, 'the workshop lookup');
      running.child.kill('SIGTERM');

      // The listener closes at once, while the slow request is still being answered.
      let answered = false;
      void inFlight.then(() => (answered = true));
      let refused = false;
      while (!refused && !answered) {
        refused = await connectionRefused(url);
        if (!refused) await new Promise((done) => setTimeout(done, 25));
      }
      assert.equal(refused, true, 'new connections are refused during shutdown');
      assert.equal(answered, false, 'refused while the request was still in flight');
      assert.equal(running.child.exitCode, null, 'the process waits for the request in flight');

      const reply = await inFlight;
      assert.ok(Date.now() - startedAt >= DELAY_MS - 50);
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.mod_id, '5550001');
      assert.equal(reply.body.name, 'Slow Mod');
      assert.equal(reply.body.confirmed, false);
      assert.equal(reply.headers.get('connection'), 'close', 'an answer during shutdown ends its connection');

      const exit = await withTimeout(running.exited, 15_000, 'exit after SIGTERM');
      assert.deepEqual(exit, { code: 0, signal: null }, running.output());
      assert.match(running.output(), /"signal":"SIGTERM"/);
      assert.equal(await connectionRefused(url), true);
    });
  });

  describe('the default database', () => {
    test('with no DATABASE_URL the SQLite file is created under ./data/ of the working directory and kept across restarts', async () => {
      const cwd = mkdtempSync(join(scratch, 'cwd-'));
      const user = newUser('ed25519');
      const first = run({ PORT: '0' }, cwd);
      try {
        const url = await listening(first);
        assert.equal(existsSync(join(cwd, 'data', 'service.db')), true);
        const created = await send(url, 'POST', '/v1/user.php', {
          body: { user_id: user.userId, public_key: user.publicPem },
        });
        assert.equal(created.status, 200, created.text);
      } finally {
        first.child.kill('SIGTERM');
      }
      assert.equal((await withTimeout(first.exited, 15_000, 'exit')).code, 0);

      const second = run({ PORT: '0' }, cwd);
      try {
        const url = await listening(second);
        const read = await send(url, 'GET', `/v1/user.php/${user.userId}`);
        assert.equal(read.status, 200, read.text);
        assert.equal(read.body.user_id, user.userId);
      } finally {
        second.child.kill('SIGTERM');
      }
      assert.equal((await withTimeout(second.exited, 15_000, 'exit')).code, 0);
    });
  });
});
