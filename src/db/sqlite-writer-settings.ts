import type BetterSqlite3 from 'better-sqlite3';

/**
 * The settings of a connection that writes to an SQLite database: the request thread's writer
 * (connection.ts) and the batch writer's thread (sqlite-thread-worker.ts), which must write alike.
 */
export function configureWriter(connection: BetterSqlite3.Database): void {
  connection.pragma('journal_mode = WAL');
  connection.pragma('synchronous = NORMAL');
  connection.pragma('foreign_keys = ON');
  connection.pragma('busy_timeout = 5000');
  // Room for every page a bulk write changes (a 250-object POST dirties ~650 4 KiB pages; 1,000
  // objects, the most one POST takes, ~2,600): past the default 2 MiB, SQLite writes pages to the
  // log before the commit and writes many again at the commit, and reads the indexes' pages back
  // from the file (measured: 4,300 writes and 1,700 reads a POST with 2 MiB, 2,900 and 200 with 16).
  // The spill threshold gives a transaction's changed pages that room (up to 16 MiB), while only
  // 4 MiB of unchanged pages stay cached between transactions: a 16 MiB cache of them was ~10 MiB
  // of the server's peak RSS over the bench (docs/decisions/0029).
  connection.pragma('cache_size = -4096');
  connection.pragma('cache_spill = 4096');
  // A multi-row INSERT inside a transaction keeps a statement journal (each page's content before
  // the statement, to undo it alone). Past 64 KiB SQLite spills it to a temporary file, one write
  // per page: a 50-row chunk of a bulk POST spilled ~120 pages, about half of a POST's write calls.
  // In memory it is at most a chunk's pages, dropped at the statement's end.
  connection.pragma('temp_store = MEMORY');
}
