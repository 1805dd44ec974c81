import type { FastifyInstance } from 'fastify';
import { limitRequests } from '../http/rate-limit.ts';
import { keepRawBodies } from './body.ts';
import { documentRoutes } from './documents/routes.ts';
import { engramRoutes } from './engrams/routes.ts';
import { modRoutes } from './mods/routes.ts';
import { userRoutes } from './users.ts';

/** The legacy v1 API, mounted under /v1: signed requests, raw bodies, a per-IP rate limit. */
export async function legacyApi(v1: FastifyInstance): Promise<void> {
  keepRawBodies(v1);
  v1.decorateRequest('signedBy', undefined); // set by requireSignature
  await limitRequests(v1, { perMinute: v1.config.rateLimitV1, name: 'v1' });
  await v1.register(userRoutes);
  await v1.register(documentRoutes);
  await v1.register(modRoutes);
  await v1.register(engramRoutes);
}
