import { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { type Logger, symbols } from 'pino';

// biome-ignore lint/suspicious/noExplicitAny: pino's internal fields, untyped by pino
type PinoInternals = Record<symbol, any>;
/** Declared by pino at run time, not in its types. */
const msgPrefixSym = (symbols as unknown as Record<string, symbol>).msgPrefixSym!;
const INFO = 30;

/**
 * Writes a request's line as pino's info() would write it, the same text to the same stream, but
 * without pino's loop over the object's keys: that loop's keyed loads see more than four names
 * (the line has five), so V8 makes them megamorphic, ~15,000 instructions of every request (issue
 * 21, callgrind; the line with four keys took 6 % fewer). pino exposes its symbols for such
 * integrations. False, writing nothing, where the logger does more than format the line (a
 * mixin, hooks, a message prefix, a stream that wants metadata): then info() writes it.
 */
export function writeRequestLine(
  log: FastifyBaseLogger,
  method: string,
  path: string,
  status: number,
  ms: number,
  ip: string | undefined,
): boolean {
  // A socket gone before the answer has no address: pino leaves the field out, info() does that.
  if (typeof ip !== 'string') return false;
  const logger = log as unknown as PinoInternals;
  const stream = logger[symbols.streamSym];
  if (
    stream === undefined ||
    stream[symbols.needsMetadataGsym] === true ||
    logger[symbols.mixinSym] ||
    logger[msgPrefixSym] ||
    logger[symbols.hooksSym]?.streamWrite
  )
    return false;
  if (!(log as unknown as Logger).isLevelEnabled('info')) return true;
  stream.write(
    `${logger[symbols.lsCacheSym][INFO]}${logger[symbols.timeSym]()}${logger[symbols.chindingsSym]},"method":${JSON.stringify(method)},"path":${JSON.stringify(path)},` +
      `"status":${status},"ms":${Number.isFinite(ms) ? ms : null},"ip":${JSON.stringify(ip)},"msg":"request"${logger[symbols.endSym]}`,
  );
  return true;
}

/**
 * One log line per request, written when it completes: method, path (never the query, which
 * may carry codes), status, time and client IP. Headers and bodies are never logged.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const { url } = request;
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const ms = Math.round(reply.elapsedTime * 10) / 10;
    if (!error && writeRequestLine(reply.log, request.method, path, reply.statusCode, ms, request.ip)) return;
    const line = { method: request.method, path, status: reply.statusCode, ms, ip: request.ip };
    if (error) reply.log.error({ ...line, err: error }, 'request failed');
    else reply.log.info(line, 'request');
  }
}

/** Field names whose values censorSecrets replaces (mayHoldSecrets names each of them too). */
export const SECRET_KEYS = [
  'password',
  'client_secret',
  'access_token',
  'refresh_token',
  'code_verifier',
  'token',
  'code',
];
const SECRET_HEADERS = ['authorization', 'x-service-token', 'cookie'];

/** Whether `object` has a field censorSecrets looks at (SECRET_KEYS or headers). */
function mayHoldSecrets(object: Record<string, unknown>): boolean {
  return (
    'headers' in object ||
    'password' in object ||
    'client_secret' in object ||
    'access_token' in object ||
    'refresh_token' in object ||
    'code_verifier' in object ||
    'token' in object ||
    'code' in object
  );
}

/**
 * pino's log formatter: a logged object's secret-named fields, and the credential headers of a
 * logged `headers` object, are replaced by "[redacted]" whatever logs them. (A logged `req` goes
 * through Fastify's serializer, which keeps no headers.)
 */
export function censorSecrets(object: Record<string, unknown>): Record<string, unknown> {
  // Named checks first: the loop's `key in object` is a megamorphic lookup, on every line logged.
  if (!mayHoldSecrets(object)) return object;
  let censored: Record<string, unknown> | undefined;
  for (const key of SECRET_KEYS) {
    if (key in object) {
      censored ??= { ...object };
      censored[key] = '[redacted]';
    }
  }
  const headers = object.headers;
  if (headers && typeof headers === 'object' && SECRET_HEADERS.some((name) => name in headers)) {
    const copy: Record<string, unknown> = { ...headers };
    for (const name of SECRET_HEADERS) if (name in copy) copy[name] = '[redacted]';
    censored ??= { ...object };
    censored.headers = copy;
  }
  return censored ?? object;
}
