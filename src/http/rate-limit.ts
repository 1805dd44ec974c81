import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';
import { countRateLimitRefusal } from './metrics.ts';

export interface RateLimitOptions {
  /** Requests per minute; 0 turns the limit off. */
  perMinute: number;
  /** Separates this limit's counters from every other limit's in the shared store. */
  name: string;
  keyGenerator?: (request: FastifyRequest) => string;
  hook?: 'onRequest' | 'preHandler';
}

/**
 * Limits every route registered after this call in `scope`. Counters live in Redis when the
 * app has a Redis client (several instances count together), in process memory otherwise.
 */
export async function limitRequests(scope: FastifyInstance, options: RateLimitOptions): Promise<void> {
  if (options.perMinute <= 0) return;
  await scope.register(rateLimit, {
    global: true,
    max: options.perMinute,
    timeWindow: 60_000,
    hook: options.hook ?? 'onRequest',
    ...(options.keyGenerator ? { keyGenerator: options.keyGenerator } : {}),
    ...(scope.redis ? { redis: scope.redis, nameSpace: `${scope.rateLimitNamespace}${options.name}:` } : {}),
    // A Redis outage must not take the API down with it; requests then go unlimited.
    skipOnError: true,
    errorResponseBuilder: (_request, context) => {
      countRateLimitRefusal(options.name);
      return new ApiError(429, `Rate limit of ${context.max} requests per minute exceeded; retry in ${context.after}`);
    },
  });
}
