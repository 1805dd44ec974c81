import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { DatabaseKind } from './connection.ts';

/**
 * `column` contains `text`, ignoring case; the client's % and _ match themselves. PostgreSQL's
 * ILIKE (served by the trigram index); SQLite's LIKE, which ignores case for ASCII letters.
 */
export function containsIgnoringCase(kind: DatabaseKind, column: string, text: string): RawBuilder<SqlBool> {
  const pattern = `%${text.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
  const operator = sql.raw(kind === 'postgres' ? 'ilike' : 'like');
  return sql<SqlBool>`${sql.ref(column)} ${operator} ${pattern} escape '\\'`;
}
