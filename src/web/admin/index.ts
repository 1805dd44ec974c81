import type { FastifyInstance } from 'fastify';
import { sendNotFoundPage } from '../not-found-pages.ts';
import { sendPage } from '../pages.ts';
import { adminAppsPages } from './apps-pages.ts';
import { eventsPages } from './events-pages.ts';
import { invitationsPages } from './invitations-pages.ts';
import { operatorGate, operatorOf } from './operator-gate.ts';
import { adminUsersPages } from './users-pages.ts';

/**
 * The operator console at /admin (DESIGN "Operating a public service"). Every route registered
 * here sits behind the operator gate, which runs first (onRequest, before the body is read):
 * each part of the console is a plugin registered below, whose pages parse forms and render while
 * src/accounts/lifecycle.ts and the other services do the work and record the events.
 */
export async function adminConsole(web: FastifyInstance): Promise<void> {
  await web.register(async (admin) => {
    admin.decorateRequest('operator', null);
    admin.addHook('onRequest', operatorGate);

    admin.get('/admin', async (request, reply) =>
      sendPage(reply, 'admin/home', { username: operatorOf(request).account.username, section: 'home' }),
    );

    await admin.register(adminUsersPages);
    await admin.register(adminAppsPages);
    await admin.register(eventsPages);
    await admin.register(invitationsPages);

    // Unknown console addresses: operators get the 404 page too (others already got it from the gate).
    admin.get('/admin/*', { config: { unknownPaths: true } }, async (_request, reply) => sendNotFoundPage(reply));
    admin.post('/admin/*', { config: { unknownPaths: true } }, async (_request, reply) => sendNotFoundPage(reply));
  });
}
