import cluster from 'node:cluster';
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import client from 'prom-client';
import type { Database } from '../db/connection.ts';
import { ApiError } from './errors.ts';

/**
 * Prometheus metrics (GET /metrics, enabled by METRICS_TOKEN). Every process counts in prom-client's
 * default registry; with WORKERS > 1 the primary process adds up the workers' registries (its
 * AggregatorRegistry) and a worker asked for /metrics fetches that sum from the primary.
 */
const registry = client.register;

const httpRequests = new client.Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
});
const httpDuration = new client.Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from receiving a request to sending its answer, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});
const tokenGrants = new client.Counter({
  name: 'oauth_token_grants_total',
  help: 'Token endpoint answers, by grant type and outcome (success or the OAuth error code)',
  labelNames: ['grant_type', 'outcome'] as const,
});
const rateLimitRefusals = new client.Counter({
  name: 'rate_limit_refusals_total',
  help: 'Requests or attempts refused with 429 by a rate limit, by limit',
  labelNames: ['limit'] as const,
});
const securityEvents = new client.Counter({
  name: 'security_events_total',
  help: 'Security events recorded, by kind',
  labelNames: ['kind'] as const,
});
const mailMessages = new client.Counter({
  name: 'mail_messages_total',
  help: 'Mail messages by kind and outcome (sent, failed, invalid_address)',
  labelNames: ['kind', 'outcome'] as const,
});

const passkeySignIns = new client.Counter({
  name: 'passkey_sign_ins_total',
  help: 'Passkey sign-in attempts, by outcome (succeeded, refused, limited)',
  labelNames: ['outcome'] as const,
});
const passkeyRefusals = new client.Counter({
  name: 'passkey_refusals_total',
  help: 'Passkey sign-ins refused, by reason (challenge, counter_went_back, unknown_credential, …)',
  labelNames: ['reason'] as const,
});

/** The databases of the apps in this process (tests run several apps in one process). */
const databases = new Set<Database>();
new client.Gauge({
  name: 'db_pool_connections',
  help: 'Database connections of this process by state (SQLite: its one connection)',
  labelNames: ['state'] as const,
  collect() {
    this.reset();
    for (const database of databases) {
      const stats = database.poolStats();
      this.inc({ state: 'total' }, stats.total);
      this.inc({ state: 'idle' }, stats.idle);
      this.inc({ state: 'waiting' }, stats.waiting);
    }
  },
});

let defaultMetricsStarted = false;
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Requests that matched no route share one label: the raw path would make a series per URL. */
const UNMATCHED = 'unmatched';

export function countTokenGrant(grantType: string, outcome: string): void {
  tokenGrants.inc({ grant_type: grantType, outcome });
}

export function countRateLimitRefusal(limit: string): void {
  rateLimitRefusals.inc({ limit });
}

/** Called by the mailer (src/mail) for every message: sent, failed after its retries, or refused. */
export function countMail(kind: string, outcome: string): void {
  mailMessages.inc({ kind, outcome });
}

/** Called by the security-event log for every event it records. */
export function countSecurityEvent(kind: string): void {
  securityEvents.inc({ kind });
}

/** A passkey sign-in ended: `reason` for a refusal. */
export function countPasskeySignIn(outcome: 'succeeded' | 'refused' | 'limited', reason?: string): void {
  passkeySignIns.inc({ outcome });
  if (outcome === 'refused') passkeyRefusals.inc({ reason: reason ?? 'other' });
}

/**
 * With METRICS_TOKEN set: times every request (labelled by route pattern, never the raw path) and
 * serves GET /metrics to `Authorization: Bearer <token>`. Unset: no route (404) and no per-request work.
 * Must be called before the routes are registered, so its hook covers them.
 */
export async function metricsEndpoint(app: FastifyInstance): Promise<void> {
  const token = app.config.metricsToken;
  if (token === undefined) return;
  databases.add(app.database);
  app.addHook('onClose', async () => {
    databases.delete(app.database);
  });
  if (!defaultMetricsStarted) {
    client.collectDefaultMetrics();
    // In a worker, constructing one makes prom-client answer the primary's requests for this
    // process's metrics.
    if (cluster.isWorker) new client.AggregatorRegistry();
    defaultMetricsStarted = true;
  }

  app.addHook('onResponse', (request, reply, done) => {
    const labels = {
      method: METHODS.has(request.method) ? request.method : 'OTHER',
      route: request.routeOptions.url ?? UNMATCHED,
      status: String(reply.statusCode),
    };
    httpRequests.inc(labels);
    httpDuration.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  const expected = digest(token);
  app.get(
    '/metrics',
    { logLevel: 'warn', schema: { hide: true } },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
      if (!match || !timingSafeEqual(digest(match[1]!), expected)) {
        throw new ApiError(401, 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', {
          headers: { 'www-authenticate': 'Bearer realm="metrics"' },
        });
      }
      const body = cluster.isWorker ? await metricsFromPrimary() : await registry.metrics();
      return reply.header('cache-control', 'no-store').type(registry.contentType).send(body);
    },
  );
}

/** Equal-length digests, so the comparison takes the same time whatever the token's length. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

const REQUEST = 'content-service:metrics-request';
const RESPONSE = 'content-service:metrics-response';

interface MetricsMessage {
  type: string;
  id: string;
  body?: string;
  error?: string;
}

/** In a worker: asks the primary for every worker's metrics added up. */
function metricsFromPrimary(): Promise<string> {
  return new Promise((resolve, reject) => {
    const id = randomUUID();
    const timer = setTimeout(
      () => finish(new ApiError(503, 'The metrics of the other workers did not arrive in time')),
      7_000,
    );
    const onMessage = (message: MetricsMessage) => {
      if (message?.type !== RESPONSE || message.id !== id) return;
      finish(
        message.error === undefined ? undefined : new ApiError(503, `Metrics unavailable: ${message.error}`),
        message.body,
      );
    };
    function finish(error?: Error, body?: string) {
      clearTimeout(timer);
      process.off('message', onMessage);
      if (error) reject(error);
      else resolve(body ?? '');
    }
    process.on('message', onMessage);
    process.send?.({ type: REQUEST, id });
  });
}

/** In the primary: answers the workers' requests for the metrics of all of them. */
export function serveClusterMetrics(): void {
  const aggregator = new client.AggregatorRegistry();
  cluster.on('message', (worker, message: MetricsMessage) => {
    if (message?.type !== REQUEST) return;
    aggregator.clusterMetrics().then(
      (body) => worker.isConnected() && worker.send({ type: RESPONSE, id: message.id, body }),
      (error: Error) => worker.isConnected() && worker.send({ type: RESPONSE, id: message.id, error: error.message }),
    );
  });
}
