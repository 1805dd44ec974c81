// The worker thread of sqlite-thread.ts (its own entry point: scripts/build.mjs bundles it to
// dist/db/sqlite-thread-worker.js). It opens one write connection to the database and does two
// jobs on it: each batch it is sent runs as one transaction, answered `{ id, written }` once
// committed (or left unwritten, see BatchRequest), or `{ id, error }` with SQLite's code and
// message once rolled back; and, while asked to (`checkpointMs` > 0), a PASSIVE checkpoint every
// `checkpointMs` between batches.
import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { configureWriter } from './sqlite-writer-settings.ts';

export interface SqliteThreadData {
  path: string;
  /** The checkpoints' interval at start; 0: none. */
  checkpointMs: number;
}

export interface BatchStatement {
  sql: string;
  parameters: readonly unknown[];
}

/**
 * A batch: `unless`, SELECTs run first, in the same transaction; when one answers a row, nothing is
 * written (answered `written: false`). `autocheckpoint`: the log's length (wal_autocheckpoint) past
 * which this batch's commit checkpoints it. `checkpointMs`: the checkpoints' interval from now on
 * (0: none), not answered. `stop`: closes the connection, answered once closed.
 */
export type ThreadRequest =
  | { id: number; statements: readonly BatchStatement[]; unless: readonly BatchStatement[]; autocheckpoint: number }
  | { checkpointMs: number }
  | { id: number; stop: true };
export type BatchReply = { id: number; written?: boolean; error?: { code?: string; message: string } };

if (!parentPort) throw new Error('sqlite-thread-worker runs as a worker thread (see sqlite-thread.ts)');
const port = parentPort;
const { path, checkpointMs } = workerData as SqliteThreadData;
const db = new BetterSqlite3(path, { fileMustExist: true });
configureWriter(db);
let autocheckpoint = 1000;

/** The statements of the bulk writes are a small set of texts (a few row counts per column list). */
const statements = new Map<string, BetterSqlite3.Statement>();
function prepare(text: string): BetterSqlite3.Statement {
  let statement = statements.get(text);
  if (statement) return statement;
  if (statements.size >= 200) statements.clear();
  statements.set(text, (statement = db.prepare(text)));
  return statement;
}

/** True when written, false when one of `unless` answered a row (nothing written). */
function write(batch: readonly BatchStatement[], unless: readonly BatchStatement[]): boolean {
  // IMMEDIATE: the write lock is taken at BEGIN, so what `unless` finds still holds at the INSERTs
  // (the request thread's writer holds no transaction meanwhile; this thread's own checkpoints run
  // between batches, and PASSIVE ones never hold the write lock anyway).
  prepare('begin immediate').run();
  try {
    const found = unless.some(({ sql, parameters }) => prepare(sql).get(parameters as unknown[]) !== undefined);
    if (!found) for (const { sql, parameters } of batch) prepare(sql).run(parameters as unknown[]);
    prepare(found ? 'rollback' : 'commit').run();
    return !found;
  } catch (error) {
    if (db.inTransaction) db.exec('rollback');
    throw error;
  }
}

let checkpointTimer: NodeJS.Timeout | undefined;
function checkpointEvery(intervalMs: number): void {
  clearTimeout(checkpointTimer);
  checkpointTimer = undefined;
  if (intervalMs <= 0) return;
  const pass = () => {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // busy, or the database is going away: the next pass tries again
    }
    checkpointTimer = setTimeout(pass, intervalMs);
  };
  pass();
}

port.on('message', (request: ThreadRequest) => {
  if ('checkpointMs' in request) {
    checkpointEvery(request.checkpointMs);
    return;
  }
  if ('stop' in request) {
    checkpointEvery(0);
    db.close();
    port.postMessage({ id: request.id } satisfies BatchReply);
    port.close();
    return;
  }
  let reply: BatchReply;
  try {
    if (request.autocheckpoint !== autocheckpoint) db.pragma(`wal_autocheckpoint = ${(autocheckpoint = request.autocheckpoint)}`);
    reply = { id: request.id, written: write(request.statements, request.unless) };
  } catch (error) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    reply = { id: request.id, error: { code: typeof code === 'string' ? code : undefined, message: String(message ?? error) } };
  }
  port.postMessage(reply);
});
checkpointEvery(checkpointMs);
