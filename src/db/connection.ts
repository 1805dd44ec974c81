import { mkdirSync } from 'node:fs';
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
  close(): Promise<void>;
}

// int8 (COUNT(*), BIGINT millisecond timestamps) arrives as a string by default;
// every value we keep in one fits a double exactly.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export function openDatabase(target: DatabaseTarget): Database {
  const db = target.kind === 'sqlite' ? new Kysely<Schema>({ dialect: sqliteDialect(target.path) }) : postgres(target.url);
  return {
    db,
    kind: target.kind,
    async ping() {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

function sqliteDialect(path: string): SqliteDialect {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const connection = new BetterSqlite3(path);
  connection.pragma('journal_mode = WAL');
  connection.pragma('synchronous = NORMAL');
  connection.pragma('foreign_keys = ON');
  connection.pragma('busy_timeout = 5000');
  return new SqliteDialect({ database: withStatementCache(connection) });
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

function postgres(url: string): Kysely<Schema> {
  const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 5000 });
  // An idle client losing its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  return new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
}
