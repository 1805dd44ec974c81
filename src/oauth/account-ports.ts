import type { Kysely } from 'kysely';
import type { ApplicationSessions } from '../accounts/application-sessions.ts';
import type { AccountEraser } from '../accounts/erasure.ts';
import type { Schema } from '../db/schema.ts';
import { listOwnedApplications } from './developer-applications.ts';
import { endAllSessionsOfUser, endSessionOfUser } from './sessions.ts';
import { listUserSessions } from './user-sessions.ts';

// What oauth/ provides to accounts/ (src/app.ts hands it over): accounts/ may not import oauth/
// (docs/decisions/0087), so it declares these interfaces and this module fills them.

/** Ends every session, code and device authorization of the user: nothing of it can become a token any more. */
async function endEverythingOfUser(db: Kysely<Schema>, userId: string): Promise<number> {
  const ended = await endAllSessionsOfUser(db, userId);
  await db.deleteFrom('authorization_codes').where('user_id', '=', userId).execute();
  await db.deleteFrom('device_authorizations').where('user_id', '=', userId).execute();
  return ended;
}

export const applicationSessions: ApplicationSessions = {
  endOneOfUser: endSessionOfUser,
  endAllOfUser: endAllSessionsOfUser,
  endEverythingOfUser,
  listOfUser: (db, userId) => listUserSessions(db, userId),
  async applicationsOfUser(db, userId) {
    return (await listOwnedApplications(db, userId)).map((app) => ({
      clientId: app.clientId,
      name: app.name,
      redirectUris: app.redirectUris,
      scopes: app.scopes,
      confidential: app.confidential,
      website: app.website,
      createdAt: app.createdAt,
      suspended: app.suspendedAt !== null,
    }));
  },
};

/**
 * oauth/'s part of erasing an account: the user's sessions, codes and device authorizations, then
 * the applications it registered with everything issued to them (their sessions of other people too).
 */
export const OAUTH_ERASER: AccountEraser = {
  feature: 'oauth',
  async erase(db, userId) {
    await endEverythingOfUser(db, userId);
    const owned = db.selectFrom('applications').select('client_id').where('owner_id', '=', userId);
    await db.deleteFrom('sessions').where('client_id', 'in', owned).execute();
    await db.deleteFrom('authorization_codes').where('client_id', 'in', owned).execute();
    await db.deleteFrom('device_authorizations').where('client_id', 'in', owned).execute();
    await db.deleteFrom('interactions').where('client_id', 'in', owned).execute();
    await db.deleteFrom('applications').where('owner_id', '=', userId).execute();
  },
};
