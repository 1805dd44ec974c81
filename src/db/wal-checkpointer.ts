import type { CheckpointWorkerData } from './wal-checkpoint-worker.ts';
import { startDbWorker } from './worker-module.ts';

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

export function startWalCheckpointer(path: string, intervalMs = 100): WalCheckpointer {
  const data: CheckpointWorkerData = { path, intervalMs };
  // Its heap holds a few statements' results: keep the thread small.
  const worker = startDbWorker('wal-checkpoint-worker', data, { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 });
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
