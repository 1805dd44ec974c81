import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Applications registered by a user on /account/apps: their owner (null for the operator's,
  // made with `admin app create`) and the website the consent page links to. A deleted account
  // takes its applications, and with them their sessions and codes, along.
  await db.schema
    .alterTable('applications')
    .addColumn('owner_id', 'text', (col) => col.references('users.user_id').onDelete('cascade'))
    .execute();
  await db.schema.alterTable('applications').addColumn('website', 'text').execute();
  await db.schema.createIndex('applications_owner').on('applications').column('owner_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('applications_owner').execute();
  await db.schema.alterTable('applications').dropColumn('website').execute();
  await db.schema.alterTable('applications').dropColumn('owner_id').execute();
}
