import { Worker } from 'node:worker_threads';
import type { CheckpointWorkerData } from './wal-checkpoint-worker.ts';

/**
 * Copies an SQLite database's write-ahead log back into the database file from a worker thread,
 * so that this work (SQLite's automatic checkpoint: ~100 µs of a token rotation's ~400 µs, and a
 * pause of several milliseconds every thousand pages of writes) no longer runs on the thread
 * that answers requests. Its checkpoints are PASSIVE: they never wait for, nor hold up, a writer
 * or a reader. (A log restarts only after a checkpoint has caught up with it; under writes that
 * never pause, the writer's own automatic checkpoint, set to a longer log, still does that.)
 */
export interface WalCheckpointer {
  stop(): Promise<void>;
}

/**
 * The worker's module, beside this one and compiled the same way: dist/db/wal-checkpoint-worker.js
 * (its own esbuild entry point) in the built server, where the bundle gives this module the URL it
 * has in dist/; the .ts source under tsx, started through tsx-worker.mjs.
 */
const UNDER_TSX = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(UNDER_TSX ? './tsx-worker.mjs' : './wal-checkpoint-worker.js', import.meta.url);
const WORKER_ENTRY = UNDER_TSX ? new URL('./wal-checkpoint-worker.ts', import.meta.url).href : undefined;

export function startWalCheckpointer(path: string, intervalMs = 100): WalCheckpointer {
  const workerData: CheckpointWorkerData & { entry?: string } = { path, intervalMs, entry: WORKER_ENTRY };
  const worker = new Worker(WORKER_URL, {
    workerData,
    // Its heap holds a few statements' results: keep the thread small.
    resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
    stdout: false,
    stderr: false,
  });
  worker.unref();
  // A worker that cannot open the database (deleted meanwhile) leaves checkpoints to the writer.
  worker.on('error', () => {});
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    async stop() {
      // Held open until the worker has closed its connection (it is unref'd while it runs).
      worker.ref();
      worker.postMessage('stop');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]);
      clearTimeout(timer);
      await worker.terminate();
    },
  };
}
