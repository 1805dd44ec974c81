import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Backup codes for two-step verification: only a hash of each, deleted when used.
  await db.schema
    .createTable('backup_codes')
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.user_id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('backup_codes_pk', ['user_id', 'code_hash'])
    .execute();
  // A new set waiting to be shown once on the account page, encrypted under a key derived from the
  // browser's session token (which the database holds only a hash of).
  await db.schema.alterTable('web_sessions').addColumn('backup_codes_to_show', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('web_sessions').dropColumn('backup_codes_to_show').execute();
  await db.schema.dropTable('backup_codes').execute();
}
