import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A counter per kind of content, bumped in the same transaction as every write to it: each
  // instance compares it with the version its cached answers were built from (src/db/content-versions.ts).
  await db.schema
    .createTable('content_versions')
    .addColumn('name', 'text', (col) => col.primaryKey())
    .addColumn('version', 'bigint', (col) => col.notNull())
    .execute();
  await db.insertInto('content_versions').values({ name: 'engrams', version: 0 }).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('content_versions').execute();
}
