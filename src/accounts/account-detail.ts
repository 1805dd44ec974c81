import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { type AccountSummary, findAccountSummary } from './account-directory.ts';
import type { ApplicationSessions, ApplicationSessionView, OwnedApplicationView } from './application-sessions.ts';
import { countBackupCodes } from './backup-codes.ts';
import { listPasskeys } from './passkeys.ts';
import { listSecurityEvents, type SecurityEvent } from './security-events.ts';
import { type BrowserSignIn, listWebSessions } from './web-sessions.ts';

/** How many of an account's security events its operator page shows. */
export const DETAIL_EVENTS = 50;

/** Everything the operator's page of one account shows (DESIGN "Operating a public service"); no secret. */
export interface AccountDetail {
  account: AccountSummary;
  /** The last successful sign-in: when, and from which address. */
  lastSignIn: { at: number; ip: string | null } | undefined;
  passkeys: { name: string; createdAt: number; lastUsedAt: number | null }[];
  backupCodesLeft: number;
  browserSignIns: BrowserSignIn[];
  sessions: ApplicationSessionView[];
  applications: OwnedApplicationView[];
  events: SecurityEvent[];
}

/** The account's last sign_in_succeeded (security_events_user_created serves it). */
async function lastSignIn(db: Kysely<Schema>, userId: string): Promise<AccountDetail['lastSignIn']> {
  const row = await db
    .selectFrom('security_events')
    .select(['created_at', 'ip'])
    .where('user_id', '=', userId)
    .where('kind', '=', 'sign_in_succeeded')
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row && { at: Number(row.created_at), ip: row.ip };
}

/** The account `userId` names with everything about it an operator sees; undefined for a non-id or an unknown one. */
export async function describeAccount(
  db: Kysely<Schema>,
  ports: { applicationSessions: ApplicationSessions },
  userId: string,
): Promise<AccountDetail | undefined> {
  if (!isUuid(userId)) return undefined;
  const account = await findAccountSummary(db, normalizeUuid(userId));
  if (!account) return undefined;
  const id = account.userId;
  const [signIn, passkeys, backupCodesLeft, browserSignIns, sessions, applications, events] = await Promise.all([
    lastSignIn(db, id),
    listPasskeys(db, id),
    countBackupCodes(db, id),
    listWebSessions(db, id),
    ports.applicationSessions.listOfUser(db, id),
    ports.applicationSessions.applicationsOfUser(db, id),
    listSecurityEvents(db, { userId: id, limit: DETAIL_EVENTS }),
  ]);
  return {
    account,
    lastSignIn: signIn,
    passkeys: passkeys.map((passkey) => ({
      name: passkey.name,
      createdAt: passkey.createdAt,
      lastUsedAt: passkey.lastUsedAt,
    })),
    backupCodesLeft,
    browserSignIns,
    sessions,
    applications,
    events,
  };
}

/** The usernames of the accounts `userIds` name (those that exist), for lists that show an owner. */
export async function usernamesOf(db: Kysely<Schema>, userIds: readonly string[]): Promise<Map<string, string | null>> {
  const ids = [...new Set(userIds)];
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('users').select(['user_id', 'username']).where('user_id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.user_id, row.username]));
}
