import { type Kysely, PostgresAdapter, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Schema } from './schema.ts';

/** The SQL dialect a connection speaks. */
export type Dialect = 'sqlite' | 'postgres';

/**
 * Which dialect `db` (a Kysely instance or a transaction of one) speaks: the one way the code asks,
 * so that dialect differences stay in src/db and read the same everywhere.
 */
export function dialectOf(db: Kysely<Schema>): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/**
 * The LIKE pattern for "contains `text`": the client's % and _ match themselves. A value, so a
 * compiled query can take it as a parameter.
 */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
}

/**
 * `column` matches a pattern made by containsPattern, ignoring case: PostgreSQL's ILIKE (served by
 * the trigram index); SQLite's LIKE, which ignores case for ASCII letters.
 */
export function matchesContainsPattern(dialect: Dialect, column: string, pattern: string): RawBuilder<SqlBool> {
  const operator = sql.raw(dialect === 'postgres' ? 'ilike' : 'like');
  return sql<SqlBool>`${sql.ref(column)} ${operator} ${pattern} escape '\\'`;
}

/**
 * Whether `db` runs data-modifying statements inside WITH (PostgreSQL does; SQLite does not), so
 * that a write and the record of it can be one statement: one round trip instead of a transaction's
 * four. A caller offers both forms and asks this which to use.
 */
export function writesInWith(db: Kysely<Schema>): boolean {
  return dialectOf(db) === 'postgres';
}

/**
 * `expression` (text) begins with `prefix`, as a range the expression's index serves: bytewise on
 * SQLite (its default collation), in the "C" collation on PostgreSQL, whose index on the
 * expression (migration 022) is built in it. The caller lowercases both sides when case must not
 * matter.
 */
export function startsWith(dialect: Dialect, expression: RawBuilder<unknown>, prefix: string): RawBuilder<SqlBool> {
  const bytewise = dialect === 'postgres' ? sql`(${expression} collate "C")` : expression;
  const last = prefix.charCodeAt(prefix.length - 1);
  // The first text past every one that starts with the prefix: its last character, one higher.
  if (prefix === '' || last >= 0xd7ff) return sql<SqlBool>`${bytewise} >= ${prefix}`;
  const upper = prefix.slice(0, -1) + String.fromCharCode(last + 1);
  return sql<SqlBool>`(${bytewise} >= ${prefix} and ${bytewise} < ${upper})`;
}
