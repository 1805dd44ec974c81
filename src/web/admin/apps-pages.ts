import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { usernamesOf } from '../../accounts/account-detail.ts';
import { isUuid, normalizeUuid } from '../../http/uuid.ts';
import { findApplication } from '../../oauth/clients.ts';
import { deleteApplicationAsOperator, listEveryApplication } from '../../oauth/operator-applications.ts';
import { restoreApplication, type SuspensionContext, suspendApplication } from '../../oauth/suspension.ts';
import { type Confirmation, isConfirmed, sendConfirmation } from '../confirmation.ts';
import { field, sendMessage, sendPage } from '../pages.ts';
import { onlyOnce } from '../single-use-submit.ts';
import { operatorOf, requireFreshOperatorSignIn } from './operator-gate.ts';

const APPS = '/admin/apps';

/** The list's buttons (DESIGN: value = the client id), each its notice once done and when done already. */
const ACTIONS = {
  suspend_app: {
    done: 'The application is suspended: its sessions ended, and it can get no token until restored.',
    unchanged: 'The application was suspended already.',
  },
  restore_app: {
    done: 'The application is restored: it can sign people in again (its ended sessions stay ended).',
    unchanged: 'The application was not suspended.',
  },
  delete_app: { done: 'The application is deleted: every session of it ended.', unchanged: '' },
} as const;
type Action = keyof typeof ACTIONS;
const ACTION_NAMES = Object.keys(ACTIONS) as Action[];

const formatTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

const deletePath = (clientId: string) => `${APPS}/${encodeURIComponent(clientId)}/delete`;

/**
 * The console's applications (DESIGN "Operating a public service"): every application with its
 * owner, created, kind and sessions, and the buttons to suspend, restore or delete it. The work
 * and the events are src/oauth/suspension.ts's and operator-applications.ts's.
 */
export async function adminAppsPages(admin: FastifyInstance): Promise<void> {
  const db = () => admin.database.db;
  const csrf = { preHandler: admin.csrfProtection };

  const suspensionContext = (request: FastifyRequest): SuspensionContext => ({
    db: db(),
    origin: { ip: request.ip, log: request.log },
    via: 'web',
    operatorId: operatorOf(request).account.userId,
  });

  const noSuchApplication = (reply: FastifyReply) =>
    sendMessage(
      reply,
      'No such application',
      'There is no application with this client id: it may have been deleted.',
      404,
      [{ href: APPS, text: 'Go to the applications' }],
    );

  const notices: Record<string, string> = Object.fromEntries(
    Object.entries(ACTIONS).flatMap(([action, said]) => [
      [action, said.done],
      [`${action}_unchanged`, said.unchanged],
    ]),
  );

  admin.get<{ Querystring: { done?: unknown } }>(APPS, async (request, reply) => {
    const every = await listEveryApplication(db());
    const owners = await usernamesOf(
      db(),
      every.flatMap(({ application }) => (application.ownerId ? [application.ownerId] : [])),
    );
    const done = request.query.done;
    return sendPage(reply, 'admin/apps', {
      username: operatorOf(request).account.username,
      section: 'apps',
      notice: typeof done === 'string' && Object.hasOwn(notices, done) ? notices[done] : undefined,
      apps: every.map(({ application, sessions }) => ({
        clientId: application.clientId,
        name: application.name,
        owner:
          application.ownerId === null
            ? undefined
            : { userId: application.ownerId, name: owners.get(application.ownerId) ?? application.ownerId },
        created: formatTime(application.createdAt),
        createdIso: new Date(application.createdAt).toISOString(),
        kind: application.confidential ? 'Confidential' : 'Public',
        sessions,
        suspended: application.suspendedAt !== null,
      })),
    });
  });

  const confirmationOf = (app: { clientId: string; name: string }): Confirmation => ({
    title: `Delete ${app.name}`,
    consequence:
      'The application is deleted and every sign-in to it ends at once: people using it are signed out, and its client id never works again. This cannot be undone.',
    action: APPS,
    name: 'delete_app',
    value: app.clientId,
    button: 'Delete the application',
    cancel: { href: APPS, text: 'Cancel' },
  });

  const findApp = (clientId: string) => findApplication(db(), clientId);

  // The deletion's confirmation as a link: where the re-authentication page comes back to.
  admin.get<{ Params: { clientId: string } }>(`${APPS}/:clientId/delete`, async (request, reply) => {
    const clientId = request.params.clientId;
    const app = isUuid(clientId) ? await findApp(normalizeUuid(clientId)) : undefined;
    if (!app) return noSuchApplication(reply);
    if (!(await requireFreshOperatorSignIn(request, reply, deletePath(app.clientId)))) return reply;
    return sendConfirmation(reply, confirmationOf(app));
  });

  admin.post<{ Body: Record<string, unknown> | undefined }>(APPS, csrf, async (request, reply) => {
    const pressed = ACTION_NAMES.filter((name) => request.body !== undefined && Object.hasOwn(request.body, name));
    if (pressed.length !== 1)
      return sendMessage(reply, 'The request is not right', 'Press one of the application’s buttons.', 400, [
        { href: APPS, text: 'Go to the applications' },
      ]);
    const action = pressed[0]!;
    const value = field(request.body, action);
    if (!isUuid(value)) return noSuchApplication(reply);
    const clientId = normalizeUuid(value);
    const returnTo = action === 'delete_app' ? deletePath(clientId) : APPS;
    if (!(await requireFreshOperatorSignIn(request, reply, returnTo))) return reply;
    if (action === 'delete_app' && !isConfirmed(request.body)) {
      const app = await findApp(clientId);
      if (!app) return noSuchApplication(reply);
      return sendConfirmation(reply, confirmationOf(app));
    }
    if (await onlyOnce(request, reply)) return reply;
    const ctx = suspensionContext(request);
    const outcome =
      action === 'suspend_app'
        ? await suspendApplication(ctx, clientId)
        : action === 'restore_app'
          ? await restoreApplication(ctx, clientId)
          : await deleteApplicationAsOperator(ctx, clientId);
    if (outcome === 'unknown') return noSuchApplication(reply);
    const notice = outcome === 'done' ? action : `${action}_unchanged`;
    return reply.code(303).header('location', `${APPS}?done=${notice}`).header('cache-control', 'no-store').send();
  });
}
