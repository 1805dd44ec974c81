import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // The single-use submit tokens of the pages' forms: the first submit of a form claims its row,
  // and keeps its answer there (sealed under a key only the token gives) for a repeated submit.
  await db.schema
    .createTable('submit_tokens')
    .addColumn('token_hash', 'text', (col) => col.primaryKey())
    // null while the first submit is still at work.
    .addColumn('answer', 'text')
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('submit_tokens_expires').on('submit_tokens').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('submit_tokens').execute();
}
