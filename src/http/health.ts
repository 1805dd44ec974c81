import type { FastifyInstance } from 'fastify';

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', { logLevel: 'warn' }, async (request, reply) => {
    try {
      await app.database.ping();
      return { status: 'ok' };
    } catch (error) {
      request.log.warn({ err: error }, 'health check: database unreachable');
      return reply
        .code(503)
        .send({ status: 'unavailable', code: 'serviceUnavailable', message: 'The database does not answer' });
    }
  });
}
