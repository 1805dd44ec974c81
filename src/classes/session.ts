import { endApplicationSession } from '../accounts/account-service.ts';
import { defineClass, type WriteContext } from '../rest/definition.ts';
import { timestampProperty, uuidProperty } from '../rest/properties.ts';
import { SessionProperties as schemas } from './schemas.ts';

/**
 * Ends the sessions as the account page does (accounts/, through the port oauth/ provides), so
 * each records its session_ended event; one ended meanwhile records nothing. The calling
 * application is not told of its own session's end (back-channel logout); any other is.
 */
async function endSessions({ db, caller, request }: WriteContext, sessionIds: readonly string[]): Promise<void> {
  const context = {
    db,
    ip: request.ip,
    log: request.log,
    page: 'api',
    applicationSessions: request.server.applicationSessions,
  };
  for (const sessionId of sessionIds)
    await endApplicationSession(context, { userId: caller.userId }, sessionId, caller.clientId);
}

/**
 * The caller's signed-in sessions (one per sign-in to an application). Never shows a token.
 * Deleting one signs it out; DELETE /v4/session ends the session of the token in use.
 */
export const Session = defineClass({
  name: 'Session',
  path: '/sessions',
  table: 'sessions',
  id: { property: 'sessionId', column: 'session_id' },
  properties: {
    applicationId: uuidProperty('client_id', { schema: schemas.applicationId }),
    scopes: { column: 'scope', schema: schemas.scopes, toJson: (scope: string) => scope.split(' ') },
    createdAt: timestampProperty('created_at', { schema: schemas.createdAt }),
    accessTokenExpiration: timestampProperty('access_expires_at', { schema: schemas.accessTokenExpiration }),
    refreshTokenExpiration: timestampProperty('refresh_expires_at', { schema: schemas.refreshTokenExpiration }),
  },
  sortable: ['createdAt', 'accessTokenExpiration', 'refreshTokenExpiration'],
  defaultSort: 'createdAt',
  filters: { applicationId: 'exact' },
  visible: (eb, caller) => eb.and([eb('user_id', '=', caller.userId), eb('refresh_expires_at', '>', caller.now)]),
  operations: { create: false, update: false, delete: true },
  aliases: [{ path: '/session', id: (caller) => caller.sessionId, methods: ['GET', 'DELETE'] }],
  writes: { delete: endSessions },
});
