import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import { type Dialect, matchesContainsPattern } from '../db/dialect.ts';
import { reusableQuery } from '../db/reusable-query.ts';
import type { Schema } from '../db/schema.ts';
import type { ClassDefinition, FilterCaller, Row } from './definition.ts';
import { selectedColumns } from './row-mapper.ts';

export type Value = string | number | bigint | boolean | null;
export type Params = Record<string, Value | readonly Value[]>;

/**
 * A class's table, seen as rows of columns the engine learns from the class definition: a class
 * may live on a table the schema does not declare (a test's own). The one place the engine leaves
 * the schema's types; everything it is handed and hands back is typed against the schema.
 */
type ClassTables = Record<string, Row>;
export const onClassTable = (db: Kysely<Schema>): Kysely<ClassTables> => db as unknown as Kysely<ClassTables>;

/** Which filters a list applies (their names, sorted) and its order: one compiled statement each. */
export interface ListForm {
  filters: readonly string[];
  sortColumn: string;
  direction: 'asc' | 'desc';
}
const listFormKey = (form: ListForm) => `${form.filters.join(',')}:${form.sortColumn}:${form.direction}`;

/** The caller's fields a row filter may use (FilterCaller), by name; never all used by one filter. */
const CALLER_PARAMS = ['userId', 'clientId', 'sessionId', 'now'];
/** The caller's fields among a query's params (see CALLER_PARAMS). */
const callerOf = (params: Params) => params as unknown as FilterCaller;

export type ClassQueries = ReturnType<typeof classQueries>;

/**
 * The statements the engine runs on one class's table, each built and compiled once per form
 * and list length (reusableQuery), then only executed with new values. Params: the caller's
 * fields (FilterCaller), `filter<n>` per list filter, `limit`/`offset`, `id`, `ids`, `values`.
 */
export function classQueries(definition: ClassDefinition, kind: Dialect) {
  const idColumn = definition.id.column;
  const columns = selectedColumns(definition);
  const columnOf = (property: string) =>
    property === definition.id.property ? idColumn : definition.properties[property]!.column;
  const mayBeUnused = CALLER_PARAMS;
  const table = definition.table;
  const { visible, changeable: changeableRows } = definition;
  // biome-ignore lint/complexity/noBannedTypes: Kysely's own type of a query that selects no column yet
  const visibleRows = (db: Kysely<Schema>, caller: FilterCaller): SelectQueryBuilder<ClassTables, string, {}> => {
    const query = onClassTable(db).selectFrom(table);
    return visible ? query.where((eb) => visible(eb, caller)) : query;
  };
  const filtersBySubstring = (form: ListForm) =>
    form.filters.some((name) => definition.filters?.[name] === 'substring');
  const filtered = (db: Kysely<Schema>, values: Params, filters: readonly string[]) => {
    let rows = visibleRows(db, callerOf(values));
    for (const [index, name] of filters.entries()) {
      const column = columnOf(name);
      const value = values[`filter${index}`] as string;
      if (definition.filters?.[name] === 'substring') rows = rows.where(matchesContainsPattern(kind, column, value));
      else rows = rows.where(column, '=', value);
    }
    return rows;
  };
  // For a caller without a property's read scope, that property's column is read as NULL in its
  // place (the row mapper and the JSON writer leave the property out for such a caller anyway): a
  // secret the caller may not see (a user's sealed private key, ~2.3 KB) is not read for nothing.
  // The reads of instances come in both forms: `page` and `byId`, and `…WithoutScoped`.
  const scopedColumns = new Set(
    Object.values(definition.properties).flatMap((property) =>
      property.readScope === undefined ? [] : [property.column],
    ),
  );
  const columnsWithoutScoped = columns.map((column) =>
    scopedColumns.has(column) ? sql<null>`null`.as(column) : column,
  );
  const pageOf = (selected: typeof columnsWithoutScoped) =>
    reusableQuery(
      (db, values: Params, form: ListForm) =>
        filtered(db, values, form.filters)
          .select(selected)
          .orderBy(form.sortColumn, form.direction)
          .orderBy(idColumn, form.direction)
          .limit(values.limit as number)
          .offset(values.offset as number),
      { mayBeUnused, formKey: listFormKey, plannedPerRun: filtersBySubstring },
    );
  const byIdOf = (selected: typeof columnsWithoutScoped) =>
    reusableQuery(
      (db, values: Params) =>
        visibleRows(db, callerOf(values))
          .select(selected)
          .where(idColumn, '=', values.id as string),
      { mayBeUnused },
    );
  const page = pageOf(columns);
  const byId = byIdOf(columns);
  const pageWithoutScoped = scopedColumns.size === 0 ? page : pageOf(columnsWithoutScoped);
  const byIdWithoutScoped = scopedColumns.size === 0 ? byId : byIdOf(columnsWithoutScoped);
  const count = reusableQuery(
    (db, values: Params, form: ListForm) =>
      filtered(db, values, form.filters).select((eb) => eb.fn.countAll<number>().as('total')),
    { mayBeUnused, formKey: listFormKey, plannedPerRun: filtersBySubstring },
  );
  const existing = reusableQuery(
    (db, values: Params) =>
      onClassTable(db)
        .selectFrom(table)
        .select((eb) => [
          eb.ref(idColumn).as('id'),
          visible ? sql<boolean>`(${visible(eb, callerOf(values))})`.as('visible') : sql<number>`1`.as('visible'),
        ])
        .where(idColumn, 'in', values.ids as readonly string[]),
    { mayBeUnused },
  );
  const changeable = reusableQuery(
    (db, values: Params) =>
      onClassTable(db)
        .selectFrom(table)
        .select(idColumn)
        .where(idColumn, 'in', values.ids as readonly string[])
        .where((eb) => (changeableRows ? changeableRows(eb, callerOf(values)) : sql<boolean>`1 = 1`)),
    { mayBeUnused },
  );
  // Rows of one column list (the form), their values flattened in `values`: answered as stored
  // (RETURNING), or not when the caller holds every column already (see ClassStore.insertChunk).
  const insertRows = (db: Kysely<Schema>, params: { values: readonly Value[] }, written: readonly string[]) => {
    const rows: Row[] = [];
    for (let at = 0; at < params.values.length; at += written.length) {
      const row: Row = {};
      for (const [index, column] of written.entries()) row[column] = params.values[at + index];
      rows.push(row);
    }
    return onClassTable(db).insertInto(table).values(rows);
  };
  // Row counts come from a small set (ClassStore's insertSize: INSERT_CHUNK or a power of two below it).
  const columnList = { formKey: (written: readonly string[]) => written.join(','), boundedLists: true };
  const insert = reusableQuery(
    (db, params: { values: readonly Value[] }, written: readonly string[]) =>
      insertRows(db, params, written).returning(columns),
    columnList,
  );
  const insertOnly = reusableQuery(
    (db, params: { values: readonly Value[] }, written: readonly string[]) => insertRows(db, params, written),
    columnList,
  );
  return { page, pageWithoutScoped, count, byId, byIdWithoutScoped, existing, changeable, insert, insertOnly };
}
