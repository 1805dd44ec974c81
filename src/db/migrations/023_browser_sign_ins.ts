import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // What the account page lists of each browser sign-in: the browser's own words (User-Agent), the
  // address it came from, when it was last seen, and an id the page's forms name it by (never the
  // session's hash, which is what the cookie's token opens).
  await db.schema.alterTable('web_sessions').addColumn('public_id', 'text').execute();
  await db.schema.alterTable('web_sessions').addColumn('user_agent', 'text').execute();
  await db.schema.alterTable('web_sessions').addColumn('ip', 'text').execute();
  await db.schema.alterTable('web_sessions').addColumn('last_seen_at', 'bigint').execute();
  // Sign-ins made before (they last 12 hours at most) get an id each and were last seen when they began.
  await sql`update web_sessions set last_seen_at = created_at`.execute(db);
  const rows = await db.selectFrom('web_sessions').select('session_hash').execute();
  for (const row of rows)
    await db
      .updateTable('web_sessions')
      .set({ public_id: randomUUID() })
      .where('session_hash', '=', row.session_hash)
      .execute();
  await db.schema.createIndex('web_sessions_public_id').on('web_sessions').column('public_id').unique().execute();
  // The account page lists a user's sign-ins.
  await db.schema.createIndex('web_sessions_user').on('web_sessions').column('user_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('web_sessions_user').execute();
  await db.schema.dropIndex('web_sessions_public_id').execute();
  for (const column of ['last_seen_at', 'ip', 'user_agent', 'public_id'])
    await db.schema.alterTable('web_sessions').dropColumn(column).execute();
}
