import type { FastifyInstance } from 'fastify';
import { renderPage } from './render.ts';

/** GET /: what a person opening the service's address sees, with the ways in. */
export async function homePage(app: FastifyInstance): Promise<void> {
  const page = renderPage('home', { signUpOpen: app.config.signUp === 'open' });
  app.get('/', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'public, max-age=300').send(page),
  );
}
