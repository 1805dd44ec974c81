import type { FastifyRequest } from 'fastify';
import type { Expression, ExpressionBuilder, Kysely, SqlBool } from 'kysely';
import type { TSchema } from 'typebox';
import type { Schema } from '../db/schema.ts';
import type { BearerAuth } from '../http/bearer-auth.ts';

export type Caller = BearerAuth;
export type Row = Record<string, unknown>;

/** A table of the service's schema (src/db/schema.ts). */
export type TableName = keyof Schema & string;
/** The columns of a table of the schema. */
export type ColumnOf<Table extends TableName> = keyof Schema[Table] & string;

/**
 * What a row filter may use of the caller: its user, application and session, and the time of the
 * request. The engine compiles each query once and reuses it, so a filter must use these only as
 * values in the condition (never to choose its form, nor transformed), and take the time from
 * `now`, not Date.now().
 */
export interface FilterCaller {
  userId: string;
  clientId: string;
  sessionId: string;
  /** The request's time, epoch milliseconds. */
  now: number;
}

/** A row condition, e.g. "owned by the caller". */
// biome-ignore lint/suspicious/noExplicitAny: a filter applies to any class's table; each class checks its own columns
export type RowFilter = (eb: ExpressionBuilder<any, any>, caller: FilterCaller) => Expression<SqlBool>;

export interface PropertyDefinition<Column extends string = string> {
  column: Column;
  /** The JSON shape of the property as read; documents the API. */
  schema: TSchema;
  /** The shape accepted in writes, when it differs from `schema` (e.g. not nullable). */
  input?: TSchema;
  /** The client may set it; other properties are ignored in writes. */
  writable?: boolean;
  /** A create must give it (unless `default` supplies it). */
  required?: boolean;
  /** The column value of a new instance that does not give the property. */
  default?: (caller: Caller) => unknown;
  /** Turns a written JSON value into the column value; may throw an ApiError (400). */
  // biome-ignore lint/suspicious/noExplicitAny: each property declares its own value type; any keeps the declarations bivariant
  fromJson?: (value: any) => unknown;
  /** Turns the column value into the JSON value; `row` holds the instance's other columns. */
  // biome-ignore lint/suspicious/noExplicitAny: each property declares its own value type; any keeps the declarations bivariant
  toJson?: (value: any, row: Row) => unknown;
  /**
   * The JSON text of the property, from the column value: exactly what the response schema's
   * serializer writes for toJson(value). Optional; long answers write it directly (json-writer.ts).
   */
  // biome-ignore lint/suspicious/noExplicitAny: each property declares its own value type; any keeps the declarations bivariant
  toJsonText?: (value: any) => string;
  /** Shown only to callers holding this scope. */
  readScope?: string;
  /** Shown only when this holds for the row (e.g. the caller's own private key). */
  shownWhen?: (row: Row, caller: Caller) => boolean;
}

export type FilterMode = 'exact' | 'substring';

/** An extra path for one instance, chosen by the caller (e.g. /user is the caller's user). */
export interface AliasDefinition {
  path: string;
  id: (caller: Caller) => string;
  methods: Array<'GET' | 'PUT' | 'PATCH' | 'DELETE'>;
}

/** What a class's own write (ClassWrites) works with. */
export interface WriteContext {
  /** The engine's transaction: the write commits, or rolls back, with the rest of the request. */
  db: Kysely<Schema>;
  caller: Caller;
  /** The request (its IP, log and server), for what the owning feature records or needs. */
  request: FastifyRequest;
}

/**
 * Writes the feature owning a class's table carries out itself, in place of the engine's own
 * statement on that table (docs/architecture.md, "Who owns which table"). The engine first checks
 * that every instance exists and is the caller's to see and change, then calls these in its
 * transaction.
 */
export interface ClassWrites {
  /** Deletes the instances (each exists; one gone meanwhile is no error). */
  delete?: (context: WriteContext, ids: readonly string[]) => Promise<void>;
  /**
   * Sets `values` (by column: the written properties as stored, the updated time and revision
   * the engine maintains) on the instance; false when it is gone. The engine reads it back to answer.
   */
  update?: (context: WriteContext, id: string, values: Row) => Promise<boolean>;
}

/**
 * Everything the engine needs to serve a class: declare one in src/classes/ with defineClass
 * (which checks the table and every column named against the schema) and list it in
 * src/classes/index.ts. `Column` is the names its columns may have; the engine takes any class
 * (ClassDefinition<string>), so a test may declare one on a table of its own.
 */
export interface ClassDefinition<Column extends string = string> {
  name: string;
  /** Class path under /v4, e.g. '/projects'. */
  path: string;
  table: string;
  /** The identifier property (a UUID) and its column. */
  id: { property: string; column: Column };
  properties: Record<string, PropertyDefinition<Column>>;
  sortable: string[];
  defaultSort: string;
  filters?: Record<string, FilterMode>;
  scopes?: { read?: string[]; write?: string[] };
  /** Rows the caller may see; others are 404. Default: all rows. */
  visible?: RowFilter;
  /** Rows the caller may change or delete, among the visible ones; others are 403. Default: all visible rows. */
  changeable?: RowFilter;
  /** Which writes exist at all; a missing one is 405. Default: all. */
  operations?: { create?: boolean; update?: boolean; delete?: boolean };
  /** Column values every new instance gets from the caller (an owner, say). */
  onCreate?: (caller: Caller) => Row;
  /** Columns the engine maintains: set on create and/or on every update. */
  timestamps?: { created?: Column; updated?: Column };
  /** A column incremented by every update. */
  revision?: Column;
  aliases?: AliasDefinition[];
  /** Writes the table's owner does itself; by default the engine deletes and updates rows. */
  writes?: ClassWrites;
}

/** A row condition on a table of the schema, its column names checked. */
export type TableRowFilter<Table extends TableName> = (
  eb: ExpressionBuilder<Schema, Table>,
  caller: FilterCaller,
) => Expression<SqlBool>;

/**
 * A class on a table of the schema: `table` and every column named (in properties, row filters,
 * timestamps and revision) are checked against src/db/schema.ts.
 */
export function defineClass<Table extends TableName>(
  definition: Omit<ClassDefinition<ColumnOf<Table>>, 'visible' | 'changeable'> & {
    table: Table;
    visible?: TableRowFilter<Table>;
    changeable?: TableRowFilter<Table>;
  },
): ClassDefinition<ColumnOf<Table>> {
  return definition;
}
