import type BetterSqlite3 from 'better-sqlite3';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import { LRUCache } from 'lru-cache';

/**
 * One writer at a time, waited for without blocking the thread. Held only for a whole
 * transaction (and by a lone write arriving while one is open), never by a read.
 */
export class WriteLock {
  #held = false;
  #waiting: Array<() => void> = [];

  get held(): boolean {
    return this.#held;
  }

  /** Someone waits for the lock. */
  get wanted(): boolean {
    return this.#waiting.length > 0;
  }

  /** Resolves once the lock is this caller's. */
  acquire(): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    // Handed straight to the next waiter, so nobody slips in between.
    if (next) next();
    else this.#held = false;
  }
}

/**
 * Kysely prepares every query anew, which was the largest single cost of a simple GET on SQLite.
 * The service's queries are a small fixed set of SQL texts, so prepared statements are kept and
 * reused, per connection.
 */
export class StatementCache {
  readonly #statements: LRUCache<string, BetterSqlite3.Statement>;

  constructor(
    readonly connection: BetterSqlite3.Database,
    max = 500,
  ) {
    this.#statements = new LRUCache({ max });
  }

  prepare(text: string): BetterSqlite3.Statement {
    const cached = this.#statements.get(text);
    if (cached) return cached;
    const statement = this.connection.prepare(text);
    this.#statements.set(text, statement);
    return statement;
  }
}

/**
 * The reader connection's statements, run in one read transaction per event-loop turn. On its own
 * each statement is a transaction, whose start and end lock and unlock the database and its log:
 * four system calls, which were as much of a v4 GET's kernel time as its answer's write (2 × 4.7
 * µs of CPU for the bearer and row lookups). Reads of one turn (one request's, and those of the
 * requests that arrived together) share a snapshot taken at the turn's first read, which ends when
 * the turn does (setImmediate), and when this process begins or commits a write (`end`, from
 * beforeWrite and afterWrite): a read after a write always sees it, and no snapshot of this
 * process keeps a write from starting the log afresh once it is all copied back.
 */
export class TurnReader extends StatementCache {
  readonly #begin: BetterSqlite3.Statement;
  readonly #commit: BetterSqlite3.Statement;
  #open = false;

  constructor(connection: BetterSqlite3.Database) {
    super(connection);
    this.#begin = connection.prepare('begin');
    this.#commit = connection.prepare('commit');
  }

  override prepare(text: string): BetterSqlite3.Statement {
    if (!this.#open) {
      this.#begin.run();
      this.#open = true;
      // (A pending immediate also keeps the loop's poll from waiting while the snapshot is held.)
      setImmediate(this.end);
    }
    return super.prepare(text);
  }

  /** Ends the turn's read transaction: the next read sees every commit made until then. */
  readonly end = (): void => {
    if (!this.#open) return;
    this.#open = false;
    try {
      this.#commit.run();
    } catch {
      // Closed meanwhile (which ended it), or a statement still running: nothing was written to keep.
      try {
        if (this.connection.open && this.connection.inTransaction) this.connection.exec('rollback');
      } catch {
        // (The connection is gone.)
      }
    }
  };
}

/**
 * Group commit: the write transactions of one event-loop turn share one COMMIT. A commit writes a
 * log frame for every page the transaction dirtied; transactions of the same kind (token grants)
 * dirty many of the same pages (the upper levels and right edges of the indexes), so one commit
 * for all of them writes fewer frames, and pays a commit's fixed cost once (issue 21: 0.63 × the
 * CPU per token grant). Each transaction runs in a savepoint of the shared one
 * (its rollback undoes only its own work) and its commit resolves only once the shared COMMIT is
 * done, so nobody answers before its writes are durable; the shared COMMIT comes at the end of the
 * turn (setImmediate), after whichever transaction is still running then.
 */
export class CommitGroup {
  /** BEGIN issued, the COMMIT still to come. */
  open = false;
  /** The shared transaction ended otherwise (an error that rolls back a whole transaction): the members' writes are lost. */
  broken: Error | undefined;
  #waiting: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  #scheduled = false;

  constructor(
    private readonly connections: Pick<SqliteConnections, 'writer' | 'lock' | 'beforeWrite' | 'afterWrite'>,
  ) {}

  /** Joins the shared transaction, opening it if needed; call with the lock held. */
  join(): void {
    if (this.open && !this.connections.writer.connection.inTransaction) this.#breakOff();
    if (this.open) return;
    this.connections.beforeWrite?.();
    this.connections.writer.prepare('begin').run();
    this.open = true;
    this.broken = undefined;
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => void this.#flush());
    }
  }

  /** Resolves when the shared transaction is committed (rejects when it is not). */
  committed(): Promise<void> {
    if (this.open && !this.connections.writer.connection.inTransaction) this.#breakOff();
    if (this.broken) return Promise.reject(this.broken);
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  #breakOff(): void {
    this.open = false;
    this.broken = new Error('the shared write transaction was rolled back by SQLite');
    for (const waiter of this.#waiting.splice(0)) waiter.reject(this.broken);
  }

  async #flush(): Promise<void> {
    const { writer, lock } = this.connections;
    await lock.acquire();
    this.#scheduled = false;
    const waiting = this.#waiting.splice(0);
    try {
      if (!this.open) {
        // (A group that broke off rejected its members already; nobody else can be waiting.)
        for (const waiter of waiting) waiter.reject(this.broken ?? new Error('no shared write transaction to commit'));
        return;
      }
      this.open = false;
      if (!writer.connection.inTransaction) throw new Error('the shared write transaction was rolled back by SQLite');
      writer.prepare('commit').run();
      this.connections.afterWrite?.();
      for (const waiter of waiting) waiter.resolve();
    } catch (error) {
      // A failed commit leaves the transaction open: roll it back so the next group starts clean.
      if (writer.connection.inTransaction) writer.connection.exec('rollback');
      for (const waiter of waiting) waiter.reject(error);
    } finally {
      lock.release();
    }
  }
}

/**
 * The two connections of an SQLite database in WAL mode: reads go to `reader` and never wait
 * for a write transaction (WAL lets a reader see the last commit while a writer works); writes
 * and every transaction go to `writer`, one transaction at a time under `lock`, committed in
 * groups (`group`).
 */
export interface SqliteConnections {
  writer: StatementCache;
  reader: StatementCache;
  lock: WriteLock;
  group: CommitGroup;
  /** Called before each write transaction begins (and each write outside one), and after each commit. */
  beforeWrite?: () => void;
  afterWrite?: () => void;
}

// biome-ignore lint/suspicious/noExplicitAny: Kysely's driver interface types rows as any
function run(statements: StatementCache, { sql, parameters }: CompiledQuery): QueryResult<any> {
  const statement = statements.prepare(sql);
  if (statement.reader) return { rows: statement.all(parameters as unknown[]) };
  const { changes, lastInsertRowid } = statement.run(parameters as unknown[]);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/** A SELECT's rows as objects, on `statements`' connection. */
export function selectRows(statements: StatementCache, sql: string, parameters: readonly unknown[]): unknown[] {
  return statements.prepare(sql).all(parameters as unknown[]);
}

/** A SELECT's rows as arrays of column values (raw mode), in the order of its select list. */
export function selectArrays(statements: StatementCache, sql: string, parameters: readonly unknown[]): unknown[][] {
  const statement = statements.prepare(sql);
  // The cached statement is shared with the object-row reads of the same text: raw only for this call.
  statement.raw(true);
  try {
    return statement.all(parameters as unknown[]) as unknown[][];
  } finally {
    statement.raw(false);
  }
}

class Connection implements DatabaseConnection {
  inTransaction = false;

  constructor(private readonly connections: SqliteConnections) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const { writer, reader, lock, group } = this.connections;
    if (this.inTransaction) return run(writer, query);
    if (SelectQueryNode.is(query.query)) return run(reader, query);
    // A write of its own must not land inside another caller's open transaction.
    if (!lock.held && !group.open) return this.#loneWrite(query);
    await lock.acquire();
    let result: QueryResult<R>;
    try {
      if (!group.open) return this.#loneWrite(query);
      // Inside the shared transaction (a statement is atomic on its own): done once that commits.
      result = run(writer, query);
    } finally {
      lock.release();
    }
    await group.committed();
    return result;
  }

  #loneWrite<R>(query: CompiledQuery): QueryResult<R> {
    this.connections.beforeWrite?.();
    const result = run(this.connections.writer, query);
    this.connections.afterWrite?.();
    return result;
  }

  // biome-ignore lint/suspicious/noExplicitAny: Kysely's driver interface types rows as any
  streamQuery(): AsyncIterableIterator<QueryResult<any>> {
    throw new Error('streaming is not used with SQLite here');
  }
}

class SqliteConnectionsDriver implements Driver {
  /**
   * Handles given back, reused: Kysely acquires one per query and files each new one in a WeakSet,
   * which showed in the profile of every simple GET. (Each in use is one caller's: a transaction's
   * flag must not be seen by another caller's query.)
   */
  readonly #idle: Connection[] = [];

  constructor(private readonly connections: SqliteConnections) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.#idle.pop() ?? new Connection(this.connections);
  }

  // Each transaction is a savepoint of the group's shared one (see CommitGroup).
  async beginTransaction(connection: Connection): Promise<void> {
    const { lock, group, writer } = this.connections;
    await lock.acquire();
    try {
      group.join();
      writer.prepare('savepoint member').run();
    } catch (error) {
      lock.release();
      throw error;
    }
    connection.inTransaction = true;
  }

  async commitTransaction(connection: Connection): Promise<void> {
    this.#end(connection, 'release member');
    await this.connections.group.committed();
  }

  async rollbackTransaction(connection: Connection): Promise<void> {
    this.#end(connection, 'rollback to member');
  }

  #end(connection: Connection, how: 'release member' | 'rollback to member'): void {
    const { writer } = this.connections;
    try {
      if (writer.connection.inTransaction) {
        writer.prepare(how).run();
        if (how === 'rollback to member') writer.prepare('release member').run();
      }
    } catch (error) {
      // Undo this member's work; the group's other members stay.
      try {
        if (writer.connection.inTransaction) writer.connection.exec('rollback to member; release member');
      } catch {
        // The savepoint is gone with the transaction: the group notices (CommitGroup.committed).
      }
      throw error;
    } finally {
      connection.inTransaction = false;
      this.connections.lock.release();
    }
  }

  async releaseConnection(connection: Connection): Promise<void> {
    if (!connection.inTransaction && this.#idle.length < 64) this.#idle.push(connection);
  }

  async destroy(): Promise<void> {
    const { reader, writer, group } = this.connections;
    // The last group's commit comes first.
    if (group.open) await group.committed().catch(() => {});
    if (reader instanceof TurnReader) reader.end();
    if (reader.connection !== writer.connection) reader.connection.close();
    writer.connection.close();
  }
}

/** Kysely's SQLite dialect on the reader and writer connections of `connections`. */
export class SqliteConnectionsDialect implements Dialect {
  constructor(private readonly connections: SqliteConnections) {}
  createDriver(): Driver {
    return new SqliteConnectionsDriver(this.connections);
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
  createAdapter() {
    return new SqliteAdapter();
  }
  // biome-ignore lint/suspicious/noExplicitAny: Kysely's dialect interface takes Kysely<any>
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
}
