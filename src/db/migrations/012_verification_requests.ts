import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One-time codes and links of sign-up, password reset and e-mail change (DESIGN "Self-service
  // accounts"). One live request per purpose and address: a new one replaces it. Only hashes are kept.
  await db.schema
    .createTable('verification_requests')
    .addColumn('request_id', 'text', (col) => col.primaryKey())
    .addColumn('purpose', 'text', (col) => col.notNull())
    .addColumn('address', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text', (col) => col.references('users.user_id').onDelete('cascade'))
    // 'sent': waits for its code or link; 'verified': the browser that proved it goes on (flow_hash).
    .addColumn('stage', 'text', (col) => col.notNull())
    .addColumn('code_hash', 'text')
    .addColumn('link_hash', 'text')
    .addColumn('flow_hash', 'text')
    .addColumn('code_attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('return_to', 'text')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('verification_requests_purpose_address')
    .unique()
    .on('verification_requests')
    .columns(['purpose', 'address'])
    .execute();
  await db.schema
    .createIndex('verification_requests_link')
    .unique()
    .on('verification_requests')
    .column('link_hash')
    .execute();
  await db.schema
    .createIndex('verification_requests_flow')
    .unique()
    .on('verification_requests')
    .column('flow_hash')
    .execute();
  await db.schema
    .createIndex('verification_requests_expires')
    .on('verification_requests')
    .column('expires_at')
    .execute();
  await db.schema.createIndex('verification_requests_user').on('verification_requests').column('user_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('verification_requests').execute();
}
