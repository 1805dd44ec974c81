import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // SIGN_UP=invite: an address an operator invited, with the hash of its single-use link token
  // (7 days). A revoked or used invitation stays until it expires, so its link can say which it is.
  await db.schema
    .createTable('invitations')
    .addColumn('invitation_id', 'text', (col) => col.primaryKey())
    .addColumn('email', 'text', (col) => col.notNull())
    .addColumn('token_hash', 'text', (col) => col.notNull().unique())
    // The operator who invited; no foreign key (an erased operator's invitations keep going, with null).
    .addColumn('invited_by', 'text')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('invitations_email').on('invitations').column('email').execute();
  await db.schema.createIndex('invitations_expiry').on('invitations').column('expires_at').execute();
  await db.schema.createIndex('invitations_invited_by').on('invitations').column('invited_by').execute();

  // The console's event log pages newest first by (created_at, event_id), filtered by kind, user
  // or IP: each filter gets an index ending in the paging key, so a page is an index range scan
  // and the next page's keyset condition is a seek, whatever the table's size.
  await db.schema.dropIndex('security_events_created').execute();
  await db.schema.dropIndex('security_events_user_created').execute();
  await db.schema
    .createIndex('security_events_created')
    .on('security_events')
    .columns(['created_at', 'event_id'])
    .execute();
  await db.schema
    .createIndex('security_events_user_created')
    .on('security_events')
    .columns(['user_id', 'created_at', 'event_id'])
    .execute();
  await db.schema
    .createIndex('security_events_kind_created')
    .on('security_events')
    .columns(['kind', 'created_at', 'event_id'])
    .execute();
  await db.schema
    .createIndex('security_events_ip_created')
    .on('security_events')
    .columns(['ip', 'created_at', 'event_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('security_events_ip_created').execute();
  await db.schema.dropIndex('security_events_kind_created').execute();
  await db.schema.dropIndex('security_events_user_created').execute();
  await db.schema.dropIndex('security_events_created').execute();
  await db.schema.createIndex('security_events_created').on('security_events').column('created_at').execute();
  await db.schema
    .createIndex('security_events_user_created')
    .on('security_events')
    .columns(['user_id', 'created_at'])
    .execute();
  await db.schema.dropTable('invitations').execute();
}
