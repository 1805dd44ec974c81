import { Migrator, type Kysely, type Migration } from 'kysely';
import * as m001 from './migrations/001_users.ts';
import * as m002 from './migrations/002_legacy_content.ts';
import * as m003 from './migrations/003_login.ts';
import * as m004 from './migrations/004_projects.ts';

const migrations: Record<string, Migration> = {
  '001_users': m001,
  '002_legacy_content': m002,
  '003_login': m003,
  '004_projects': m004,
};

/** Brings the schema up to date; safe to run on every start and from several instances at once. */
export async function migrateToLatest(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? error}`, { cause: error });
  }
}
