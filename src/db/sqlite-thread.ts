import type { Worker } from 'node:worker_threads';
import { type SqliteConnections, WriteLock } from './sqlite-driver.ts';
import type { BatchReply, BatchStatement, SqliteThreadData, ThreadRequest } from './sqlite-thread-worker.ts';
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
 * - **Checkpoints**, while turned on (see BackgroundCheckpoints in connection.ts): one every
 *   interval, between batches, copying the log back into the database file.
 *
 * The thread does one of them at a time, in the order they take their turn (`#turn`). A batch
 * takes its turn before the write lock, so the lock is never held while a checkpoint (tens of ms
 * when bulk writes fill the log) keeps the thread busy: the request thread's small writes (a
 * download's count) wait for the batches in flight only. In the bench's reads beside bulk POSTs,
 * a download's count had also waited for the checkpoints: 50 ms at p99, against 15–19 ms now.
 *
 * The thread runs while checkpoints are on, while a batch is in flight, and for `idleMs` after the
 * last batch; it starts with whichever job comes first.
 */
export class SqliteThread {
  #worker: Worker | undefined;
  #pending = new Map<
    number,
    { worker: Worker; resolve: (reply: BatchReply) => void; reject: (error: Error) => void }
  >();
  #nextId = 0;
  /** The thread's turns: a batch, or a checkpoint. */
  readonly #turn = new WriteLock();
  #checkpointTimer: NodeJS.Timeout | undefined;
  /**
   * The batches sharing one hold of the write lock (and of the thread's turn), which the last of
   * them to end releases.
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
    private readonly connections: Pick<SqliteConnections, 'lock' | 'group' | 'beforeWrite' | 'afterWrite'>,
    private readonly log: {
      /** The writer's wal_autocheckpoint now, which the thread's connection follows. */
      autocheckpoint: () => number;
      /** The log's length, in pages, from which a checkpoint restarts it. */
      restartFrom: () => number;
    },
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
    // loop, busy with other requests, took the answer and passed the lock on (bulk POSTs 128–167
    // against 165–184 req/s). A batch joins only while nobody else
    // waits for the lock or the thread's turn.
    let run = this.#run;
    if (!run || (run.holding && (this.connections.lock.wanted || this.#turn.wanted))) {
      const next = {
        batches: 0,
        holding: false,
        ready: this.#acquire().then(() => {
          next.holding = true;
        }),
      };
      this.#run = run = next;
    }
    run.batches++;
    try {
      await run.ready;
      this.connections.beforeWrite?.();
      const written =
        (await this.#send({ id: this.#nextId++, statements, unless, autocheckpoint: this.log.autocheckpoint() }))
          .written === true;
      if (written) this.connections.afterWrite?.();
      return written;
    } finally {
      if (--run.batches === 0) {
        if (this.#run === run) this.#run = undefined;
        this.connections.lock.release();
        this.#turn.release();
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
    clearTimeout(this.#checkpointTimer);
    this.#checkpointTimer = undefined;
    if (intervalMs === 0) {
      if (this.#worker && this.#pending.size === 0 && this.#idleTimer === undefined) void this.#stopWorker();
      return;
    }
    if (!this.#worker) {
      try {
        this.#start();
      } catch (error) {
        this.#checkpointMs = 0;
        throw error;
      }
    }
    void this.#checkpoint();
  }

  /**
   * A checkpoint in the thread's turn, then the next one `#checkpointMs` later. It copies the log
   * without the write lock (PASSIVE), so writes go on meanwhile. But the log starts again from its
   * beginning only when a write finds all of it copied and no reader in it, which steady writes
   * and reads never left: so once the log is long, a second pass under the write lock copies what
   * was written meanwhile and waits for the readers (RESTART: about 1 ms plus a sync of the file).
   * Without that pass the log grew without bound (1.8 GB in 40 s of bulk POSTs); with the
   * commits' automatic checkpoint instead, each of those took the lock for the whole log (35–40 ms).
   */
  async #checkpoint(): Promise<void> {
    this.#checkpointTimer = undefined;
    await this.#turn.acquire();
    try {
      if (this.#checkpointMs > 0 && !this.#stopped) {
        const { log } = await this.#send({ id: this.#nextId++, checkpoint: 'PASSIVE' });
        if (log !== undefined && log >= this.log.restartFrom()) {
          await this.#lock();
          try {
            await this.#send({ id: this.#nextId++, checkpoint: 'RESTART' });
          } finally {
            this.connections.lock.release();
          }
        }
      }
    } catch {
      // The thread is gone: the next batch or checkpoint starts another one.
    } finally {
      this.#turn.release();
    }
    if (this.#checkpointMs > 0 && !this.#stopped && this.#checkpointTimer === undefined) {
      this.#checkpointTimer = setTimeout(() => void this.#checkpoint(), this.#checkpointMs).unref();
    }
  }

  /** Waits for the batch in flight, then stops the thread; later batches are BatchWriterUnavailable. */
  async stop(): Promise<void> {
    this.#closing = true;
    const { lock } = this.connections;
    await this.#turn.acquire();
    await lock.acquire();
    try {
      this.#stopped = true;
      this.#checkpointMs = 0;
      clearTimeout(this.#checkpointTimer);
      this.#clearIdle();
      await this.#stopWorker();
    } finally {
      lock.release();
      this.#turn.release();
    }
  }

  /**
   * The thread's turn, then the write lock. Both are taken at once when free, so that a write the
   * request thread asks for after this batch comes after it.
   */
  #acquire(): Promise<void> {
    if (this.#turn.held) return this.#turn.acquire().then(() => this.#lock());
    void this.#turn.acquire();
    return this.#lock();
  }

  /** The write lock, with no group commit open (a pending group commits first). */
  async #lock(): Promise<void> {
    const { lock, group } = this.connections;
    for (;;) {
      await lock.acquire();
      if (!group.open) return;
      lock.release();
      // (A group that fails rejects its own members; this batch only waits for it to end.)
      await group.committed().catch(() => {});
    }
  }

  #send(request: Extract<ThreadRequest, { statements: unknown } | { checkpoint: unknown }>): Promise<BatchReply> {
    if (this.#stopped) return Promise.reject(new BatchWriterUnavailable('the database is closed'));
    let worker: Worker;
    try {
      worker = this.#worker ?? this.#start();
    } catch (error) {
      return Promise.reject(new BatchWriterUnavailable(`no batch writer thread: ${String(error)}`));
    }
    this.#clearIdle();
    return new Promise<BatchReply>((resolve, reject) => {
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
    const data: SqliteThreadData = { path: this.path };
    // Its heap holds one batch's parameters (1,000 objects at most) and a few statements.
    const worker = startDbWorker('sqlite-thread-worker', data, {
      maxYoungGenerationSizeMb: 2,
      maxOldGenerationSizeMb: 32,
    });
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
      else waiter.resolve(reply);
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
