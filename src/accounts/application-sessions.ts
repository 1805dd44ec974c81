import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';

/** A session of the user's, as the person's data export and the operator's view show it (no token). */
export interface ApplicationSessionView {
  sessionId: string;
  clientId: string;
  applicationName: string;
  scope: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** An application the user registered, as the export and the operator's view show it (no secret). */
export interface OwnedApplicationView {
  clientId: string;
  name: string;
  redirectUris: string[];
  scopes: string[];
  confidential: boolean;
  website: string | null;
  createdAt: number;
  suspended: boolean;
}

/**
 * What the account services need from the feature that owns applications and their sessions
 * (src/oauth/): a changed password, a reset, the account page or a lock end them; the export and
 * the operator's view list them. Declared here and provided by the wiring (src/app.ts), so
 * accounts/ never imports oauth/ (docs/decisions/0087). Each call runs on the caller's transaction;
 * the owner also tells each application whose session ended (back-channel logout) in it.
 */
export interface ApplicationSessions {
  /**
   * Ends one session of the user (never another user's); its application, or undefined when there
   * was none. The application is told (back-channel logout) unless it is `askedBy`, the one asking.
   */
  endOneOfUser(
    db: Kysely<Schema>,
    userId: string,
    sessionId: string,
    askedBy?: string,
  ): Promise<{ clientId: string } | undefined>;
  /** Ends every session of the user (each application is told); how many. */
  endAllOfUser(db: Kysely<Schema>, userId: string): Promise<number>;
  /**
   * Ends everything of the user that could still become a session (a lock): every session, every
   * authorization code and every device authorization it approved; how many sessions ended.
   */
  endEverythingOfUser(db: Kysely<Schema>, userId: string): Promise<number>;
  /** The user's sessions that can still be refreshed. */
  listOfUser(db: Kysely<Schema>, userId: string): Promise<ApplicationSessionView[]>;
  /** The applications the user registered. */
  applicationsOfUser(db: Kysely<Schema>, userId: string): Promise<OwnedApplicationView[]>;
}
