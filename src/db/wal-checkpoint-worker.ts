// The worker thread of wal-checkpointer.ts (its own entry point: scripts/build.mjs bundles it to
// dist/db/wal-checkpoint-worker.js, beside where the server bundle looks for it). It opens the
// database and runs a PASSIVE checkpoint every `intervalMs` until told to stop.
import { parentPort, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';

export interface CheckpointWorkerData {
  path: string;
  intervalMs: number;
}

if (!parentPort) throw new Error('wal-checkpoint-worker runs as a worker thread (see wal-checkpointer.ts)');
const port = parentPort;
const { path, intervalMs } = workerData as CheckpointWorkerData;
const db = new BetterSqlite3(path, { fileMustExist: true });
let timer: NodeJS.Timeout | undefined;

function pass(): void {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // busy, or the database is going away: the next pass tries again
  }
  timer = setTimeout(pass, intervalMs);
}

port.on('message', () => {
  clearTimeout(timer);
  db.close();
  port.close();
});
pass();
