import type { Worker } from 'node:worker_threads';
import type { BatchReply, BatchStatement, SqliteThreadData, ThreadRequest } from './sqlite-thread-worker.ts';
import type { SqliteConnections } from './sqlite-driver.ts';
import { startDbWorker } from './worker-module.ts';

export type { BatchStatement } from './sqlite-thread-worker.ts';

/** The thread could not take the batch (it could not start, or stopped): nothing was written. */
export class BatchWriterUnavailable extends Error {}

/** A batch that SQLite refused, rolled back: `code` is SQLite's (e.g. SQLITE_CONSTRAINT_UNIQUE). */
export class BatchWriteError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** A thread costs ~8 MiB: without checkpoints to run, it goes after this long without a batch (default). */
const IDLE_MS = 60_000;

/**
 * The one worker thread of an SQLite database on a file, with its own write connection, and its
 * two jobs (one thread rather than one each: a thread is ~8 MiB of the server's RSS):
 *
 * - **Batches.** Writes batches of statements atomically, so that their INSERTs and their COMMIT
 *   (for a 250-object POST, ~1,300 log write calls) no longer block the thread that answers
 *   requests: its reads go on meanwhile (WAL). The request thread's write lock is held while
 *   batches are in flight (taken after any open group commit has committed), so no other
 *   transaction of this process interleaves with them.
 * - **Checkpoints**, while turned on (see BackgroundCheckpoints in connection.ts): a PASSIVE one
 *   every interval, between batches, copying the log back into the database file.
 *
 * The thread runs while checkpoints are on, while a batch is in flight, and for `idleMs` after the
 * last batch; it starts with whichever job comes first, carrying the checkpoints' setting.
 */
export class SqliteThread {
  #worker: Worker | undefined;
  #pending = new Map<number, { worker: Worker; resolve: (written: boolean) => void; reject: (error: Error) => void }>();
  #nextId = 0;
  /**
   * The batches sharing one hold of the write lock, which the last of them to end releases; a
   * batch joins it unless the lock is held and someone else waits for it.
   */
  #run: { batches: number; holding: boolean; ready: Promise<void> } | undefined;
  /** Set from a batch's answer until `idleMs` later: a batch came recently. */
  #idleTimer: NodeJS.Timeout | undefined;
  #checkpointMs = 0;
  /** stop() was called: no new batch is taken; those asked for before still run. */
  #closing = false;
  /** stop() has the lock: no thread starts any more. */
  #stopped = false;

  constructor(
    private readonly path: string,
    private readonly connections: Pick<SqliteConnections, 'lock' | 'group' | 'afterWrite'>,
    /** The writer's wal_autocheckpoint now, which the thread's connection follows. */
    private readonly autocheckpoint: () => number,
    private readonly idleMs = IDLE_MS,
  ) {}

  /**
   * Runs `statements` in one transaction (BEGIN IMMEDIATE … COMMIT) on the worker's connection,
   * unless one of the SELECTs `unless`, run first in that transaction, answers a row: resolves true
   * when written, false when not. Rejects with BatchWriteError when SQLite refused a statement (all
   * rolled back), BatchWriterUnavailable when the thread is not there to run it (nothing written).
   */
  async write(statements: readonly BatchStatement[], unless: readonly BatchStatement[] = []): Promise<boolean> {
    if (this.#closing) throw new BatchWriterUnavailable('the database is closing');
    // Batches in flight under one hold of the lock reach the thread at once and run back to back.
    // Taking the lock per batch left the thread idle after each one until this thread's event
    // loop, busy with other requests, took the answer and passed the lock on.
    let run = this.#run;
    if (!run || (run.holding && this.connections.lock.wanted)) {
      const next = { batches: 0, holding: false, ready: this.#acquire().then(() => void (next.holding = true)) };
      this.#run = run = next;
    }
    run.batches++;
    try {
      await run.ready;
      const written = await this.#send({ id: this.#nextId++, statements, unless, autocheckpoint: this.autocheckpoint() });
      if (written) this.connections.afterWrite?.();
      return written;
    } finally {
      if (--run.batches === 0) {
        if (this.#run === run) this.#run = undefined;
        this.connections.lock.release();
      }
    }
  }

  /**
   * Checkpoints every `intervalMs` from now on; 0 turns them off (the thread then goes once no
   * batch came within `idleMs`). Throws when no thread could be started for them.
   */
  checkpointEvery(intervalMs: number): void {
    if (this.#stopped || intervalMs === this.#checkpointMs) return;
    this.#checkpointMs = intervalMs;
    const worker = this.#worker;
    if (!worker) {
      if (intervalMs === 0) return;
      try {
        this.#start();
      } catch (error) {
        this.#checkpointMs = 0;
        throw error;
      }
    } else if (intervalMs === 0 && this.#pending.size === 0 && this.#idleTimer === undefined) void this.#stopWorker();
    else worker.postMessage({ checkpointMs: intervalMs } satisfies ThreadRequest);
  }

  /** Waits for the batch in flight, then stops the thread; later batches are BatchWriterUnavailable. */
  async stop(): Promise<void> {
    this.#closing = true;
    const { lock } = this.connections;
    await lock.acquire();
    try {
      this.#stopped = true;
      this.#checkpointMs = 0;
      this.#clearIdle();
      await this.#stopWorker();
    } finally {
      lock.release();
    }
  }

  /** The write lock, with no group commit open (a pending group commits first). */
  async #acquire(): Promise<void> {
    const { lock, group } = this.connections;
    for (;;) {
      await lock.acquire();
      if (!group.open) return;
      lock.release();
      // (A group that fails rejects its own members; this batch only waits for it to end.)
      await group.committed().catch(() => {});
    }
  }

  #send(request: Extract<ThreadRequest, { statements: unknown }>): Promise<boolean> {
    if (this.#stopped) return Promise.reject(new BatchWriterUnavailable('the database is closed'));
    let worker: Worker;
    try {
      worker = this.#worker ?? this.#start();
    } catch (error) {
      return Promise.reject(new BatchWriterUnavailable(`no batch writer thread: ${String(error)}`));
    }
    this.#clearIdle();
    return new Promise<boolean>((resolve, reject) => {
      this.#pending.set(request.id, { worker, resolve, reject });
      // Kept alive while a batch is in flight, not while idle.
      worker.ref();
      worker.postMessage(request);
    });
  }

  #clearIdle(): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  #start(): Worker {
    const data: SqliteThreadData = { path: this.path, checkpointMs: this.#checkpointMs };
    // Its heap holds one batch's parameters (1,000 objects at most) and a few statements.
    const worker = startDbWorker('sqlite-thread-worker', data, { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 32 });
    worker.on('message', (reply: BatchReply) => {
      const waiter = this.#pending.get(reply.id);
      if (!waiter) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) {
        worker.unref();
        this.#idleTimer = setTimeout(() => {
          this.#idleTimer = undefined;
          if (this.#checkpointMs === 0) void this.#stopWorker();
        }, this.idleMs).unref();
      }
      if (reply.error) waiter.reject(new BatchWriteError(reply.error.message, reply.error.code));
      else waiter.resolve(reply.written === true);
    });
    // A thread that dies (or cannot open the database) fails what it had not answered, as not
    // written: its connection closed with the thread, which rolls back an open transaction. The next
    // batch starts a new thread, with the checkpoints if they are on; until then the writer's own
    // automatic checkpoint is their backstop.
    const lost = (reason: string) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const [id, waiter] of this.#pending) {
        if (waiter.worker !== worker) continue;
        this.#pending.delete(id);
        waiter.reject(new BatchWriterUnavailable(`the batch writer thread stopped: ${reason}`));
      }
    };
    worker.on('error', (error) => lost(String(error)));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    this.#worker = worker;
    return worker;
  }

  async #stopWorker(): Promise<void> {
    const worker = this.#worker;
    // Only an idle thread is stopped (stop() holds the write lock, the idle timer runs between batches).
    if (!worker || this.#pending.size > 0) return;
    this.#worker = undefined;
    worker.ref();
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ id: this.#nextId++, stop: true } satisfies ThreadRequest);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
    await worker.terminate();
  }
}
