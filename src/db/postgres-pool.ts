import pg from 'pg';

// int8 (COUNT(*), BIGINT millisecond timestamps) arrives as a string by default;
// every value we keep in one fits a double exactly.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * A pool of connections to the PostgreSQL database at `url`. This module is imported only when the
 * database is PostgreSQL (connection.ts): loading pg on Node 20 also loads Node's fetch (its
 * Cloudflare check constructs a Response), ~2 MiB of an SQLite server's idle memory otherwise.
 */
export function postgresPool(url: string): pg.Pool {
  // A burst of writes to one row queues on its advisory lock while holding connections, so the
  // wait for a free one is generous; past it the request is answered 503 (see isDatabaseBusy).
  const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 15_000 });
  // A client losing its server (a restart, pg_terminate_backend) emits 'error'; unheard, that would
  // crash the process. The pool hears its idle clients' and drops them; a checked-out client's
  // (between two statements of a transaction) has no listener but this one, and its next query
  // fails instead ("not queryable"), after which the pool drops it on release.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
