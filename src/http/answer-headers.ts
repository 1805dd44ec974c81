import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type CompressionOptions, compressor } from './compression.ts';
import { lingerOverUnreadBody } from './unread-body.ts';

declare module 'fastify' {
  interface RouteShorthandOptions {
    /** false: the route negotiates and codes its answers itself (precompressed bodies). */
    compress?: false;
  }
  interface FastifyContextConfig {
    /** Copied from the route option `compress`, where a request can read it. */
    compress?: false;
  }
}

/**
 * The one onSend hook of every answer: the headers every answer carries (the request id,
 * `nosniff`, `no-store` for an answer to a request with credentials, `Connection: close` while
 * the server shuts down or when the body is still unread (unread-body.ts), then compression (compression.ts). One hook, not two: each onSend hook
 * of a route costs every request a turn of Fastify's hook runner.
 */
async function answerHeaders(app: FastifyInstance, options: CompressionOptions): Promise<void> {
  const compress = compressor(options);
  // A request in flight when close() starts ends its connection with its answer: otherwise a
  // keep-alive client holds the server (and a graceful shutdown) open until its idle timeout.
  // (Node does not add `Connection: close` itself, so it is decided as the answer is sent.)
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // compression.ts reads the opt-out from the route's config, which a request can reach.
  app.addHook('onRoute', (route) => {
    if (route.compress === false) route.config = { ...route.config, compress: false };
  });
  app.addHook(
    'onSend',
    (
      request: FastifyRequest,
      reply: FastifyReply,
      payload: unknown,
      done: (error: Error | null, payload?: unknown) => void,
    ) => {
      reply.header('x-request-id', request.id);
      reply.header('x-content-type-options', 'nosniff');
      // An answer to a request carrying credentials (a v4 token, a v1 signature) is the caller's own.
      if (request.headers.authorization !== undefined || request.headers['x-service-token'] !== undefined)
        reply.header('cache-control', 'no-store');
      if (closing) reply.header('connection', 'close');
      // An answer before the body was read (a 413 from Content-Length, a refused token) must not be lost to a reset.
      if (!request.raw.complete) lingerOverUnreadBody(request.raw, (name, value) => reply.header(name, value));
      compress(request, reply, payload, done);
    },
  );
}

export const answerHeadersPlugin = fp(answerHeaders, { name: 'answer-headers', fastify: '5.x' });
