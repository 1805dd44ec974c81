import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';

// The listing of a user's sessions (the account page); ending them is the session model's (sessions.ts).

/** A session as its user sees it on the account page. */
export interface UserSession {
  sessionId: string;
  clientId: string;
  applicationName: string;
  scope: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** The user's sessions that can still be refreshed, most recently used first. */
export async function listUserSessions(db: Kysely<Schema>, userId: string, now = Date.now()): Promise<UserSession[]> {
  const rows = await db
    .selectFrom('sessions')
    .innerJoin('applications', 'applications.client_id', 'sessions.client_id')
    .select([
      'sessions.session_id',
      'sessions.client_id',
      'applications.name',
      'sessions.scope',
      'sessions.created_at',
      'sessions.last_used_at',
    ])
    .where('sessions.user_id', '=', userId)
    .where('sessions.refresh_expires_at', '>', now)
    .orderBy('sessions.created_at', 'desc')
    .orderBy('sessions.session_id')
    .execute();
  return rows.map((row) => ({
    sessionId: row.session_id,
    clientId: row.client_id,
    applicationName: row.name,
    scope: row.scope,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  }));
}
