import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // What happened to an account or an application, for the user's and the operator's eyes. No
  // foreign keys: an event outlives the user or application it names.
  await db.schema
    .createTable('security_events')
    .addColumn('event_id', 'text', (col) => col.primaryKey())
    .addColumn('kind', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text')
    .addColumn('client_id', 'text')
    .addColumn('ip', 'text')
    // JSON object; never a secret.
    .addColumn('details', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('security_events_created').on('security_events').column('created_at').execute();
  await db.schema
    .createIndex('security_events_user_created')
    .on('security_events')
    .columns(['user_id', 'created_at'])
    .execute();

  // When an application last used the session (an access token, at most once a minute, or a refresh).
  await db.schema.alterTable('sessions').addColumn('last_used_at', 'bigint').execute();
  // The two-step secret being set up on the account page, until its first code confirms it.
  await db.schema.alterTable('web_sessions').addColumn('pending_totp_secret', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('web_sessions').dropColumn('pending_totp_secret').execute();
  await db.schema.alterTable('sessions').dropColumn('last_used_at').execute();
  await db.schema.dropTable('security_events').execute();
}
