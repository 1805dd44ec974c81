import type BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
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

  constructor(readonly connection: BetterSqlite3.Database, max = 500) {
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
 * The two connections of an SQLite database in WAL mode: reads go to `reader` and never wait
 * for a write transaction (WAL lets a reader see the last commit while a writer works); writes
 * and every transaction go to `writer`, one transaction at a time under `lock`.
 */
export interface SqliteConnections {
  writer: StatementCache;
  reader: StatementCache;
  lock: WriteLock;
  /** Called after each commit, and after each write outside a transaction. */
  afterWrite?: () => void;
}

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
    const { writer, reader, lock } = this.connections;
    if (this.inTransaction) return run(writer, query);
    if (SelectQueryNode.is(query.query)) return run(reader, query);
    // A write of its own must not land inside another caller's open transaction.
    if (!lock.held) return this.#loneWrite(query);
    await lock.acquire();
    try {
      return this.#loneWrite(query);
    } finally {
      lock.release();
    }
  }

  #loneWrite<R>(query: CompiledQuery): QueryResult<R> {
    const result = run(this.connections.writer, query);
    this.connections.afterWrite?.();
    return result;
  }

  async *streamQuery(): AsyncIterableIterator<QueryResult<any>> {
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

  async beginTransaction(connection: Connection): Promise<void> {
    await this.connections.lock.acquire();
    try {
      this.connections.writer.prepare('begin').run();
    } catch (error) {
      this.connections.lock.release();
      throw error;
    }
    connection.inTransaction = true;
  }

  async commitTransaction(connection: Connection): Promise<void> {
    this.#end(connection, 'commit');
  }

  async rollbackTransaction(connection: Connection): Promise<void> {
    this.#end(connection, 'rollback');
  }

  #end(connection: Connection, how: 'commit' | 'rollback'): void {
    try {
      this.connections.writer.prepare(how).run();
      if (how === 'commit') this.connections.afterWrite?.();
    } catch (error) {
      // A failed commit leaves the transaction open: roll it back so the lock can go.
      if (this.connections.writer.connection.inTransaction) this.connections.writer.connection.exec('rollback');
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
    const { reader, writer } = this.connections;
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
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
}
