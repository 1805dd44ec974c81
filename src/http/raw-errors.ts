import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { ApiError } from './errors.ts';
import { HEAD_LIMIT } from './input-guard.ts';
import { closeLingering, isLingering } from './unread-body.ts';

/*
 * Errors that Node raises before Fastify sees a request (a malformed request line, headers over
 * the size limit, an unknown Expect, CONNECT) answered in the error body shape, with X-Request-Id
 * and nosniff like every other answer, and without a body for HEAD.
 */

function headerLines(requestId: string, error: ApiError, body: string): string {
  return [
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'X-Content-Type-Options: nosniff',
    'Cache-Control: no-store',
    'Connection: close',
    ...Object.entries(error.headers).map(([name, value]) => `${name}: ${value}`),
  ].join('\r\n');
}

function clientErrorFor(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(431, `The request line and headers are larger than the ${HEAD_LIMIT / 1024} KiB limit`);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(408, 'The request was not received in time');
    case 'HPE_INVALID_METHOD':
      return new ApiError(400, 'The request method is not valid');
    case 'HPE_INVALID_URL':
      return new ApiError(400, 'The request target is not a valid URL');
    case 'HPE_INVALID_VERSION':
      return new ApiError(400, 'The HTTP version is not valid');
    case 'HPE_INVALID_HEADER_TOKEN':
    case 'HPE_INVALID_HEADER_VALUE':
      return new ApiError(400, 'A request header is not valid');
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CHUNK_SIZE':
      return new ApiError(400, 'The request body framing (Content-Length or Transfer-Encoding) is not valid');
    default:
      return new ApiError(400, 'The request is not valid HTTP');
  }
}

/** Fastify's clientErrorHandler: Node could not parse the request. */
export function answerClientError(
  this: FastifyInstance,
  error: Error & { code?: string; rawPacket?: unknown },
  socket: Socket,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // Bytes after a request that is still being answered: that answer goes out, then the
  // connection closes; writing ours now would answer the earlier request with this error.
  // (When the error is in that request's own body, it is answered below, as Node does.)
  const inFlight = (
    socket as Socket & { _httpMessage?: { headersSent: boolean; shouldKeepAlive: boolean; req?: IncomingMessage } }
  )._httpMessage;
  if (inFlight && (inFlight.headersSent || inFlight.req?.complete !== false)) {
    if (inFlight.headersSent) socket.destroySoon();
    else inFlight.shouldKeepAlive = false;
    return;
  }
  if (isLingering(socket)) return; // more of what was already refused (or answered before its body)
  const apiError = clientErrorFor(error.code);
  const requestId = randomUUID();
  this.log.info({ reqId: requestId, status: apiError.statusCode, parseError: error.code }, 'unparseable request');
  if (socket.writable) {
    const body = JSON.stringify(apiError.toBody());
    const status = `HTTP/1.1 ${apiError.statusCode} ${STATUS_CODES[apiError.statusCode]}`;
    const sent = mayHaveBody(error) ? body : '';
    socket.write(`${status}\r\n${headerLines(requestId, apiError, sent)}\r\n\r\n${sent}`);
    // What the client is still sending is read and dropped for a while (unread-body.ts): closing
    // with unread data makes the kernel reset the connection, and the client may lose our answer.
    closeLingering(socket);
    return;
  }
  socket.destroy();
}

/**
 * Whether the refused request was not a HEAD, as far as can be told: Node hands over only the
 * chunk it was parsing. When that chunk starts with a method, it says; a head over Node's 64 KiB
 * limit overflows in a later chunk, whose method is unknown, and then the answer has no body
 * (Content-Length: 0), because a HEAD answer must never have one. (Heads from 16 to 64 KiB are
 * refused by input-guard.ts, where the method is known.)
 */
function mayHaveBody(error: { code?: string; rawPacket?: unknown }): boolean {
  const start = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.subarray(0, 24).toString('latin1') : '';
  const method = /^([A-Z]+)\s/.exec(start)?.[1];
  return method ? method !== 'HEAD' : error.code !== 'HPE_HEADER_OVERFLOW';
}

/** Node's connect event: this server is no proxy, so CONNECT is 405 (Node would drop the connection). */
export function answerConnect(_request: IncomingMessage, socket: Duplex): void {
  const apiError = new ApiError(405, 'CONNECT is not supported: this server is not a proxy');
  const body = JSON.stringify(apiError.toBody());
  socket.end(`HTTP/1.1 405 Method Not Allowed\r\n${headerLines(randomUUID(), apiError, body)}\r\n\r\n${body}`);
}

/** Node's checkExpectation event: an Expect header other than 100-continue is 417. */
export function answerUnknownExpectation(request: IncomingMessage, response: ServerResponse): void {
  const apiError = new ApiError(
    417,
    `Expect: ${String(request.headers.expect).slice(0, 100)} is not supported; only 100-continue is`,
  );
  const body = JSON.stringify(apiError.toBody());
  response.shouldKeepAlive = false;
  response.writeHead(417, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': randomUUID(),
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    connection: 'close',
  });
  response.end(request.method === 'HEAD' ? undefined : body);
}
