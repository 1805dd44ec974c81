import { type Kysely, type Migration, Migrator, sql } from 'kysely';
import { dialectOf } from './dialect.ts';
import * as m001 from './migrations/001_users.ts';
import * as m002 from './migrations/002_legacy_content.ts';
import * as m003 from './migrations/003_login.ts';
import * as m004 from './migrations/004_projects.ts';
import * as m005 from './migrations/005_login_security.ts';
import * as m006 from './migrations/006_expiry_indexes.ts';
import * as m007 from './migrations/007_security_events.ts';
import * as m009 from './migrations/009_content_versions.ts';
import * as m010 from './migrations/010_backup_codes.ts';
import * as m012 from './migrations/012_verification_requests.ts';
import * as m013 from './migrations/013_developer_applications.ts';
import * as m014 from './migrations/014_passkeys.ts';
import * as m015 from './migrations/015_rotation_indexes.ts';
import * as m020 from './migrations/020_submit_tokens.ts';
import * as m021 from './migrations/021_openid_connect.ts';
import * as m022 from './migrations/022_account_lifecycle.ts';
import * as m023 from './migrations/023_browser_sign_ins.ts';
import * as m024 from './migrations/024_logout_outbox.ts';
import * as m025 from './migrations/025_account_search_indexes.ts';
import * as m026 from './migrations/026_invitations_and_event_filters.ts';

const migrations: Record<string, Migration> = {
  '001_users': m001,
  '002_legacy_content': m002,
  '003_login': m003,
  '004_projects': m004,
  '005_login_security': m005,
  '006_expiry_indexes': m006,
  '007_security_events': m007,
  '009_content_versions': m009,
  '010_backup_codes': m010,
  '012_verification_requests': m012,
  '013_developer_applications': m013,
  '014_passkeys': m014,
  '015_rotation_indexes': m015,
  '020_submit_tokens': m020,
  '021_openid_connect': m021,
  '022_account_lifecycle': m022,
  '023_browser_sign_ins': m023,
  '024_logout_outbox': m024,
  '025_account_search_indexes': m025,
  '026_invitations_and_event_filters': m026,
};

/** Brings the schema up to date; safe to run on every start and from several instances at once. */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against every past schema, not today's Schema type
export async function migrateToLatest(db: Kysely<any>): Promise<void> {
  // Kysely looks for its migration tables in every schema it can see, so another schema of the same
  // PostgreSQL database holding them would be taken for ours: name the schema we work in.
  const migrationTableSchema =
    dialectOf(db) === 'postgres'
      ? ((await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)).rows[0]?.schema ??
        undefined)
      : undefined;
  // Names compared by code unit: Kysely's default, localeCompare, has ICU load its collation data,
  // ~2 MiB of the server's memory from then on, to order names that are plain ASCII.
  const nameComparator = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema,
    nameComparator,
  });
  let { error, results } = await migrator.migrateToLatest();
  // Kysely's check for its tables reads the catalog of every schema, and fails when another schema
  // of the database, or a table in it, is dropped meanwhile (another deployment's, a test run's):
  // 3F000 from has_schema_privilege, 42P01 or "cache lookup failed" from pg_get_serial_sequence.
  // Our schema is untouched by that, so the check is simply run again.
  for (let attempt = 1; attempt < 5 && isCatalogRace(error); attempt++) {
    ({ error, results } = await migrator.migrateToLatest());
  }
  if (error) {
    const failed = results?.find((result) => result.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? error}`, {
      cause: error,
    });
  }
}

function isCatalogRace(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  return code === '3F000' || code === '42P01' || (code === 'XX000' && /cache lookup failed/.test(message ?? ''));
}
