// The worker thread of batch-writer.ts (its own entry point: scripts/build.mjs bundles it to
// dist/db/batch-writer-worker.js). It opens its own write connection to the database and runs each
// batch it is sent as one transaction, answering `{ id, written }` once committed (or left
// unwritten, see BatchRequest), or `{ id, error }` with SQLite's code and message once rolled back.
import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { configureWriter } from './sqlite-writer-settings.ts';

export interface BatchWriterData {
  path: string;
}

export interface BatchStatement {
  sql: string;
  parameters: readonly unknown[];
}

/**
 * `unless`: SELECTs run first, in the same transaction; when one answers a row, nothing is written
 * (answered `written: false`). `autocheckpoint`: the log's length (wal_autocheckpoint) past which
 * this batch's commit checkpoints it.
 */
export type BatchRequest = { id: number; statements: readonly BatchStatement[]; unless: readonly BatchStatement[]; autocheckpoint: number } | { id: number; stop: true };
export type BatchReply = { id: number; written?: boolean; error?: { code?: string; message: string } };

if (!parentPort) throw new Error('batch-writer-worker runs as a worker thread (see batch-writer.ts)');
const port = parentPort;
const { path } = workerData as BatchWriterData;
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
  // (the request thread's writer holds no transaction meanwhile; the checkpoint thread's passive
  // checkpoints never hold it).
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

port.on('message', (request: BatchRequest) => {
  if ('stop' in request) {
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
