// The worker thread of sqlite-thread.ts (its own entry point: scripts/build.mjs bundles it to
// dist/db/sqlite-thread-worker.js). It opens one write connection to the database and does two
// jobs on it: each batch it is sent runs as one transaction, answered `{ id, written }` once
// committed (or left unwritten, see BatchRequest), or `{ id, error }` with SQLite's code and
// message once rolled back; and a checkpoint when asked for one (the request thread schedules
// them, between batches).
import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { configureWriter } from './sqlite-writer-settings.ts';

export interface SqliteThreadData {
  path: string;
}

export interface BatchStatement {
  sql: string;
  parameters: readonly unknown[];
}

/**
 * A batch: `unless`, SELECTs run first, in the same transaction; when one answers a row, nothing is
 * written (answered `written: false`). `autocheckpoint`: the log's length (wal_autocheckpoint) past
 * which this batch's commit checkpoints it. `checkpoint`: a checkpoint in that mode, answered once
 * done (`written: false` when SQLite refused it: busy, or the database is going away; the next one
 * tries again). `stop`: closes the connection, answered once closed.
 */
export type ThreadRequest =
  | { id: number; statements: readonly BatchStatement[]; unless: readonly BatchStatement[]; autocheckpoint: number }
  | { id: number; checkpoint: 'PASSIVE' | 'RESTART' }
  | { id: number; stop: true };
/** `log`: a checkpoint's count of pages in the log. */
export type BatchReply = { id: number; written?: boolean; log?: number; error?: { code?: string; message: string } };

if (!parentPort) throw new Error('sqlite-thread-worker runs as a worker thread (see sqlite-thread.ts)');
const port = parentPort;
const { path } = workerData as SqliteThreadData;
const db = new BetterSqlite3(path, { fileMustExist: true });
configureWriter(db);
const BUSY_TIMEOUT_MS = db.pragma('busy_timeout', { simple: true }) as number;
let autocheckpoint = 1000;

/** The statements of the bulk writes are a small set of texts (a few row counts per column list). */
const statements = new Map<string, BetterSqlite3.Statement>();
function prepare(text: string): BetterSqlite3.Statement {
  const statement = statements.get(text);
  if (statement) return statement;
  if (statements.size >= 200) statements.clear();
  const prepared = db.prepare(text);
  statements.set(text, prepared);
  return prepared;
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

/**
 * RESTART waits for the readers still in the log, while the request thread holds the write lock
 * for it: a reader of another process (a backup, a shell) must not keep every write waiting for
 * the busy timeout, so it waits this long at most and the next one tries again.
 */
const RESTART_WAIT_MS = 20;

function checkpoint(id: number, mode: 'PASSIVE' | 'RESTART'): BatchReply {
  if (mode === 'RESTART') db.pragma(`busy_timeout = ${RESTART_WAIT_MS}`);
  try {
    const { log } = (db.pragma(`wal_checkpoint(${mode})`) as Array<{ log: number }>)[0]!;
    return { id, written: true, log };
  } catch {
    return { id, written: false };
  } finally {
    if (mode === 'RESTART') db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  }
}

port.on('message', (request: ThreadRequest) => {
  if ('checkpoint' in request) {
    port.postMessage(checkpoint(request.id, request.checkpoint));
    return;
  }
  if ('stop' in request) {
    db.close();
    port.postMessage({ id: request.id } satisfies BatchReply);
    port.close();
    return;
  }
  let reply: BatchReply;
  try {
    if (request.autocheckpoint !== autocheckpoint) {
      autocheckpoint = request.autocheckpoint;
      db.pragma(`wal_autocheckpoint = ${autocheckpoint}`);
    }
    reply = { id: request.id, written: write(request.statements, request.unless) };
  } catch (error) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    reply = {
      id: request.id,
      error: { code: typeof code === 'string' ? code : undefined, message: String(message ?? error) },
    };
  }
  port.postMessage(reply);
});
