import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One row per registration: several users may hold unconfirmed registrations of one mod.
  await db.schema
    .createTable('mods')
    .addColumn('mod_id', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.user_id').onDelete('cascade'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('confirmed', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('confirmation_code', 'text', (col) => col.notNull())
    .addColumn('pull_url', 'text')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('mods_pk', ['mod_id', 'user_id'])
    .execute();
  await db.schema.createIndex('mods_user').on('mods').column('user_id').execute();
  // At most one confirmed registration per mod, enforced by the database itself.
  await db.schema
    .createIndex('mods_confirmed_once')
    .unique()
    .on('mods')
    .column('mod_id')
    .where(sql.ref('confirmed'), '=', 1)
    .execute();

  await db.schema
    .createTable('engrams')
    .addColumn('uid', 'text', (col) => col.primaryKey())
    .addColumn('path', 'text', (col) => col.notNull())
    .addColumn('class', 'text', (col) => col.notNull())
    .addColumn('label', 'text', (col) => col.notNull())
    .addColumn('availability', 'integer', (col) => col.notNull())
    .addColumn('can_blueprint', 'integer', (col) => col.notNull())
    .addColumn('mod_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .addForeignKeyConstraint('engrams_mod', ['mod_id', 'user_id'], 'mods', ['mod_id', 'user_id'], (fk) =>
      fk.onDelete('cascade'),
    )
    .execute();
  await db.schema.createIndex('engrams_class').on('engrams').column('class').execute();
  await db.schema.createIndex('engrams_mod').on('engrams').columns(['mod_id', 'user_id']).execute();

  await db.schema
    .createTable('documents')
    .addColumn('document_id', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.user_id').onDelete('cascade'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('description', 'text', (col) => col.notNull())
    .addColumn('revision', 'integer', (col) => col.notNull())
    .addColumn('download_count', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('content', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('last_updated', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('documents_user').on('documents').column('user_id').execute();
  await db.schema.createIndex('documents_last_updated').on('documents').column('last_updated').execute();
  await db.schema.createIndex('documents_download_count').on('documents').column('download_count').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('documents').execute();
  await db.schema.dropTable('engrams').execute();
  await db.schema.dropTable('mods').execute();
}
