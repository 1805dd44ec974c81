import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'fastify/types/logger.js';

/**
 * One log line per request, written when it completes: method, path (never the query, which
 * may carry codes), status, time and client IP. Headers and bodies are never logged.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const { method, url } = request;
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const status = reply.statusCode;
    const ms = Math.round(reply.elapsedTime * 10) / 10;
    const ip = request.ip;
    // (Each line is one object literal: a spread of two objects made pino's write several times dearer.)
    const log = reply.log as FastifyBaseLogger | RequestLogger;
    if (error) log.error({ method, path, status, ms, ip, err: error }, 'request failed');
    // reqId first, as the child would have written it (Fastify's requestIdLogLabel, not changed here).
    else if (log instanceof RequestLogger && log.unused) log.parent.info({ reqId: request.id, method, path, status, ms, ip }, 'request');
    else log.info({ method, path, status, ms, ip }, 'request');
  }
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

// The level methods, defined in the class's static block.
export interface RequestLogger extends Pick<FastifyBaseLogger, (typeof LEVELS)[number]> {}

/**
 * A request's logger (Fastify's childLoggerFactory): pino's child, which carries the request id
 * in each of its lines, is made only when something logs through it. The request's own line (the
 * one every request writes) goes through the parent with the id among its fields: the same JSON,
 * without a child per request.
 */
export class RequestLogger {
  #child: FastifyBaseLogger | undefined;
  readonly parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  static factory(this: unknown, parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
    return new RequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
  }

  #logger(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.#bindings, this.#options));
  }

  /** No child was made and the route has no level or serializers of its own: the parent writes the same line. */
  get unused(): boolean {
    return this.#child === undefined && this.#options.level === undefined && this.#options.serializers === undefined;
  }

  get level(): string {
    return this.#child?.level ?? this.#options.level ?? this.parent.level;
  }
  set level(level: string) {
    this.#logger().level = level;
  }
  get silent(): FastifyBaseLogger['silent'] {
    return this.#logger().silent;
  }
  static {
    // One method per level on the prototype (not per instance: a request's logger stays one small object).
    for (const level of LEVELS) {
      Object.defineProperty(RequestLogger.prototype, level, {
        value(this: RequestLogger, ...args: unknown[]): void {
          (this.#logger()[level] as (...args: unknown[]) => void)(...args);
        },
      });
    }
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options);
  }
}

const SECRET_KEYS = ['password', 'client_secret', 'access_token', 'refresh_token', 'code_verifier', 'token', 'code'];
const SECRET_HEADERS = ['authorization', 'x-service-token', 'cookie'];

/**
 * pino's log formatter: a logged object's secret-named fields, and the credential headers of a
 * logged `headers` object, are replaced by "[redacted]" whatever logs them. (A logged `req` goes
 * through Fastify's serializer, which keeps no headers.)
 */
export function censorSecrets(object: Record<string, unknown>): Record<string, unknown> {
  let censored: Record<string, unknown> | undefined;
  for (const key of SECRET_KEYS) {
    if (key in object) (censored ??= { ...object })[key] = '[redacted]';
  }
  const headers = object.headers;
  if (headers && typeof headers === 'object' && SECRET_HEADERS.some((name) => name in headers)) {
    const copy: Record<string, unknown> = { ...headers };
    for (const name of SECRET_HEADERS) if (name in copy) copy[name] = '[redacted]';
    (censored ??= { ...object }).headers = copy;
  }
  return censored ?? object;
}
