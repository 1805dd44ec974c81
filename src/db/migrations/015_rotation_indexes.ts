import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect.ts';

/**
 * Fewer pages written per refresh rotation (on SQLite about 9 instead of 12):
 * - sessions lose their index by refresh-token expiry, in which every rotation moved the session's
 *   entry; the purge finds expired sessions by walking the table by key (`scanned` in purge.ts).
 * - rotated_refresh_tokens lose their foreign key to sessions and their index by session, which
 *   only its cascade used, and on SQLite become one tree keyed by hash (WITHOUT ROWID). A rotated
 *   token counts only while its session exists (findRotatedSession joins it); the rows of an ended
 *   session stay until they expire, like every other row, and the purge takes them then.
 * Every row is carried over. rotated_refresh_tokens keep their expiry index: a row per rotation for
 * 30 days is too many to walk.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('sessions_refresh_expires_at').execute();
  if (dialectOf(db) === 'postgres') {
    await sql`alter table rotated_refresh_tokens drop constraint rotated_refresh_tokens_session_id_fkey`.execute(db);
    await db.schema.dropIndex('rotated_refresh_tokens_session').execute();
    return;
  }
  await rebuildRotated(db, sql`session_id text not null`, sql`without rowid`);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('sessions_refresh_expires_at').on('sessions').column('refresh_expires_at').execute();
  // Rows of ended sessions would break the foreign key: they go first.
  await sql`delete from rotated_refresh_tokens where session_id not in (select session_id from sessions)`.execute(db);
  if (dialectOf(db) === 'postgres') {
    await sql`alter table rotated_refresh_tokens add constraint rotated_refresh_tokens_session_id_fkey foreign key (session_id) references sessions (session_id) on delete cascade`.execute(
      db,
    );
  } else {
    await rebuildRotated(db, sql`session_id text not null references sessions (session_id) on delete cascade`, sql``);
  }
  await db.schema
    .createIndex('rotated_refresh_tokens_session')
    .on('rotated_refresh_tokens')
    .column('session_id')
    .execute();
}

/** SQLite changes a table's key or constraints only by building it anew: a copy, then the swap. */
async function rebuildRotated(
  db: Kysely<any>,
  sessionColumn: ReturnType<typeof sql>,
  options: ReturnType<typeof sql>,
): Promise<void> {
  await sql`create table rotated_refresh_tokens_new (refresh_token_hash text primary key, ${sessionColumn}, expires_at bigint not null) ${options}`.execute(
    db,
  );
  await sql`insert into rotated_refresh_tokens_new (refresh_token_hash, session_id, expires_at) select refresh_token_hash, session_id, expires_at from rotated_refresh_tokens`.execute(
    db,
  );
  await sql`drop table rotated_refresh_tokens`.execute(db);
  await sql`alter table rotated_refresh_tokens_new rename to rotated_refresh_tokens`.execute(db);
  await db.schema
    .createIndex('rotated_refresh_tokens_expires_at')
    .on('rotated_refresh_tokens')
    .column('expires_at')
    .execute();
}
