import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect.ts';

export async function up(db: Kysely<any>): Promise<void> {
  // Operators govern the accounts (1: an operator); a locked account (locked_at set) can sign in
  // nowhere until it is unlocked; the reason is for operators only, never shown to the person.
  await db.schema
    .alterTable('users')
    .addColumn('operator', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('users').addColumn('locked_at', 'bigint').execute();
  await db.schema.alterTable('users').addColumn('lock_reason', 'text').execute();
  // A suspended application (suspended_at set) authenticates nowhere until it is restored.
  await db.schema.alterTable('applications').addColumn('suspended_at', 'bigint').execute();
  // The account list: newest first, paged by (created_at, user_id).
  await db.schema.createIndex('users_created').on('users').columns(['created_at', 'user_id']).execute();
  // Prefix search, any case: a range over lower(username) and over email (stored lowercased).
  // SQLite compares text bytewise, so users_username and users_email serve the range already;
  // PostgreSQL's collation does not order by bytes, so the range is taken in the "C" collation.
  if (dialectOf(db) === 'postgres') {
    await sql`create index users_username_prefix on users ((lower(username) collate "C"))`.execute(db);
    await sql`create index users_email_prefix on users ((email collate "C"))`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`drop index users_username_prefix`.execute(db);
    await sql`drop index users_email_prefix`.execute(db);
  }
  await db.schema.dropIndex('users_created').execute();
  await db.schema.alterTable('applications').dropColumn('suspended_at').execute();
  for (const column of ['lock_reason', 'locked_at', 'operator']) {
    await db.schema.alterTable('users').dropColumn(column).execute();
  }
}
