import { sql, type Transaction } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Schema } from './schema.ts';

/**
 * Holds a lock on `key` until the transaction ends, so transactions about the same thing (a mod,
 * say) run one after another. PostgreSQL: a transaction-scoped advisory lock. SQLite needs none:
 * it runs one write transaction at a time.
 */
export function lockKey(trx: Transaction<Schema>, key: string): Promise<void> {
  return lockKeys(trx, [key]);
}

/**
 * Holds locks on every key until the transaction ends (see lockKey), taken in one statement and in
 * a fixed order, so two transactions locking overlapping sets cannot deadlock.
 */
export async function lockKeys(trx: Transaction<Schema>, keys: readonly string[]): Promise<void> {
  if (keys.length > 0 && dialectOf(trx) === 'postgres') {
    await sql`select pg_advisory_xact_lock(h) from (select distinct hashtextextended(k, 0) as h from unnest(${[...keys]}::text[]) as k order by h) as locks`.execute(
      trx,
    );
  }
}
