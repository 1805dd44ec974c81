import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { countRateLimitRefusal } from './metrics.ts';

/**
 * Limits on attempts (passwords, two-step codes, device user codes) that hold under concurrency:
 * an attempt is counted before it is checked, atomically, so a burst of simultaneous guesses is
 * held to the same limit as sequential ones; an attempt that proves right, or that is refused,
 * gives its count back, so only failures use up the limit.
 *
 * The counters live in Redis when the app has a Redis client (instances count together), in
 * process memory otherwise, and also while Redis does not answer. A fixed window starts at a key's
 * first counted attempt.
 */

export interface CounterStore {
  /**
   * Adds one to `key`; answers the count after it, the milliseconds left in its window, and how to
   * take that one back (never below zero, and nothing once the window has ended).
   */
  increment(key: string, windowMs: number): Promise<{ count: number; ttlMs: number; takeBack(): Promise<void> }>;
}

class MemoryStore implements CounterStore {
  private readonly counts = new Map<string, { count: number; resetAt: number }>();
  private nextSweep = 0;

  async increment(key: string, windowMs: number) {
    const now = Date.now();
    this.sweep(now);
    let entry = this.counts.get(key);
    if (!entry || entry.resetAt <= now) {
      entry = { count: 0, resetAt: now + windowMs };
      this.counts.set(key, entry);
    }
    entry.count += 1;
    const counted = entry;
    const takeBack = async () => {
      if (this.counts.get(key) === counted && counted.resetAt > Date.now() && counted.count > 0) counted.count -= 1;
    };
    return { count: entry.count, ttlMs: entry.resetAt - now, takeBack };
  }

  /** Drops ended windows now and then, so memory follows the keys seen recently. */
  private sweep(now: number) {
    if (now < this.nextSweep) return;
    this.nextSweep = now + 60_000;
    for (const [key, entry] of this.counts) if (entry.resetAt <= now) this.counts.delete(key);
  }
}

// INCR and the window's expiry in one step (a key left without expiry gets one too).
const INCREMENT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

// DECR only a live, positive count: a key whose window ended must not come back as -1 forever.
const DECREMENT = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count > 0 then redis.call('DECR', KEYS[1]) end
return 0`;

type ScriptedRedis = Redis & {
  attemptIncrement(key: string, windowMs: number): Promise<[number, number]>;
  attemptDecrement(key: string): Promise<number>;
};

/**
 * Counters in Redis, shared by every instance. When Redis does not answer, the attempt is counted
 * in this process instead: the limit then holds per instance rather than not at all (a flood that
 * slows Redis down must not open the limits).
 */
class RedisStore implements CounterStore {
  private readonly fallback = new MemoryStore();
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly prefix: string,
  ) {}

  async increment(key: string, windowMs: number) {
    // Not connected (an outage, or still starting): count here at once rather than wait.
    if (this.redis.status !== 'ready') return this.fallback.increment(key, windowMs);
    let counted: [number, number];
    try {
      counted = await this.redis.attemptIncrement(this.prefix + key, windowMs);
    } catch {
      return this.fallback.increment(key, windowMs);
    }
    const takeBack = async () => {
      await this.redis.attemptDecrement(this.prefix + key).catch(() => undefined);
    };
    return { count: counted[0], ttlMs: counted[1], takeBack };
  }
}

const attemptClients = new WeakMap<Redis, ScriptedRedis>();

/**
 * The app's Redis connection for attempt counters: its own, with a longer command timeout than the
 * request limits' 250 ms, so a busy moment is not taken for an outage. Closed with the app.
 */
function attemptClient(app: FastifyInstance, redis: Redis): ScriptedRedis {
  let client = attemptClients.get(redis);
  if (!client) {
    const created = redis.duplicate({ commandTimeout: 2000 });
    created.on('error', () => {}); // reported by the app's own client (see reportRedisOutages)
    // defineCommand sends a script once and then runs it by its SHA (EVALSHA).
    created.defineCommand('attemptIncrement', { numberOfKeys: 1, lua: INCREMENT });
    created.defineCommand('attemptDecrement', { numberOfKeys: 1, lua: DECREMENT });
    client = created as ScriptedRedis;
    attemptClients.set(redis, client);
    app.addHook('onClose', async () => {
      await created.quit().catch(() => created.disconnect());
    });
  }
  return client;
}

export interface AttemptLimit {
  readonly name: string;
  /** This limit's counter for one key (an IP address, an account), for countAttempt. */
  of(key: string): AttemptCounter;
}

export interface AttemptCounter {
  readonly limit: AttemptLimit;
  readonly key: string;
  readonly max: number;
  readonly windowMs: number;
  readonly store: CounterStore;
}

/**
 * At most `max` failed attempts per key in `windowMs`. Each limit keeps its own counters (in memory)
 * or its own keys (in Redis, under the app's rate-limit namespace).
 */
export function attemptLimit(
  app: FastifyInstance,
  options: { name: string; max: number; windowMs: number },
): AttemptLimit {
  const store: CounterStore = app.redis
    ? new RedisStore(attemptClient(app, app.redis), `${app.rateLimitNamespace}attempts:${options.name}:`)
    : new MemoryStore();
  const limit: AttemptLimit = {
    name: options.name,
    of: (key) => ({ limit, key: boundedKey(key), max: options.max, windowMs: options.windowMs, store }),
  };
  return limit;
}

/** Keys come from what clients send (a login name, a cookie): a long one is stored as its hash. */
const boundedKey = (key: string) =>
  key.length <= 128 ? key : `sha256:${createHash('sha256').update(key).digest('base64url')}`;

export interface Attempt {
  /** The limits this attempt went over; empty when it may be checked. */
  readonly refusedBy: readonly AttemptLimit[];
  /** When refused: milliseconds until every limit that refused it allows attempts again. */
  readonly retryAfterMs: number;
  /** The attempt proved right: its count is given back. */
  succeeded(): Promise<void>;
}

/**
 * Counts one attempt against every counter, before it is checked. When any counter is over its
 * limit the attempt is refused and given back on all of them (a refused attempt is not a
 * failure). Otherwise the count stays, as a failure, unless `succeeded()` gives it back.
 */
export async function countAttempt(counters: readonly AttemptCounter[]): Promise<Attempt> {
  const counts = await Promise.all(counters.map((counter) => counter.store.increment(counter.key, counter.windowMs)));
  const giveBack = () => Promise.all(counts.map((counted) => counted.takeBack())).then(() => undefined);
  const over = counters
    .map((counter, index) => ({ counter, ...counts[index]! }))
    .filter(({ counter, count }) => count > counter.max);
  if (over.length === 0) return { refusedBy: [], retryAfterMs: 0, succeeded: giveBack };
  await giveBack();
  for (const { counter } of over) countRateLimitRefusal(counter.limit.name);
  return {
    refusedBy: over.map(({ counter }) => counter.limit),
    retryAfterMs: Math.max(1000, ...over.map(({ ttlMs }) => ttlMs)),
    succeeded: async () => undefined,
  };
}
