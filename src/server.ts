import cluster, { type Worker } from 'node:cluster';
import closeWithGrace from 'close-with-grace';
import pino from 'pino';
import { relyingPartyFor } from './accounts/relying-party.ts';
import { buildApp, prepareSchema } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/connection.ts';
import { batchedLogDestination } from './http/log-destination.ts';
import { serveClusterMetrics } from './http/metrics.ts';
import { loadSecretsKey } from './secrets/secrets-key.ts';
import { warmUpTickQueue } from './tick-warm-up.ts';

/** Sent by the primary to a worker: finish the requests in flight and exit. */
const SHUTDOWN = 'content-service:shutdown';
/** How long the primary waits for its workers to drain before it gives up on them. */
const DRAIN_MS = 15_000;
/** Log lines are written in batches of about this many characters, and at least this often. */
const LOG_BATCH_CHARS = 4096;
const LOG_FLUSH_MS = 250;

async function main(): Promise<void> {
  let config: Config;
  let secretsKey: ReturnType<typeof loadSecretsKey>;
  try {
    config = loadConfig();
    secretsKey = loadSecretsKey(config);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  if (cluster.isWorker) await serve(config, { worker: true, secretsKey });
  else if (config.workers > 1) await supervise(config);
  else await serve(config, { worker: false, secretsKey });
}

/** One server process: the only one (WORKERS=1) or a worker of the cluster sharing the port. */
async function serve(
  config: Config,
  { worker, secretsKey }: { worker: boolean; secretsKey: ReturnType<typeof loadSecretsKey> },
): Promise<void> {
  await warmUpTickQueue();
  // Asynchronous writes of 4 KiB of lines at a time (or what a quarter of a second gathered) instead
  // of a write() per line or burst: each write is a round trip through libuv's thread pool, which
  // cost a single-object GET as much as its database lookup. What is pending is written when the
  // process exits (a process killed outright loses at most those lines). See log-destination.ts.
  const logStream = batchedLogDestination({ fd: 1, batchChars: LOG_BATCH_CHARS, flushMs: LOG_FLUSH_MS });
  const app = await buildApp({ config, logStream, migrate: !worker, secretsKey });
  let closing = false;
  const closer = closeWithGrace({ delay: 10_000, ...(worker ? { skip: ['SIGINT'] } : {}) }, async ({ signal, err }) => {
    closing = true;
    if (err) app.log.error({ err }, 'shutting down after an error');
    else app.log.info({ signal }, 'shutting down');
    await app.close();
  });
  if (worker) {
    // Ctrl-C reaches every process of the terminal's group; workers leave stopping to the primary,
    // which tells each of them once (a second signal would make close-with-grace exit 1).
    process.on('SIGINT', () => {});
    process.on('message', (message: { type?: string }) => {
      if (message?.type === SHUTDOWN && !closing) void closer.close();
    });
  }
  await app.listen({ port: config.port, host: config.host });
  // The primary says it once for the cluster, when every worker listens.
  if (!worker) logBaseUrl(app.log, config);
}

/**
 * The address people and browsers use (BASE_URL), which can differ from the one listened on
 * ("Server listening at …"): links in pages and mail, and passkeys, which need a domain name.
 */
function logBaseUrl(log: { info(details: object, message: string): void }, config: Config): void {
  const passkeys = relyingPartyFor(config.baseUrl);
  log.info(
    { baseUrl: config.baseUrl, passkeys: passkeys.ok },
    passkeys.ok
      ? `pages, links and passkeys use BASE_URL ${config.baseUrl}`
      : `pages and links use BASE_URL ${config.baseUrl}; ${passkeys.reason}`,
  );
}

/**
 * The cluster's primary process (WORKERS > 1): migrates the schema once, starts the workers, which
 * share the listening port, replaces a worker that dies, adds up their metrics, and on SIGTERM or
 * SIGINT lets every worker drain and exits 0 once all have stopped.
 */
async function supervise(config: Config): Promise<void> {
  const log = pino({ level: config.logLevel });
  let stopping = false;
  let exitCode = 0;
  // Until the handlers below replace it: a stop asked for while migrating ends the start cleanly.
  const stopWhileMigrating = () => (stopping = true);
  process.on('SIGTERM', stopWhileMigrating).on('SIGINT', stopWhileMigrating);
  const database = openDatabase(config.database);
  try {
    await prepareSchema(database, (message) => log.warn(message));
  } finally {
    await database.close();
  }
  process.off('SIGTERM', stopWhileMigrating).off('SIGINT', stopWhileMigrating);
  if (stopping) {
    log.info('stopped before the workers started');
    process.exit(0);
  }
  serveClusterMetrics();

  let listening = 0;
  const startedAt = new Map<Worker, number>();
  const serving = new WeakSet<Worker>();
  const start = () => startedAt.set(cluster.fork(), Date.now());
  cluster.on('listening', (worker) => {
    serving.add(worker);
    if (startedAt.has(worker) && ++listening === config.workers) {
      log.info({ workers: config.workers, port: config.port }, 'all workers listening');
      logBaseUrl(log, config);
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (startedAt.get(worker) ?? 0);
    startedAt.delete(worker);
    if (stopping) {
      if (startedAt.size === 0) {
        log.info('every worker stopped');
        process.exit(exitCode);
      }
      return;
    }
    if (listening < config.workers) {
      // A worker that fails while the cluster is still starting (port taken, database unreachable)
      // would fail again: stop instead of restarting it forever.
      log.error({ pid: worker.process.pid, code, signal }, 'a worker failed to start; stopping');
      stopAll(1);
      return;
    }
    log.warn({ pid: worker.process.pid, code, signal }, 'a worker stopped; starting another');
    // One that died right after starting waits a moment, so a crash loop does not spin.
    setTimeout(start, lived < 1000 ? 1000 : 0);
  });

  const stopAll = (code: number) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    // One still starting has no requests to finish (and may not listen for the message yet).
    for (const worker of startedAt.keys()) {
      if (serving.has(worker) && worker.isConnected()) worker.send({ type: SHUTDOWN });
      else worker.process.kill('SIGTERM');
    }
    setTimeout(() => {
      log.error('workers did not stop in time; killing them');
      for (const worker of startedAt.keys()) worker.process.kill('SIGKILL');
      process.exit(1);
    }, DRAIN_MS).unref();
    if (startedAt.size === 0) process.exit(exitCode);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      log.info({ signal }, 'shutting down the workers');
      stopAll(0);
    });
  }
  for (let i = 0; i < config.workers; i++) start();
}

main().catch((error) => {
  process.stderr.write(`failed to start: ${(error as Error).message}\n`);
  process.exit(1);
});
