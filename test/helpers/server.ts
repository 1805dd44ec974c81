import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { MailPluginOptions } from '../../src/mail/index.ts';

/**
 * PostgreSQL requires SECRETS_KEY (SQLite generates one beside its file). One per test process,
 * set in the environment so the admin CLI and server processes the tests start inherit it too.
 */
if (process.env.DATABASE_URL?.startsWith('postgres')) process.env.SECRETS_KEY ??= randomBytes(32).toString('base64');

/** The canonical host every test server signs for (BASE_URL). */
export const TEST_HOST = 'api.test.example';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON (undefined when empty). */
  body: any;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Sent as is when a string or Buffer, as JSON (with its Content-Type) otherwise. */
  body?: unknown;
}

export interface TestServer {
  app: FastifyInstance;
  config: Config;
  /** Where the server listens, e.g. http://127.0.0.1:41234 */
  url: string;
  logs: string[];
  request(method: string, path: string, options?: RequestOptions): Promise<Reply>;
  close(): Promise<void>;
}

export interface TestDatabase {
  /** DATABASE_URL for a server using this database. */
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh, empty database: a temp SQLite file, or with DATABASE_URL=postgres://… set, a new
 * schema in that database that only this server sees.
 */
export async function freshDatabase(): Promise<TestDatabase> {
  const target = process.env.DATABASE_URL;
  if (target?.startsWith('postgres')) {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: target });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    const url = new URL(target);
    url.searchParams.set('options', `-c search_path=${schema},public`);
    return {
      url: url.toString(),
      async drop() {
        const client = new pg.Client({ connectionString: target });
        await client.connect();
        await client.query(`drop schema if exists ${schema} cascade`);
        await client.end();
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-'));
  return { url: `sqlite:${join(dir, 'test.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Share a database between servers (several instances). */
  database?: TestDatabase;
  rateLimitNamespace?: string;
  /** Runs before the server listens: add test-only routes here. */
  beforeListen?: (app: FastifyInstance) => void | Promise<void>;
  /**
   * BASE_URL is the server's own address (http://127.0.0.1:PORT) instead of https://TEST_HOST,
   * so a client configured by discovery alone reaches every endpoint it reads there.
   */
  baseUrlIsOwnAddress?: boolean;
  /** Time between background purges of expired rows. */
  purgeIntervalMs?: number;
  /** Mail options: e.g. retryDelaysMs [0, 0] so a refused message is retried at once. */
  mail?: MailPluginOptions;
  /** How often the signing keys are read again (a rotation by another instance seen sooner). */
  keyReloadIntervalMs?: number;
}

/** A port nothing listens on right now (the system's choice). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

/**
 * Starts a server as `startServer` describes; a start that fails is reported on stderr and tried
 * once more, so a transient fault of the shared PostgreSQL (another test process dropping its
 * schema during our catalog reads) is seen in CI's output instead of cancelling a whole suite.
 */
export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  try {
    return await startServerOnce(options);
  } catch (error) {
    process.stderr.write(`test server failed to start, trying once more: ${(error as Error)?.stack ?? error}\n`);
    return startServerOnce(options);
  }
}

async function startServerOnce(options: StartOptions): Promise<TestServer> {
  const ownDatabase = options.database === undefined;
  const database = options.database ?? (await freshDatabase());
  const port = options.baseUrlIsOwnAddress ? await freePort() : 0;
  const config = loadConfig({
    BASE_URL: port ? `http://127.0.0.1:${port}` : `https://${TEST_HOST}`,
    LOG_LEVEL: 'info',
    RATE_LIMIT_V1: '0',
    RATE_LIMIT_V4: '0',
    ...(process.env.SECRETS_KEY ? { SECRETS_KEY: process.env.SECRETS_KEY } : {}),
    ...options.env,
    DATABASE_URL: database.url,
  });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  let app: FastifyInstance | undefined;
  try {
    app = await buildApp({
      config,
      logStream,
      rateLimitNamespace: options.rateLimitNamespace ?? `test:${randomBytes(6).toString('hex')}:`,
      purgeIntervalMs: options.purgeIntervalMs,
      mail: options.mail,
      keyReloadIntervalMs: options.keyReloadIntervalMs,
    });
    await options.beforeListen?.(app);
    await app.listen({ port, host: '127.0.0.1' });
  } catch (error) {
    await app?.close().catch(() => {});
    if (ownDatabase) await database.drop().catch(() => {});
    throw error;
  }
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    app,
    config,
    url,
    logs,
    request: (method, path, requestOptions) => send(url, method, path, requestOptions),
    async close() {
      await app.close();
      if (ownDatabase) await database.drop();
    },
  };
}

export async function send(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Blob | undefined;
  if (typeof options.body === 'string') body = options.body;
  else if (Buffer.isBuffer(options.body)) body = new Blob([new Uint8Array(options.body)]);
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(baseUrl + path, { method, headers, body, redirect: 'manual' });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/**
 * Resolves once the server's Redis client is connected. Polled rather than once(redis, 'ready'):
 * that rejects on any 'error' event meanwhile, and on a busy machine the client's ready check can
 * time out (an error) before it connects after all.
 */
export async function redisReady(server: TestServer, timeoutMs = 10_000): Promise<void> {
  const redis = server.app.redis;
  if (!redis) throw new Error('the server has no Redis client (REDIS_URL unset)');
  const deadline = Date.now() + timeoutMs;
  while (redis.status !== 'ready') {
    if (Date.now() > deadline) throw new Error(`Redis is not ready after ${timeoutMs} ms (${redis.status})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
