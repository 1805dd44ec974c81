import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type SqliteDatabase } from 'kysely';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import type { Schema } from './schema.ts';

export type DatabaseKind = 'sqlite' | 'postgres';
export type DatabaseTarget = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export interface Database {
  db: Kysely<Schema>;
  kind: DatabaseKind;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /** Connections of the pool by state (SQLite: its one connection, never waited for). */
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

// int8 (COUNT(*), BIGINT millisecond timestamps) arrives as a string by default;
// every value we keep in one fits a double exactly.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export function openDatabase(target: DatabaseTarget): Database {
  if (target.kind === 'sqlite') {
    const connection = sqliteConnection(target.path);
    const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: withStatementCache(connection) }) });
    return {
      db,
      kind: 'sqlite',
      ping: () => ping(db),
      poolStats: () => ({ total: connection.open ? 1 : 0, idle: connection.open ? 1 : 0, waiting: 0 }),
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
      close: () => db.destroy(),
    };
  }
  const pool = postgresPool(target.url);
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    kind: 'postgres',
    ping: () => ping(db),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async backup() {
      throw new BackupError('On PostgreSQL, back up with pg_dump (and restore with pg_restore or psql)');
    },
    close: () => db.destroy(),
  };
}

async function ping(db: Kysely<Schema>): Promise<void> {
  await sql`select 1`.execute(db);
}

function sqliteConnection(path: string): BetterSqlite3.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const connection = new BetterSqlite3(path);
  connection.pragma('journal_mode = WAL');
  connection.pragma('synchronous = NORMAL');
  connection.pragma('foreign_keys = ON');
  connection.pragma('busy_timeout = 5000');
  return connection;
}

type Statement = ReturnType<SqliteDatabase['prepare']> & { busy?: boolean };

/**
 * Kysely prepares every query anew, which was the largest single cost of a simple GET on SQLite.
 * The service's queries are a small fixed set of SQL texts, so prepared statements are kept and
 * reused; one still iterating (a stream) is never handed out twice.
 */
function withStatementCache(connection: BetterSqlite3.Database, max = 500): SqliteDatabase {
  const statements = new LRUCache<string, Statement>({ max });
  return {
    close: () => connection.close(),
    prepare(text: string) {
      const cached = statements.get(text);
      if (cached && !cached.busy) return cached;
      const statement = connection.prepare(text) as Statement;
      if (!cached) statements.set(text, statement);
      return statement;
    },
  };
}

function postgresPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 5000 });
  // An idle client losing its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  return pool;
}
