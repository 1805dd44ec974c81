import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  type CompiledQuery,
  createQueryId,
  Kysely,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  sql,
} from 'kysely';
import type pg from 'pg';
import { DatabaseOutage } from './outage.ts';
import type { Schema } from './schema.ts';
import {
  CommitGroup,
  type SqliteConnections,
  SqliteConnectionsDialect,
  StatementCache,
  selectArrays,
  selectRows,
  TurnReader,
  WriteLock,
} from './sqlite-driver.ts';
import { type BatchStatement, SqliteThread } from './sqlite-thread.ts';
import { configureWriter } from './sqlite-writer-settings.ts';

export type DatabaseTarget = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export interface Database {
  db: Kysely<Schema>;
  /**
   * Runs a SELECT outside any transaction and answers its rows as arrays of column values, in
   * the order of its select list (better-sqlite3's raw mode on the read connection; pg's
   * rowMode 'array'): a long page then builds no object per row. `prepared`: as for selectRows.
   */
  selectArrays(sql: string, parameters: readonly unknown[], prepared?: boolean): Promise<unknown[][]>;
  /**
   * Runs a SELECT outside any transaction and answers its rows as objects, straight through the
   * driver (the read connection on SQLite, the pool on PostgreSQL) rather than Kysely's executor,
   * whose connection handling is several awaits per query: on a single-object GET, as much as
   * the point lookup itself. For compiled statements of the root instance only (reusableQuery).
   * `prepared`: the text is one of a bounded set, run again and again (see preparedStatement).
   */
  selectRows(sql: string, parameters: readonly unknown[], prepared?: boolean): Promise<unknown[]>;
  /**
   * Runs one statement that writes, on its own (no transaction around it), and answers the rows it
   * returns. PostgreSQL: straight through the pool, like selectRows. SQLite: through Kysely's
   * executor, whose driver queues the write on the write lock and its commit group.
   */
  writeRows(query: CompiledQuery, parameters: readonly unknown[], prepared?: boolean): Promise<unknown[]>;
  /**
   * SQLite on a file only: runs `statements` (compiled SQL and their parameters) as one
   * transaction on a thread of their own, so that a bulk write's statements and its commit do not
   * block the request thread (see sqlite-thread.ts), unless one of the SELECTs `unless`, run first
   * in that transaction, answers a row. Resolves true when written, false when not; rejects with
   * BatchWriteError (SQLite's code) when a statement fails, all undone, or BatchWriterUnavailable
   * when the thread is not there (nothing written). Undefined elsewhere: PostgreSQL's writes never
   * block the thread.
   */
  writeBatch?: (statements: readonly BatchStatement[], unless?: readonly BatchStatement[]) => Promise<boolean>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /**
   * Whether the database is out of reach now (see isDatabaseUnreachable): whoever meets such a
   * failure notes it here, and the connection notes the database back when it opens a connection.
   */
  outage: DatabaseOutage;
  /** Connections of the pool by state (SQLite: its writer, busy while a transaction is open, and its reader). */
  poolStats(): { total: number; idle: number; waiting: number };
  /**
   * Copies the database, consistently, while it is in use (SQLite's online backup API), to a new
   * file at `path`. PostgreSQL: throws BackupError (pg_dump does that job).
   */
  backup(path: string): Promise<void>;
  close(): Promise<void>;
}

/** A backup that cannot be made as asked (PostgreSQL, or the target file exists). */
export class BackupError extends Error {}

/** The Database of each root Kysely instance openDatabase made (not its transactions, nor instances with plugins). */
const databases = new WeakMap<Kysely<Schema>, Database>();

/** The Database whose root instance `db` is; undefined for a transaction or any other instance. */
export function databaseOf(db: Kysely<Schema>): Database | undefined {
  return databases.get(db);
}

export interface OpenOptions {
  /**
   * SQLite, once checkpoints run in the thread: the log's length, in pages, from which they restart
   * it (default 8,192: 32 MiB); commits checkpoint it themselves only past four times that.
   */
  walBacklogFrames?: number;
  /** SQLite: the number of writes after which checkpoints move to a worker thread (default 256). */
  checkpointWorkerAfterWrites?: number;
  /** SQLite: how long the database's thread stays after a batch when no checkpoints keep it (default 60 s). */
  threadIdleMs?: number;
}

export function openDatabase(target: DatabaseTarget, options: OpenOptions = {}): Database {
  const database = open(target, options);
  databases.set(database.db, database);
  return database;
}

function open(target: DatabaseTarget, options: OpenOptions): Database {
  if (target.kind === 'sqlite') {
    const connection = sqliteConnection(target.path);
    // An in-memory database exists once per connection: there, one connection does both jobs.
    const reader = target.path === ':memory:' ? connection : sqliteConnection(target.path, { readonly: true });
    const writer = new StatementCache(connection);
    const lock = new WriteLock();
    const turnReader = reader === connection ? undefined : new TurnReader(reader);
    const connections: SqliteConnections = { writer, reader: turnReader ?? writer, lock, group: undefined! };
    connections.group = new CommitGroup(connections);
    const db = new Kysely<Schema>({ dialect: new SqliteConnectionsDialect(connections) });
    // (An in-memory database exists only on its own connection: no thread could reach it.) The
    // thread's commits checkpoint at the same length of log as the request thread's writer: past
    // 1,000 pages while no checkpoints run in the background, otherwise only as the backstop.
    const thread: SqliteThread | undefined =
      target.path === ':memory:'
        ? undefined
        : new SqliteThread(
            target.path,
            connections,
            { autocheckpoint: () => checkpoints!.autocheckpointFrames, restartFrom: () => checkpoints!.restartFrames },
            options.threadIdleMs,
          );
    const checkpoints: BackgroundCheckpoints | undefined =
      thread && new BackgroundCheckpoints(connection, thread, options);
    // (A file database has both the turn reader and the checkpoints; an in-memory one neither.)
    if (turnReader) {
      connections.beforeWrite = turnReader.end;
      connections.afterWrite = () => {
        turnReader.end();
        checkpoints?.noteWrite();
      };
    }
    const outage = new DatabaseOutage();
    return {
      db,
      outage,
      writeBatch: thread && ((statements, unless) => thread.write(statements, unless)),
      selectArrays: async (text, parameters) => selectArrays(connections.reader, text, parameters),
      selectRows: async (text, parameters) => selectRows(connections.reader, text, parameters),
      // (better-sqlite3 prepares each text once anyway: `prepared` changes nothing here.)
      writeRows: async (query, parameters) =>
        (await db.executeQuery({ ...query, parameters, queryId: createQueryId() })).rows,
      ping: () => ping(db, outage),
      poolStats: () => {
        if (!connection.open) return { total: 0, idle: 0, waiting: 0 };
        const total = reader === connection ? 1 : 2;
        return { total, idle: connections.lock.held ? total - 1 : total, waiting: 0 };
      },
      async backup(path) {
        if (existsSync(path)) throw new BackupError(`${path} exists already; choose a new file`);
        // Written beside the target and renamed when complete, so a failed backup leaves no
        // half-written file that looks like a backup.
        const partial = `${path}.partial-${process.pid}`;
        try {
          await connection.backup(partial);
          renameSync(partial, path);
        } finally {
          rmSync(partial, { force: true });
        }
      },
      async close() {
        // The thread first: stop() waits for it to exit. Stopping the checkpoints first would have
        // them stop an idle thread without waiting (checkpointEvery(0)), and close() return while it
        // still holds the database open; after it, their stop only hands the writer its own
        // automatic checkpoint back.
        await thread?.stop();
        checkpoints?.stop();
        await db.destroy();
      },
    };
  }
  // (pg is loaded only here, on first use: see postgres-pool.ts.)
  let pool: pg.Pool | undefined;
  const outage = new DatabaseOutage();
  const poolReady = import('./postgres-pool.ts').then(({ postgresPool }) => {
    pool = postgresPool(target.url);
    pool.on('connect', () => outage.reachable());
    return pool;
  });
  const withPool = <T>(run: (pool: pg.Pool) => Promise<T>): Promise<T> => (pool ? run(pool) : poolReady.then(run));
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: () => poolReady.then(namingStatements) }) });
  return {
    db,
    outage,
    selectArrays: (text, parameters, prepared) =>
      withPool((pool) => queryRows(pool, text, parameters, prepared, 'array') as Promise<unknown[][]>),
    selectRows: (text, parameters, prepared) => withPool((pool) => queryRows(pool, text, parameters, prepared)),
    writeRows: (query, parameters, prepared) => withPool((pool) => queryRows(pool, query.sql, parameters, prepared)),
    ping: () => ping(db, outage),
    poolStats: () =>
      pool
        ? { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }
        : { total: 0, idle: 0, waiting: 0 },
    async backup() {
      throw new BackupError('On PostgreSQL, back up with pg_dump (and restore with pg_restore or psql)');
    },
    async close() {
      await db.destroy();
      // Kysely ends the pool only when it ran a query itself; the raw reads above may have opened it alone.
      const opened = await poolReady;
      if (!opened.ending) await opened.end();
    },
  };
}

/**
 * Names for the statements run again and again (reusableQuery's templates), derived from their
 * text. A named statement is parsed once per connection, and after a few runs PostgreSQL keeps a
 * generic plan for it; an unnamed one is parsed and planned on every run, which for the token
 * grants' WITH statements cost the database as much CPU as the rest of the request did.
 * `generation` starts a new set of names when a kept statement no longer fits the schema (see
 * queryRows).
 */
const statementNames = new Map<string, string>();
let generation = 0;
/** The texts run through Kysely's executor (in transactions) as named statements too (keepPrepared). */
const preparable = new Set<string>();

/**
 * Declares `text` one of a bounded set of statements run again and again (reusableQuery's
 * templates): on PostgreSQL it then runs as a named statement in transactions as well, where
 * Kysely's executor would send it unnamed, parsed and planned anew every time. The bulk POST's
 * INSERTs are the case in point: five 50-row statements a request, ~0.2 ms of planning each.
 */
export function keepPrepared(text: string): void {
  preparable.add(text);
}

/** Every connection prepares each statement anew, under new names. */
function forgetStatementNames(): void {
  generation++;
  statementNames.clear();
}

function preparedStatement(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `r${generation}_${createHash('sha1').update(text).digest('base64url')}`;
    statementNames.set(text, name);
  }
  return name;
}

async function queryRows(
  pool: pg.Pool,
  text: string,
  parameters: readonly unknown[],
  prepared = false,
  rowMode?: 'array',
): Promise<unknown[]> {
  const values = [...parameters];
  // (pg's types take rowMode only in an overload of its own, answering arrays.)
  const config = (name?: string) => ({ name, text, values, rowMode }) as pg.QueryConfig;
  if (!prepared) return (await pool.query(config())).rows;
  const run = async () => (await pool.query(config(preparedStatement(text)))).rows;
  try {
    return await run();
  } catch (error) {
    // A migration run by another instance changed a table that a kept statement reads with `*`:
    // PostgreSQL refuses that statement on every connection that prepared it ("cached plan must not
    // change result type"). New names have every connection prepare the statements anew.
    if (!isStalePlan(error)) throw error;
    forgetStatementNames();
    return run();
  }
}

/**
 * The pool as Kysely's driver sees it: a statement declared with keepPrepared runs as a named
 * statement. (One wrapper per client, so that the driver keeps one connection object per client.)
 */
function namingStatements(pool: pg.Pool): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client);
    if (!wrapper) {
      const query = (text: unknown, parameters?: readonly unknown[]) =>
        typeof text === 'string' && preparable.has(text)
          ? namedQuery(client, text, parameters ?? [])
          : client.query(text as never, parameters as unknown[]);
      // (pg-pool gives a client a new release() at each checkout: looked up when called.)
      wrapper = { query: query as unknown as PostgresPoolClient['query'], release: () => client.release() };
      wrappers.set(client, wrapper);
    }
    return wrapper;
  };
  return { connect: async () => wrap(await pool.connect()), end: () => pool.end() };
}

async function namedQuery(
  client: pg.PoolClient,
  text: string,
  parameters: readonly unknown[],
): Promise<pg.QueryResult> {
  try {
    return await client.query({ name: preparedStatement(text), text, values: [...parameters] });
  } catch (error) {
    // In a transaction the statement cannot simply be run again (see queryRows): the request
    // fails, and new names have the next one prepare it anew.
    if (isStalePlan(error)) forgetStatementNames();
    throw error;
  }
}

function isStalePlan(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  return code === '0A000' && message === 'cached plan must not change result type';
}

async function ping(db: Kysely<Schema>, outage: DatabaseOutage): Promise<void> {
  await sql`select 1`.execute(db);
  outage.reachable();
}

function sqliteConnection(path: string, options: { readonly?: boolean } = {}): BetterSqlite3.Database {
  if (options.readonly) {
    const connection = new BetterSqlite3(path, { readonly: true });
    connection.pragma('busy_timeout = 5000');
    return connection;
  }
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const connection = new BetterSqlite3(path);
  configureWriter(connection);
  return connection;
}

/** SQLite's default for wal_autocheckpoint. */
const SQLITE_AUTOCHECKPOINT = 1000;

/**
 * The database's worker thread (sqlite-thread.ts) copies the log back into the database file, so
 * commits no longer do it, once the database is written to steadily: from the 256th write until
 * five minutes without one (an idle server keeps no thread for it).
 * The thread's checkpoints also restart the log once it is `walBacklogFrames` long (see
 * SqliteThread.#checkpoint). The writers' own automatic checkpoint stays as a backstop, at four
 * times that: it takes the write lock for the whole log (35–40 ms at 8,192 pages), which every
 * write waiting meanwhile waits out.
 */
class BackgroundCheckpoints {
  static readonly IDLE_MS = 5 * 60_000;
  static readonly INTERVAL_MS = 100;
  /** The log's length, in pages, past which a commit checkpoints it (the thread's connection follows it). */
  autocheckpointFrames = SQLITE_AUTOCHECKPOINT;
  /** The log's length, in pages, from which the thread's checkpoints restart it (`walBacklogFrames`). */
  readonly restartFrames: number;
  #writes = 0;
  #lastWrite = 0;
  #on = false;
  #idleCheck: NodeJS.Timeout | undefined;

  readonly #startAfterWrites: number;

  constructor(
    private readonly writer: BetterSqlite3.Database,
    private readonly thread: SqliteThread,
    options: OpenOptions,
  ) {
    this.restartFrames = options.walBacklogFrames ?? 8192;
    this.#startAfterWrites = options.checkpointWorkerAfterWrites ?? 256;
    // The log file keeps its length when restarted; this bounds what stays on disk.
    writer.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
  }

  /** After a committed write; never throws (the write it follows has succeeded). */
  noteWrite(): void {
    this.#lastWrite = Date.now();
    if (this.#on || ++this.#writes < this.#startAfterWrites) return;
    try {
      this.#start();
    } catch {
      // No thread to be had: the writer's own automatic checkpoint goes on as before.
      this.#writes = 0;
    }
  }

  #start(): void {
    this.thread.checkpointEvery(BackgroundCheckpoints.INTERVAL_MS);
    this.#on = true;
    this.autocheckpointFrames = 4 * this.restartFrames;
    this.writer.pragma(`wal_autocheckpoint = ${this.autocheckpointFrames}`);
    this.#idleCheck = setInterval(() => {
      if (Date.now() - this.#lastWrite > BackgroundCheckpoints.IDLE_MS) this.stop();
    }, BackgroundCheckpoints.IDLE_MS / 5).unref();
  }

  /** Checkpoints back in the writer's commits (the thread goes unless a batch keeps it). */
  stop(): void {
    if (!this.#on) return;
    this.#on = false;
    this.#writes = 0;
    clearInterval(this.#idleCheck);
    this.thread.checkpointEvery(0);
    this.autocheckpointFrames = SQLITE_AUTOCHECKPOINT;
    if (this.writer.open) this.writer.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT}`);
  }
}
