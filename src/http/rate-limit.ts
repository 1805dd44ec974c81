import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';

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
    errorResponseBuilder: (_request, context) =>
      new ApiError(429, `Rate limit of ${context.max} requests per minute exceeded; retry in ${context.after}`),
  });
}

export interface FailureLimiter {
  /** Milliseconds until the key may try again, or 0 when it may try now. */
  retryAfter(request: FastifyRequest): Promise<number>;
  recordFailure(request: FastifyRequest): Promise<void>;
}

/**
 * Lets `scope` create failure limiters (wrong passwords, wrong codes): only failures count, and
 * a key over its limit is refused before its attempt is even checked. Shares the store (Redis
 * or memory) of the request limits.
 */
export async function enableFailureLimits(scope: FastifyInstance): Promise<void> {
  await scope.register(rateLimit, {
    global: false,
    ...(scope.redis ? { redis: scope.redis, nameSpace: `${scope.rateLimitNamespace}failures:` } : {}),
    skipOnError: true,
  });
}

export function failureLimiter(
  scope: FastifyInstance,
  options: { name: string; max: number; windowMs: number; key: (request: FastifyRequest) => string | Promise<string> },
): FailureLimiter {
  const check = scope.createRateLimit({
    max: options.max,
    timeWindow: options.windowMs,
    keyGenerator: async (request) => `${options.name}:${await options.key(request)}`,
  });
  return {
    async retryAfter(request) {
      const status = await check(request, { increment: false });
      return !status.isAllowed && status.remaining <= 0 ? Math.max(status.ttl, 1000) : 0;
    },
    async recordFailure(request) {
      await check(request);
    },
  };
}
