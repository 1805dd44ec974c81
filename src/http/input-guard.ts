import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './error-handler.ts';
import { ApiError } from './errors.ts';

/**
 * Where a NUL character hides in a parsed value (a string, or the keys and values of nested
 * objects and arrays), as a JSON-pointer-like path; undefined when there is none. Iterative, so a
 * deeply nested body cannot overflow the stack.
 */
export function findNul(value: unknown): string | undefined {
  const pending: Array<[unknown, string]> = [[value, '']];
  while (pending.length > 0) {
    const [current, path] = pending.pop()!;
    if (typeof current === 'string') {
      if (current.includes('\0')) return path || '/';
    } else if (Buffer.isBuffer(current)) {
      if (current.includes(0)) return path || '/';
    } else if (typeof current === 'object' && current !== null) {
      for (const [key, item] of Object.entries(current)) {
        const at = `${path}/${key.length > 40 ? `${key.slice(0, 40)}…` : key}`;
        if (key.includes('\0')) return at;
        pending.push([item, at]);
      }
    }
  }
  return undefined;
}

/** A 400 for a NUL character: PostgreSQL cannot store one in text, and no field needs it. */
export function nulCharacterError(location: string, path: string): ApiError {
  return new ApiError(400, `The ${location === 'querystring' ? 'query string' : location} contains a NUL character (at ${path.replace(/\0/g, '\\0')})`, { details: { location } });
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

/**
 * One place that keeps hostile input away from every handler:
 * - a NUL character (raw or %00) in the path, the query or a parsed body (v1 routes parse their
 *   own JSON and check it with findNul; their raw bodies are checked for NUL bytes here);
 * - a query parameter given more than once (Fastify's parser makes it an array, which no
 *   handler expects): 400 naming it. No route takes a repeated parameter as a list;
 * - an HTTP/1.1 request without Host, or a request line and headers over 16 KiB (431).
 * Runs as the first preValidation hook, so route schemas never see such input either.
 */
export function installInputGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request: FastifyRequest) => {
    if (headSize(request) > HEAD_LIMIT) throw new ApiError(431, `The request line and headers are larger than the ${HEAD_LIMIT / 1024} KiB limit`);
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node's own refusal (turned off in app.ts) is an empty 400.
    // Checked here rather than in onRequest so that the pages' cookie parsing has run for their error page.
    if (request.headers.host === undefined && request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor >= 1) {
      throw new ApiError(400, 'The Host header is required', { details: { location: 'headers' } });
    }
    const query = request.query as Record<string, unknown> | undefined;
    if (query && typeof query === 'object') {
      for (const [name, value] of Object.entries(query)) {
        if (Array.isArray(value)) {
          throw new ApiError(400, `The query parameter ${clip(name)} is given more than once`, { details: { location: 'querystring', parameter: clip(name) } });
        }
      }
      const at = findNul(query);
      if (at) throw nulCharacterError('querystring', at);
    }
    const paramsAt = findNul(request.params);
    if (paramsAt) throw nulCharacterError('path', paramsAt);
    const bodyAt = findNul(request.body);
    if (bodyAt) throw nulCharacterError('body', bodyAt);
  });
}

function clip(text: string): string {
  const safe = text.replace(/\0/g, '\\0');
  return safe.length > 100 ? `${safe.slice(0, 100)}…` : safe;
}
