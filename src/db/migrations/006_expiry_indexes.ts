import type { Kysely } from 'kysely';

/**
 * Indexes the background purge (src/db/purge.ts) finds expired rows by, so each batch reads only
 * what it deletes; and rotated refresh tokens by session, which a session's deletion cascades to.
 */
const indexes: Array<[name: string, table: string, column: string]> = [
  ['authorization_codes_expires_at', 'authorization_codes', 'expires_at'],
  ['interactions_expires_at', 'interactions', 'expires_at'],
  ['device_authorizations_expires_at', 'device_authorizations', 'expires_at'],
  ['web_sessions_expires_at', 'web_sessions', 'expires_at'],
  ['sessions_refresh_expires_at', 'sessions', 'refresh_expires_at'],
  ['rotated_refresh_tokens_expires_at', 'rotated_refresh_tokens', 'expires_at'],
  ['rotated_refresh_tokens_session', 'rotated_refresh_tokens', 'session_id'],
  ['trusted_devices_created_at', 'trusted_devices', 'created_at'],
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const [name, table, column] of indexes) await db.schema.createIndex(name).on(table).column(column).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [name] of indexes) await db.schema.dropIndex(name).execute();
}
