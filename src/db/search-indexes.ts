import { type Kysely, sql } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Schema } from './schema.ts';

/**
 * Substring search indexes that a database may not be able to have. On PostgreSQL a trigram
 * index (pg_trgm) serves case-insensitive substring filters; creating the extension needs a
 * privilege the service may lack, so failure here is logged and the service runs without it.
 * SQLite keeps the per-owner indexes of the migrations: a user's projects are filtered by a
 * scan of that user's rows only.
 */
export async function ensureSearchIndexes(db: Kysely<Schema>, warn: (message: string) => void): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  try {
    const { rows } = await sql<{
      schema: string;
    }>`select extnamespace::regnamespace::text as schema from pg_extension where extname = 'pg_trgm'`.execute(db);
    if (rows.length === 0) await sql`create extension if not exists pg_trgm with schema public`.execute(db);
    const schema = rows[0]?.schema ?? 'public';
    await sql`create index if not exists projects_title_trgm on projects using gin (title ${sql.raw(`${schema === 'public' ? 'public' : `"${schema}"`}.gin_trgm_ops`)})`.execute(
      db,
    );
  } catch (error) {
    warn(`trigram index for title filters not created (${(error as Error).message}); substring filters will scan`);
  }
}
