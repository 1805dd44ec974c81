import type { FastifyInstance, FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { badRequest } from '../http/errors.ts';
import { findNul, nulCharacterError } from '../http/input-guard.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes exactly as sent: v1 signatures cover them. */
    rawBody?: Buffer;
  }
}

/** In the v1 scope every body is kept as raw bytes; routes decode what they accept. */
export function keepRawBodies(scope: FastifyInstance): void {
  scope.decorateRequest('rawBody', undefined);
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    request.rawBody = body as Buffer;
    done(null, body);
  });
}

function mediaType(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

export function readJsonBody(request: FastifyRequest): unknown {
  if (mediaType(request) !== 'application/json') throw badRequest('Content-Type must be application/json');
  const text = request.rawBody?.toString('utf8') ?? '';
  if (text.trim() === '') throw badRequest('The request body is empty; a JSON value is required');
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    throw badRequest(`Malformed JSON body: ${(error as Error).message}`);
  }
  // A \u0000 escape parses to a NUL character, which PostgreSQL cannot store in text.
  const nulAt = findNul(value);
  if (nulAt) throw nulCharacterError('body', nulAt);
  return value;
}

/** A DELETE body: comma-separated identifiers as text/plain. */
export function readTextList(request: FastifyRequest): string[] {
  if (mediaType(request) !== 'text/plain')
    throw badRequest('Content-Type must be text/plain with comma-separated identifiers');
  return splitList(request.rawBody?.toString('utf8') ?? '');
}

/** Splits a comma-separated list, trimming and dropping empty items and repeats. */
export function splitList(text: string): string[] {
  if (!text.includes(',')) {
    const item = text.trim();
    return item === '' ? [] : [item];
  }
  return [
    ...new Set(
      text
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    ),
  ];
}
