import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A schema of its own in a PostgreSQL database, for one run: `url` reaches it (search_path), and
 * drop() removes it with everything in it, so runs neither see nor leave each other's rows.
 */
export async function freshSchema(url: string, prefix = 'bench'): Promise<{ url: string; drop: () => Promise<void> }> {
  const schema = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const scoped = new URL(url);
  scoped.searchParams.set('options', `-c search_path=${schema},public`);
  return {
    url: scoped.toString(),
    drop: async () => {
      await admin.query(`drop schema ${schema} cascade`);
      await admin.end();
    },
  };
}
