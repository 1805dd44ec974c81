import { randomUUID } from 'node:crypto';
import { TypeBoxValidatorCompiler, registerAjvFormats, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import type { DestinationStream } from 'pino';
import type { Config } from './config.ts';
import { openDatabase, type Database } from './db/connection.ts';
import { migrateToLatest } from './db/migrate.ts';
import { ensureSearchIndexes } from './db/search-indexes.ts';
import { installErrorModel } from './http/error-handler.ts';
import { healthRoutes } from './http/health.ts';
import { openApi } from './http/openapi.ts';
import { OneLinePerRequest } from './http/request-log.ts';
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

const REDACTED = ['password', 'client_secret', 'access_token', 'refresh_token', 'code_verifier', 'token'];

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
  const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: true }) : undefined;
  redis?.on('error', () => {}); // reported per request by the rate limiter; avoid an unhandled 'error' event

  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: [...REDACTED, ...REDACTED.map((key) => `*.${key}`), 'req.headers.authorization', 'req.headers["x-service-token"]', 'req.headers.cookie'], censor: '[redacted]' },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    logController: new OneLinePerRequest(),
    genReqId: () => randomUUID(),
    bodyLimit: 1024 * 1024,
    // A hop count means "trust that many proxies nearest to us", as proxy-addr counts hops.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    // v1 paths carry comma-separated id lists, far longer than find-my-way's default 100.
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 16_384 },
  })
    .withTypeProvider<TypeBoxTypeProvider>()
    .setValidatorCompiler(TypeBoxValidatorCompiler);

  for (const warning of startupWarnings) app.log.warn(warning);
  app.decorate('config', config);
  app.decorate('database', database);
  app.decorate('redis', redis);
  app.decorate('rateLimitNamespace', options.rateLimitNamespace ?? 'ratelimit:');
  app.addHook('onClose', async () => {
    await database.close();
    if (redis) await redis.quit().catch(() => redis.disconnect());
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
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
