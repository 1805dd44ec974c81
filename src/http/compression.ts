import { availableParallelism } from 'node:os';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import zlib from 'node:zlib';
import { negotiate } from '@fastify/accept-negotiator';
import type { FastifyReply, FastifyRequest } from 'fastify';
import mimeDb from 'mime-db';

/**
 * Answer compression (DESIGN: answers over 1 KiB in br or gzip when the client accepts them),
 * as @fastify/compress 9 did it for this service, without its per-route onRequest hook and with
 * the size check before the Accept-Encoding negotiation:
 * - compressible types only: text, JSON, XML, octet-stream, and what mime-db calls compressible;
 * - buffered answers under `threshold` bytes and answers already coded are sent as they are, as
 *   are partial content (206, Content-Range) and requests with `x-no-compression`;
 * - Accept-Encoding is negotiated by @fastify/accept-negotiator, `*` and `x-gzip` read as gzip;
 * - a compressed answer says `Vary: accept-encoding` and `Content-Encoding`; a buffered one keeps
 *   an exact Content-Length, a stream (the API docs' files) is compressed as it flows.
 * Request bodies are never inflated: the body limits stay limits on what arrives.
 */
export interface CompressionOptions {
  /** Smallest buffered answer compressed, in bytes. */
  threshold: number;
  /** Codings offered, the preferred first. */
  encodings: readonly Coding[];
  brotliQuality: number;
}

export type Coding = 'br' | 'gzip';

/** What the onSend hook does with a payload: hand it on unchanged, or a coded one in its place. */
export type Compressor = (
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (error: Error | null, payload?: unknown) => void,
) => void;

const compressibleTypes =
  /^text\/(?!event-stream)|(?:\+|\/)json(?:;|$)|(?:\+|\/)text(?:;|$)|(?:\+|\/)xml(?:;|$)|octet-stream(?:;|$)/u;

function isCompressibleType(type: string): boolean {
  if (compressibleTypes.test(type)) return true;
  return mimeDb[type.split(';', 1)[0]!.trim().toLowerCase()]?.compressible === true;
}

/**
 * Up to this size a buffered answer is compressed on the request thread; larger ones go to the
 * thread pool, which pays off only with cores to spare (the rule @fastify/compress 9 uses:
 * 64 KiB on one core, divided by 8 for each further core up to four, at least 4 KiB).
 */
function syncLimit(): number {
  const cores = Math.min(availableParallelism(), 4);
  return Math.min(Math.max(65_536 >> (3 * (cores - 1)), 4096), 65_536);
}

/** Remembers a few answers of `compute` by key (clients send a handful of distinct values). */
function remembering<T>(compute: (key: string) => T, size = 64): (key: string) => T {
  const answers = new Map<string, T>();
  return (key) => {
    let answer = answers.get(key);
    if (answer === undefined && !answers.has(key)) {
      answer = compute(key);
      if (answers.size >= size) answers.clear();
      answers.set(key, answer);
    }
    return answer as T;
  };
}

function addVary(reply: FastifyReply): void {
  const vary = reply.getHeader('vary');
  if (vary === undefined) {
    reply.header('vary', 'accept-encoding');
    return;
  }
  const values = (Array.isArray(vary) ? vary : [String(vary)]).map(String);
  if (!values.some((value) => value.includes('accept-encoding')))
    reply.header('vary', [...values, 'accept-encoding'].join(', '));
}

export function compressor(options: CompressionOptions): Compressor {
  const { threshold, encodings } = options;
  const brotli = { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: options.brotliQuality } };
  const maxSync = syncLimit();
  const codingFor = remembering((header: string): Coding | undefined => {
    const coding = negotiate(header.toLowerCase().replace(/\*|x-gzip/gu, 'gzip'), encodings as Coding[]);
    return coding === 'br' || coding === 'gzip' ? coding : undefined;
  });
  const compressible = remembering(isCompressibleType);
  const compressSync = (coding: Coding, body: Buffer) =>
    coding === 'br' ? zlib.brotliCompressSync(body, brotli) : zlib.gzipSync(body);
  const compressAsync = (coding: Coding, body: Buffer, callback: (error: Error | null, result: Buffer) => void) =>
    coding === 'br' ? zlib.brotliCompress(body, brotli, callback) : zlib.gzip(body, callback);

  return (request, reply, payload, done) => {
    const accepted = request.headers['accept-encoding'];
    if (payload === null || payload === undefined || accepted === undefined) return done(null, payload);
    const isStream = typeof (payload as Readable).pipe === 'function';
    const isBuffered = typeof payload === 'string' || Buffer.isBuffer(payload);
    // A HEAD of a GET route answers the uncoded GET's headers (Fastify's HEAD routes drop a
    // buffered body in an onSend hook of their own, which ran before the coding did; the streams
    // of the docs' files, HEAD routes of their own, kept theirs).
    if (!isStream && (!isBuffered || request.method === 'HEAD')) return done(null, payload);
    const size = isBuffered ? Buffer.byteLength(payload as string | Buffer) : Infinity;
    if (size < threshold) return done(null, payload);
    const current = reply.getHeader('content-encoding');
    if (current !== undefined && current !== 'identity') return done(null, payload);
    if (
      request.headers['x-no-compression'] !== undefined ||
      reply.statusCode === 206 ||
      reply.getHeader('content-range') !== undefined
    )
      return done(null, payload);
    if (!compressible(String(reply.getHeader('content-type') ?? 'application/json'))) return done(null, payload);
    const coding = codingFor(accepted);
    if (coding === undefined) return done(null, payload);
    // Routes whose bodies come precompressed negotiate themselves (the engram lists); answers of
    // no route (404) are sent as they are.
    if (request.is404 || request.routeOptions.config.compress === false) return done(null, payload);

    if (isStream) {
      addVary(reply);
      reply.header('content-encoding', coding);
      reply.removeHeader('content-length');
      const coder = coding === 'br' ? zlib.createBrotliCompress(brotli) : zlib.createGzip();
      pipeline(payload as Readable, coder, (error) => {
        // A client that goes away mid-answer is no error of ours.
        if (error && (error as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') reply.log.error(error);
      });
      return done(null, coder);
    }
    const body = typeof payload === 'string' ? Buffer.from(payload) : (payload as Buffer);
    const send = (error: Error | null, coded: Buffer) => {
      if (error) return done(error);
      addVary(reply);
      reply.header('content-encoding', coding);
      reply.header('content-length', coded.length);
      done(null, coded);
    };
    if (size <= maxSync) {
      let coded: Buffer;
      try {
        coded = compressSync(coding, body);
      } catch (error) {
        return done(error as Error);
      }
      return send(null, coded);
    }
    compressAsync(coding, body, send);
  };
}
