/** True when a query failed on a primary-key or unique constraint, on either database. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** True when a query failed on a foreign key (the referenced row is gone), on either database. */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/**
 * True when a query failed because the database had no room for it in time, not because of the
 * query: the pool's wait for a free connection ran out, a new connection was not set up within that
 * wait, PostgreSQL refused a connection for now, or SQLite's busy timeout passed. Trying again later
 * can succeed.
 */
export function isDatabaseBusy(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    message === 'timeout exceeded when trying to connect' || // pg-pool's connectionTimeoutMillis, waiting for a free connection
    message === 'Connection terminated due to connection timeout' || // the same, opening a new one
    code === '53300' || // too_many_connections
    code === '57P03' || // cannot_connect_now
    code === 'SQLITE_BUSY'
  );
}
