import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect.ts';

// The console's account search (newest first among the accounts whose username or address starts
// with a prefix): each prefix range is read from an index that also holds the creation time and
// id, so the matches are found and ordered without reading a row of the table
// (docs/decisions/0101). PostgreSQL keeps the range in the "C" collation, as migration 022's.
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`create index users_username_search on users ((lower(username) collate "C"), created_at, user_id) include (username)`.execute(
      db,
    );
    await sql`create index users_email_search on users ((email collate "C"), created_at, user_id)`.execute(db);
    await sql`drop index users_username_prefix`.execute(db);
    await sql`drop index users_email_prefix`.execute(db);
  } else {
    await sql`create index users_username_search on users (lower(username), created_at, user_id)`.execute(db);
    await sql`create index users_email_search on users (email, created_at, user_id)`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`create index users_username_prefix on users ((lower(username) collate "C"))`.execute(db);
    await sql`create index users_email_prefix on users ((email collate "C"))`.execute(db);
  }
  await sql`drop index users_username_search`.execute(db);
  await sql`drop index users_email_search`.execute(db);
}
