import { randomUUID } from 'node:crypto';
import { TypeBoxValidatorCompiler, registerAjvFormats, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import type { DestinationStream } from 'pino';
import type { Config } from './config.ts';
import { openDatabase, type Database } from './db/connection.ts';
import { migrateToLatest } from './db/migrate.ts';
import { ensureSearchIndexes } from './db/search-indexes.ts';
import { installErrorModel, sendError, toApiError } from './http/error-handler.ts';
import { healthRoutes } from './http/health.ts';
import { openApi } from './http/openapi.ts';
import { OneLinePerRequest, censorSecrets } from './http/request-log.ts';
import { v4Api } from './http/v4-api.ts';
import { legacyApi } from './legacy/index.ts';
import { oauthEndpoints } from './oauth/index.ts';
import { webPages } from './web/index.ts';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    database: Database;
    /** Shared store for rate limits when REDIS_URL is set. */
    redis: Redis | undefined;
    /** Prefix of every key this instance writes to Redis. */
    rateLimitNamespace: string;
  }
}

export interface AppOptions {
  config: Config;
  /** Where log lines go (tests capture them); stdout by default. */
  logStream?: DestinationStream;
  /** Prefix for shared rate-limit keys; tests use a fresh one per run. */
  rateLimitNamespace?: string;
}

registerAjvFormats();

function trustHops(count: number) {
  return (_address: string, hop: number) => hop < count;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options;
  const database = openDatabase(config.database);
  const startupWarnings: string[] = [];
  try {
    await migrateToLatest(database.db);
    await ensureSearchIndexes(database.db, database.kind, (message) => startupWarnings.push(message));
  } catch (error) {
    await database.close();
    throw error;
  }
  // commandTimeout: while Redis is unreachable, queued commands otherwise waited for ioredis's
  // growing reconnect delays (up to 10 s per request); now the limiter gives up after 250 ms.
  const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: true, commandTimeout: 250 }) : undefined;

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
    frameworkErrors: (error, request, reply) => sendError(reply.header('x-request-id', request.id), toApiError(error, request)),
  })
    .withTypeProvider<TypeBoxTypeProvider>()
    .setValidatorCompiler(TypeBoxValidatorCompiler);

  for (const warning of startupWarnings) app.log.warn(warning);
  app.decorate('config', config);
  app.decorate('database', database);
  app.decorate('redis', redis);
  if (redis) reportRedisOutages(app, redis);
  app.decorate('rateLimitNamespace', options.rateLimitNamespace ?? 'ratelimit:');
  app.addHook('onClose', async () => {
    await database.close();
    if (redis) await redis.quit().catch(() => redis.disconnect());
  });

  // A request in flight when close() starts ends its connection with its answer: otherwise a
  // keep-alive client holds the server (and a graceful shutdown) open until its idle timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  installErrorModel(app);
  await openApi(app);
  await app.register(healthRoutes);
  await app.register(legacyApi, { prefix: '/v1' });
  await app.register(oauthEndpoints, { prefix: '/v4' });
  await app.register(v4Api, { prefix: '/v4' });
  await app.register(webPages);
  return app;
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
