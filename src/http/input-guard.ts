import type { FastifyInstance, FastifyRequest, preParsingHookHandler, preValidationHookHandler } from 'fastify';
import { ApiError } from './errors.ts';

/**
 * Where a NUL character hides in a parsed value (a string, or the keys and values of nested
 * objects and arrays), as a JSON-pointer-like path; undefined when there is none. Iterative, so a
 * deeply nested body cannot overflow the stack.
 */
export function findNul(value: unknown): string | undefined {
  // The values still to look at, each with the index of its container here and its key there; a
  // path is built only for a NUL found (building one per value was most of a bulk POST's check).
  const values: unknown[] = [value];
  const parents: number[] = [-1];
  const keys: string[] = [''];
  const pathTo = (index: number, lastKey?: string): string => {
    const steps = lastKey === undefined ? [] : [lastKey];
    for (let at = index; at > 0; at = parents[at]!) steps.push(keys[at]!);
    return steps.length === 0
      ? '/'
      : steps
          .reverse()
          .map((key) => `/${key.length > 40 ? `${key.slice(0, 40)}…` : key}`)
          .join('');
  };
  for (let index = 0; index < values.length; index++) {
    const current = values[index];
    if (typeof current === 'string') {
      if (current.includes('\0')) return pathTo(index);
    } else if (Buffer.isBuffer(current)) {
      if (current.includes(0)) return pathTo(index);
    } else if (typeof current === 'object' && current !== null) {
      for (const key of Object.keys(current)) {
        if (key.includes('\0')) return pathTo(index, key);
        values.push((current as Record<string, unknown>)[key]);
        parents.push(index);
        keys.push(key);
      }
    }
  }
  return undefined;
}

/** A 400 for a NUL character: PostgreSQL cannot store one in text, and no field needs it. */
export function nulCharacterError(location: string, path: string): ApiError {
  return new ApiError(
    400,
    `The ${location === 'querystring' ? 'query string' : location} contains a NUL character (at ${path.replace(/\0/g, '\\0')})`,
    { details: { location } },
  );
}

/** The largest request line and headers served. */
export const HEAD_LIMIT = 16 * 1024;
/** Node's own limit, beyond which it refuses a request itself (src/http/raw-errors.ts). */
export const NODE_HEAD_LIMIT = 64 * 1024;

/** Node keeps only about the first thousand headers and drops the rest: so many is over the limit too. */
const MAX_HEADERS = 1_000;

function headSize(request: FastifyRequest): number {
  const { rawHeaders } = request.raw;
  if (rawHeaders.length >= 2 * MAX_HEADERS) return Infinity;
  let size = request.raw.method!.length + request.raw.url!.length + 12;
  for (const item of rawHeaders) size += item.length + 2;
  return size;
}

/** Methods whose requests Fastify never parses a body for, so nothing is left to check after preParsing. */
const BODYLESS = new Set(['GET', 'HEAD']);

/**
 * One place that keeps hostile input away from every handler:
 * - a NUL character (raw or %00) in the path, the query or a parsed body (v1 routes parse their
 *   own JSON and check it with findNul; their raw bodies are checked for NUL bytes here);
 * - a query parameter given more than once (Fastify's parser makes it an array, which no
 *   handler expects): 400 naming it. No route takes a repeated parameter as a list;
 * - an HTTP/1.1 request without Host, or a request line and headers over 16 KiB (431).
 * Added to each route registered afterwards as it is registered, after every onRequest hook (a rate
 * limit counts hostile requests too) and before any route schema sees the input: on a route that
 * takes a body, as its first preValidation hook (the body is parsed then); on a GET or HEAD route,
 * as its last preParsing hook, so that a v4 GET, whose bearer check already runs one in preParsing,
 * runs no preValidation hooks at all (each hook phase with hooks costs a request a turn of Fastify's
 * hook runner). Returns the preValidation hook for the 404 handler, which no onRoute hook sees.
 */
export function installInputGuard(app: FastifyInstance): preValidationHookHandler {
  app.addHook('onRoute', (route) => {
    if ([route.method].flat().every((method) => BODYLESS.has(method.toUpperCase()))) {
      route.preParsing = withHook(route.preParsing, guardBeforeParsing, 'last');
    } else {
      route.preValidation = withHook(route.preValidation, guard, 'first');
    }
  });
  return guard;
}

// Callback hooks, not async ones: they run on every request and almost never refuse one.
const guard: preValidationHookHandler = (request, _reply, done) => done(refusalOrError(request));
const guardBeforeParsing: preParsingHookHandler = (request, _reply, payload, done) =>
  done(refusalOrError(request) ?? null, payload);

function refusalOrError(request: FastifyRequest): Error | undefined {
  try {
    return refusalOf(request);
  } catch (error) {
    return error as Error;
  }
}

/**
 * A route's hooks of one phase with `hook` added, in a new array: a GET route's automatic HEAD
 * route is made from a copy of its options taken before the onRoute hooks, so an array that was
 * given to the route is shared by both and must not change.
 */
function withHook<T>(hooks: T | T[] | undefined, hook: T, where: 'first' | 'last'): T[] {
  const list = hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
  if (list.includes(hook)) return list;
  return where === 'first' ? [hook, ...list] : [...list, hook];
}

function refusalOf(request: FastifyRequest): ApiError | undefined {
  if (headSize(request) > HEAD_LIMIT)
    return new ApiError(431, `The request line and headers are larger than the ${HEAD_LIMIT / 1024} KiB limit`);
  // HTTP/1.1 requires Host (RFC 9112 §3.2); Node's own refusal (turned off in app.ts) is an empty 400.
  // Checked here rather than in onRequest so that the pages' cookie parsing has run for their error page.
  if (request.headers.host === undefined && request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor >= 1) {
    return new ApiError(400, 'The Host header is required', { details: { location: 'headers' } });
  }
  const query = request.query as Record<string, unknown> | undefined;
  if (query && typeof query === 'object') {
    for (const name in query) {
      if (Object.hasOwn(query, name) && Array.isArray(query[name])) {
        return new ApiError(400, `The query parameter ${clip(name)} is given more than once`, {
          details: { location: 'querystring', parameter: clip(name) },
        });
      }
    }
    const at = nulIn(query);
    if (at) return nulCharacterError('querystring', at);
  }
  const paramsAt = nulIn(request.params);
  if (paramsAt) return nulCharacterError('path', paramsAt);
  const bodyAt = nulIn(request.body);
  if (bodyAt) return nulCharacterError('body', bodyAt);
  return undefined;
}

/**
 * findNul, answered without allocating for what most requests carry (nothing, or an object of
 * strings such as the path parameters) when it holds no NUL; anything else goes to findNul.
 */
function nulIn(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'object' && !Buffer.isBuffer(value) && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    let flat = true;
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue;
      const item = object[key];
      if (typeof item !== 'string' || key.includes('\0') || item.includes('\0')) {
        flat = false;
        break;
      }
    }
    if (flat) return undefined;
  }
  return findNul(value);
}

function clip(text: string): string {
  const safe = text.replace(/\0/g, '\\0');
  return safe.length > 100 ? `${safe.slice(0, 100)}…` : safe;
}
