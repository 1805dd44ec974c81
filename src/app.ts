import { randomUUID } from 'node:crypto';
import { registerAjvFormats, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { DestinationStream } from 'pino';
import type { ApplicationSessions } from './accounts/application-sessions.ts';
import type { AccountEraser } from './accounts/erasure.ts';
import { giveKeyPairsToAccountsWithout, hasKeysSealedUnderAnotherKey } from './accounts/key-pair.ts';
import { ACCOUNTS_EXPIRING_ROWS } from './accounts/purge.ts';
import { classes } from './classes/index.ts';
import type { Config } from './config.ts';
import { type Database, openDatabase } from './db/connection.ts';
import { migrateToLatest } from './db/migrate.ts';
import { type ExpiringRows, Purger } from './db/purge.ts';
import { ensureSearchIndexes } from './db/search-indexes.ts';
import { answerHeadersPlugin } from './http/answer-headers.ts';
import { apiErrorForThrown, installErrorModel, sendError } from './http/error-handler.ts';
import { healthRoutes } from './http/health.ts';
import { installInputGuard, NODE_HEAD_LIMIT } from './http/input-guard.ts';
import { metricsEndpoint } from './http/metrics.ts';
import { openApi } from './http/openapi.ts';
import { answerClientError, answerConnect, answerUnknownExpectation } from './http/raw-errors.ts';
import { censorSecrets, OneLinePerRequest } from './http/request-log.ts';
import { protectV4Api } from './http/v4-api.ts';
import { validatorCompiler } from './http/validation.ts';
import { legacyApi } from './legacy/index.ts';
import { ACCOUNT_ERASERS, lifecyclePorts } from './lifecycle-ports.ts';
import { type MailPluginOptions, mail } from './mail/index.ts';
import { BackchannelDelivery } from './oauth/backchannel-delivery.ts';
import { discoveryRoute, oauthEndpoints } from './oauth/index.ts';
import { KeyRing } from './oauth/key-ring.ts';
import { wakeSendersIfQueued } from './oauth/logout-outbox.ts';
import { OAUTH_EXPIRING_ROWS } from './oauth/purge.ts';
import { findAccessToken } from './oauth/sessions.ts';
import { registerClasses } from './rest/routes.ts';
import { Secrets } from './secrets/sealed.ts';
import { loadSecretsKey, type SecretsKeySource } from './secrets/secrets-key.ts';
import { webPages } from './web/index.ts';
import { readWebSessionFromHeaders } from './web/web-sessions.ts';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    database: Database;
    /** Shared store for rate limits when REDIS_URL is set. */
    redis: Redis | undefined;
    /** Prefix of every key this instance writes to Redis. */
    rateLimitNamespace: string;
    /** Deletes expired rows in the background while the server listens. */
    purger: Purger;
    /** Seals and opens secrets kept at rest (AES-256-GCM under SECRETS_KEY). */
    secrets: Secrets;
    /** Applications' sessions as accounts/ ends them: provided from src/oauth/, which accounts/ does not import. */
    applicationSessions: ApplicationSessions;
    /** Every feature's part of erasing an account, run in one transaction (ACCOUNT_ERASERS). */
    accountErasers: readonly AccountEraser[];
  }
}

export interface AppOptions {
  config: Config;
  /** Where log lines go (tests capture them); stdout by default. */
  logStream?: DestinationStream;
  /** Prefix for shared rate-limit keys; tests use a fresh one per run. */
  rateLimitNamespace?: string;
  /** Time between background purges of expired rows (default 10 minutes). */
  purgeIntervalMs?: number;
  /** False when the schema is already migrated (cluster workers: the primary migrated it). */
  migrate?: boolean;
  /** The secrets key, loaded beforehand (server.ts does, to stop a bad start early); else loaded here. */
  secretsKey?: { key: Buffer; source: SecretsKeySource };
  /** How often the signing keys are read again (tests: a rotation seen sooner). */
  keyReloadIntervalMs?: number;
  /** Mail options (tests: shorter retry delays). */
  mail?: MailPluginOptions;
  /** How often the back-channel logout queue is looked at (tests: sooner). */
  backchannelPollIntervalMs?: number;
}

registerAjvFormats();

/** Every table that grows with use and when its rows are dead, as each owning feature lists them. */
export const EXPIRING_ROWS: readonly ExpiringRows[] = [...OAUTH_EXPIRING_ROWS, ...ACCOUNTS_EXPIRING_ROWS];

function trustHops(count: number) {
  return (_address: string, hop: number) => hop < count;
}

/** The v4 API: the classes, served by the REST engine behind bearer tokens. */
async function v4Api(api: FastifyInstance): Promise<void> {
  const { db } = api.database;
  await protectV4Api(api, { lookup: (token, now, log) => findAccessToken(db, token, now, log) });
  await registerClasses(api, classes);
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options;
  const secretsKey = options.secretsKey ?? loadSecretsKey(config);
  const database = openDatabase(config.database);
  const startupWarnings: string[] = [];
  try {
    if (options.migrate !== false) await prepareSchema(database, (message) => startupWarnings.push(message));
  } catch (error) {
    await database.close();
    throw error;
  }
  // commandTimeout: while Redis is unreachable, queued commands otherwise waited for ioredis's
  // growing reconnect delays (up to 10 s per request); now the limiter gives up after 250 ms.
  // (ioredis is loaded only when configured.)
  const redis = config.redisUrl
    ? new (await import('ioredis')).Redis(config.redisUrl, {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: true,
        commandTimeout: 250,
      })
    : undefined;

  const app = Fastify({
    logger: {
      level: config.logLevel,
      // Request lines never carry headers or bodies (see OneLinePerRequest); this guards other log
      // calls. (pino's own redact option made every request's child logger several times dearer.)
      formatters: { log: censorSecrets },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    logController: new OneLinePerRequest(),
    genReqId: () => randomUUID(),
    bodyLimit: 1024 * 1024,
    // A hop count means "trust that many proxies nearest to us", as proxy-addr counts hops.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    // v1 paths carry comma-separated id lists, far longer than find-my-way's default 100.
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 16_384 },
    // Errors raised before routing (a URL that is not valid percent-encoding) get the error shape too.
    // (No hooks run for them, so the request id header is set here.)
    frameworkErrors: (error, request, reply) =>
      sendError(
        reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff'),
        apiErrorForThrown(error, request),
      ),
    // Requests Node cannot parse, or parses but would refuse itself (no Host), answer in our shape too.
    clientErrorHandler: answerClientError,
    // Node refuses request heads over its limit before the method is known, so a refused HEAD could
    // not be told from a GET: Node's limit is 64 KiB and the 16 KiB limit is ours (input-guard.ts).
    http: { requireHostHeader: false, maxHeaderSize: NODE_HEAD_LIMIT },
  })
    .withTypeProvider<TypeBoxTypeProvider>()
    .setValidatorCompiler(validatorCompiler);

  for (const warning of startupWarnings) app.log.warn(warning);
  if (secretsKey.source.kind === 'file' && secretsKey.source.created) {
    app.log.warn(
      { path: secretsKey.source.path },
      'generated the secrets key (SECRETS_KEY unset): back this file up with the database; without it no private key can be read',
    );
  }
  app.decorate('secrets', new Secrets(secretsKey.key));
  backfillKeyPairs(app);
  app.decorate('config', config);
  app.decorate('database', database);
  // The outage's start is logged by the first request it fails (http/error-handler.ts).
  database.outage.onEnd((lastedMs) =>
    app.log.info({ lastedMs }, 'the database is reachable again: requests are served again'),
  );
  // accounts/ ends applications' sessions through this port; it never imports oauth/ (docs/decisions/0087).
  app.decorate('applicationSessions', lifecyclePorts.applicationSessions);
  app.decorate('accountErasers', ACCOUNT_ERASERS);
  // The authorization endpoint reads the browser's sign-in through this port (prompt=none).
  app.decorate('readBrowserSignIn', readWebSessionFromHeaders);
  // ID token keys: created on the first start, read again every interval (a rotation elsewhere).
  app.decorate('signingKeys', new KeyRing(database.db, app.secrets, options.keyReloadIntervalMs));
  app.addHook('onReady', async () => app.signingKeys.reload());
  // Back-channel logouts: queued with the session endings, sent once they committed (after the
  // answer to the request that ended them, or by any instance's poll).
  const backchannel = new BackchannelDelivery(database.db, app.signingKeys, config.baseUrl, app.log, {
    retryDelaysMs: config.backchannelRetryDelaysMs,
    pollIntervalMs: options.backchannelPollIntervalMs,
  });
  app.decorate('backchannelLogouts', backchannel);
  app.addHook('onListen', async () => backchannel.start());
  app.addHook('onResponse', (_request, _reply, done) => {
    wakeSendersIfQueued();
    done();
  });
  app.decorate('redis', redis);
  if (redis) reportRedisOutages(app, redis);
  app.decorate('rateLimitNamespace', options.rateLimitNamespace ?? 'ratelimit:');
  const purger = new Purger(database.db, EXPIRING_ROWS, app.log, { intervalMs: options.purgeIntervalMs });
  app.decorate('purger', purger);
  app.addHook('onListen', async () => purger.start());
  app.addHook('onClose', async () => {
    await backchannel.stop();
    await purger.stop();
    await database.close();
    if (redis) await redis.quit().catch(() => redis.disconnect());
  });

  // The headers every answer carries, and answers over 1 KiB in br or gzip when the client accepts
  // it (compressible types; routes with precompressed bodies opt out: the engram lists), in one
  // onSend hook (src/http/answer-headers.ts).
  await app.register(answerHeadersPlugin, { threshold: 1024, encodings: ['br', 'gzip'], brotliQuality: 4 });
  app.server.on('checkExpectation', answerUnknownExpectation);
  app.server.on('connect', answerConnect);
  const inputGuard = installInputGuard(app);

  installErrorModel(app, [inputGuard]);
  await metricsEndpoint(app);
  await app.register(mail, options.mail ?? {});
  await openApi(app);
  await app.register(healthRoutes);
  await app.register(legacyApi, { prefix: '/v1' });
  await app.register(oauthEndpoints, { prefix: '/v4' });
  await app.register(discoveryRoute);
  await app.register(v4Api, { prefix: '/v4' });
  await app.register(webPages);
  return app;
}

/**
 * Accounts made before every account had a key pair get one, in the background once the server
 * listens (see giveKeyPairsToAccountsWithout); closing the app waits for the account in hand.
 */
function backfillKeyPairs(app: FastifyInstance): void {
  let stopping = false;
  let running: Promise<unknown> = Promise.resolve();
  app.addHook('onListen', async () => {
    if (await hasKeysSealedUnderAnotherKey(app.database.db, app.secrets.keyId)) {
      app.log.error(
        'some private keys in the database were sealed under another secrets key and cannot be read: restore the secrets key file (or SECRETS_KEY) that was used with this database',
      );
    }
    running = giveKeyPairsToAccountsWithout(app.database.db, app.secrets, app.log, () => stopping).catch((err) =>
      app.log.error({ err }, 'giving key pairs to accounts without one failed; the next start tries again'),
    );
  });
  app.addHook('preClose', async () => {
    stopping = true;
    await running;
  });
}

/** Migrates the schema and creates the search indexes the database supports; idempotent. */
export async function prepareSchema(database: Database, warn: (message: string) => void): Promise<void> {
  await migrateToLatest(database.db);
  await ensureSearchIndexes(database.db, warn);
}

/**
 * While Redis is unreachable the rate limits let requests through (see limitRequests); the log
 * says so once when it is lost and once when it is back, not on every reconnect attempt.
 */
function reportRedisOutages(app: FastifyInstance, redis: Redis): void {
  let lost = false;
  redis.on('error', (err) => {
    if (lost) return;
    lost = true;
    app.log.warn({ err }, 'Redis is unreachable: rate limits are not enforced until it is back');
  });
  redis.on('ready', () => {
    if (!lost) return;
    lost = false;
    app.log.info('Redis is reachable again: rate limits are enforced');
  });
}
