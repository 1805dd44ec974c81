import { PostgresAdapter, sql, type Transaction } from 'kysely';

/**
 * Holds a lock on `key` until the transaction ends, so transactions about the same thing (a mod,
 * say) run one after another. PostgreSQL: a transaction-scoped advisory lock. SQLite needs none:
 * it runs one write transaction at a time.
 */
export async function lockKey(trx: Transaction<any>, key: string): Promise<void> {
  if (trx.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
  }
}
