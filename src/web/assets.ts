import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

const stylesheet = readFileSync(new URL('./assets/site.css', import.meta.url));

/** The pages' only asset, served by the service itself so pages need nothing external. */
export async function assetRoutes(app: FastifyInstance): Promise<void> {
  app.get('/assets/site.css', { logLevel: 'warn' }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(stylesheet),
  );
}
