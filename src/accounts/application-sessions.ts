import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';

/**
 * What the account services need from the feature that owns applications' sessions (src/oauth/):
 * a changed password, a reset or the account page end them. The owner also tells each
 * application whose session ended (back-channel logout), in the same transaction. Declared here and provided by the
 * wiring (src/app.ts), so accounts/ never imports oauth/ (docs/decisions/0087).
 * Each call runs on the caller's transaction.
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
}
