import type { Kysely } from 'kysely';

/**
 * Drops the index of sessions by refresh-token expiry: every refresh rotation moved the session's
 * entry in it (two more pages written per rotation on SQLite, of about twelve). The purge finds
 * expired sessions by walking the table by key instead (`scanned` in src/db/purge.ts). Rows are
 * untouched. rotated_refresh_tokens keeps its expiry index: that table holds a row per rotation
 * for 30 days, far too many to walk.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('sessions_refresh_expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('sessions_refresh_expires_at').on('sessions').column('refresh_expires_at').execute();
}
