import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Schema } from './schema.ts';

/**
 * Rows of `table` are dead once `column` (milliseconds) is older than now − `keepMs`. Each feature
 * lists its own tables' (e.g. src/oauth/purge.ts); src/app.ts hands them all to the Purger, so the
 * storage layer names no feature's table.
 */
export interface ExpiringRows {
  table: string;
  /** Its primary key: rows are deleted by it, a batch at a time. */
  key: string;
  /** An expiry time (with `keepMs` 0), or a creation time with `keepMs` the rows' lifetime. Indexed, unless `scanned`. */
  column: string;
  keepMs?: number;
  /**
   * Not indexed (a hot write path moves it, see migration 015): a pass walks the table by key,
   * `batchSize` rows per statement, and deletes the expired rows of each such chunk.
   */
  scanned?: boolean;
}

export interface PurgeLimits {
  /** Rows per DELETE statement. */
  batchSize?: number;
  /** Statements per table per pass; what is left waits for the next pass. */
  maxBatches?: number;
}

/** Rows deleted per table. */
export type PurgeCounts = Record<string, number>;

/**
 * Deletes the dead rows of every table of `tables` as of `now`, in batches of `batchSize` rows chosen by
 * primary key, each its own short statement (so no lock is held for long), yielding to other work
 * between them. Several instances may run it at once: on PostgreSQL a batch skips rows another
 * purge has locked (SKIP LOCKED), and deleting a deleted row is a no-op anyway.
 */
export async function purgeExpired(
  db: Kysely<Schema>,
  tables: readonly ExpiringRows[],
  now: number,
  { batchSize = 1000, maxBatches = 100 }: PurgeLimits = {},
  shouldStop: () => boolean = () => false,
): Promise<PurgeCounts> {
  const postgres = dialectOf(db) === 'postgres';
  // Tables and columns come from the features' lists (or a test's), not from the schema's types.
  const anyTable = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
  const counts: PurgeCounts = {};
  for (const { table, key, column, keepMs = 0, scanned = false } of tables) {
    counts[table] = 0;
    let after: unknown;
    for (let batch = 0; batch < maxBatches && !shouldStop(); ) {
      let expired = anyTable
        .selectFrom(table)
        .select(key)
        .where(column, '<', now - keepMs);
      let chunkSize = 0;
      if (scanned) {
        const chunk = await anyTable
          .selectFrom(table)
          .select(key)
          .$if(after !== undefined, (query) => query.where(key, '>', after))
          .orderBy(key)
          .limit(batchSize)
          .execute();
        if (chunk.length === 0) break;
        chunkSize = chunk.length;
        after = chunk[chunk.length - 1]![key];
        expired = expired.where(
          key,
          'in',
          chunk.map((row) => row[key]),
        );
      } else {
        expired = expired.limit(batchSize);
      }
      const result = await anyTable
        .deleteFrom(table)
        .where(key, 'in', postgres ? expired.forUpdate().skipLocked() : expired)
        .executeTakeFirst();
      const deleted = Number(result.numDeletedRows);
      counts[table] += deleted;
      // A walked chunk counts as a batch only when it deleted something: the walk goes on to the
      // table's end; what maxBatches bounds is the deleting.
      if (!scanned || deleted > 0) batch++;
      if (scanned ? chunkSize < batchSize : deleted < batchSize) break;
      await nextTurn();
    }
  }
  return counts;
}

interface Logger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export interface PurgerOptions extends PurgeLimits {
  /** Time between passes, varied by ±25% so instances started together spread out. */
  intervalMs?: number;
}

/** Runs purgeExpired in the background, one pass at a time, until stopped. */
export class Purger {
  private timer: NodeJS.Timeout | undefined;
  private readonly passes = new Set<Promise<unknown>>();
  private stopped = false;
  private readonly intervalMs: number;

  constructor(
    private readonly db: Kysely<Schema>,
    /** Every feature's expiring rows. */
    readonly tables: readonly ExpiringRows[],
    private readonly log: Logger,
    private readonly options: PurgerOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 10 * 60 * 1000;
  }

  /** Schedules passes; the timer never keeps the process alive. */
  start(): void {
    if (this.stopped || this.timer) return;
    this.schedule();
  }

  /** One pass now (as of `now`), beside any scheduled one; answers what it deleted. */
  runOnce(now = Date.now()): Promise<PurgeCounts> {
    const pass = purgeExpired(this.db, this.tables, now, this.options, () => this.stopped);
    const settled = pass.catch(() => {}).finally(() => this.passes.delete(settled));
    this.passes.add(settled);
    return pass;
  }

  /** Cancels the next pass and waits for running ones, which end after their current batch. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await Promise.all(this.passes);
  }

  private schedule(): void {
    const delay = this.intervalMs * (0.75 + Math.random() / 2);
    this.timer = setTimeout(() => void this.scheduledPass(), delay).unref();
  }

  private async scheduledPass(): Promise<void> {
    try {
      const counts = await this.runOnce();
      const purged = Object.fromEntries(Object.entries(counts).filter(([, count]) => count > 0));
      if (Object.keys(purged).length > 0) this.log.info({ purged }, 'expired rows purged');
    } catch (err) {
      if (!this.stopped) this.log.warn({ err }, 'purging expired rows failed; the next pass tries again');
    }
    if (!this.stopped) this.schedule();
  }
}
