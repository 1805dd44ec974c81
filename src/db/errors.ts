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

/** Node's socket errors for a server that is not there, went away, or does not answer. */
const UNREACHABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** pg's own errors for a connection whose server went away (while in use, or before). */
const UNREACHABLE_MESSAGES = new Set([
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
]);

/**
 * True when a query failed because the database cannot be reached at all, not because of the
 * query: the connection was refused, reset or timed out, the server ended it (a restart, an
 * administrator), or the server refuses connections for now (starting up, shutting down, the
 * database closed to connections). Trying again once it is back can succeed; nothing was written.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  return unreachable(error, 0);
}

function unreachable(error: unknown, depth: number): boolean {
  if (typeof error !== 'object' || error === null || depth > 3) return false;
  const { code, message, errors, cause } = error as {
    code?: unknown;
    message?: unknown;
    errors?: unknown;
    cause?: unknown;
  };
  if (typeof code === 'string') {
    if (UNREACHABLE_SOCKET_CODES.has(code)) return true;
    // Class 08, connection exception; class 57P, operator intervention (57P01 admin_shutdown,
    // 57P02 crash_shutdown, 57P03 cannot_connect_now, 57P04 database_dropped).
    if (code.startsWith('08') || code.startsWith('57P')) return true;
    // object_not_in_prerequisite_state is the connection refusal only with this message
    // (ALTER DATABASE … ALLOW_CONNECTIONS false).
    if (code === '55000' && typeof message === 'string' && message.includes('not currently accepting connections'))
      return true;
  }
  if (typeof message === 'string' && UNREACHABLE_MESSAGES.has(message)) return true;
  // A name resolving to several addresses fails with one error per address (Node's AggregateError);
  // pg-pool's connection timeout keeps the socket's error as its cause.
  if (Array.isArray(errors) && errors.some((inner) => unreachable(inner, depth + 1))) return true;
  return cause !== undefined && unreachable(cause, depth + 1);
}
