import {
  type Compilable,
  type CompiledQuery,
  createQueryId,
  type Kysely,
  type OperationNode,
  SelectQueryNode,
} from 'kysely';
import { type Database, databaseOf, keepPrepared } from './connection.ts';
import { type Dialect, dialectOf } from './dialect.ts';
import type { Schema } from './schema.ts';

type Value = string | number | bigint | boolean | null;
type Params = Record<string, Value | readonly Value[]>;

interface Template<R> {
  compiled: CompiledQuery<R>;
  /** A SELECT that writes nothing: on the root instance it runs through Database.selectRows, others through Database.writeRows. */
  select: boolean;
  /** No list parameter longer than PREPARED_LIST_LENGTH, or lists of a bounded set of lengths (`boundedLists`): the text is one of a bounded set, worth a prepared statement (see Database.selectRows, keepPrepared). */
  prepared: boolean;
  /** Per parameter of the SQL: where its value comes from (a param, an element of a list param) or a constant. */
  slots: Array<{ param: string; index?: number } | { constant: unknown }>;
}

const MARKER = '\u0000param:';

/**
 * Lists up to this long still make a prepared statement: a query then has at most 2^lists texts of
 * that kind. A GET of one id (`/v1/user.php/<id>`, the usual call) is a list of one, and on
 * PostgreSQL an unprepared statement is parsed and planned on every run: the engram GET's join cost
 * the database 280 µs a request that way, against ~50 for a prepared lookup.
 */
const PREPARED_LIST_LENGTH = 1;

/**
 * A query that is built and compiled once per shape (per dialect, per form, and per length of
 * each list parameter) and afterwards only executed with new values. Building and compiling a
 * Kysely query costs more than the point lookup itself on SQLite, so the hottest reads are
 * declared this way.
 *
 * `build` must use its params only as values in the query (never to decide its form, nor
 * transformed; only a list's length may shape it, as the length is part of the shape): it is called with markers in their place, and each marker must reach the
 * compiled parameters unchanged. Any other value it puts in the query is kept from the first
 * build, so a value that changes between calls (the time, the caller) must be a param.
 * `mayBeUnused` names params that the query may leave out (e.g. a caller's fields that a row
 * filter does not need); a param that is used must still reach the parameters unchanged.
 *
 * A query whose form varies (which filters, which sort order) takes the form as a third argument
 * of `build` and of each call; `formKey` names each form (equal keys, equal forms), so one
 * reusableQuery keeps the compiled statements of all its forms.
 *
 * A query with a list param longer than PREPARED_LIST_LENGTH runs unprepared (each length is a text
 * of its own) unless `boundedLists` says their lengths come from a small set, as an INSERT's row
 * count does (class-queries.ts).
 *
 * `plannedPerRun` names the forms whose best plan depends on the values, which then run unprepared
 * on PostgreSQL: after five runs of a named statement it may keep a generic plan, and for a
 * substring pattern that plan is the trigram index, which for '%e%' reads every row of the table
 * (300 ms a page of 1,000,000 projects, against 2–15 ms planned with the pattern).
 */
export function reusableQuery<P extends Params, R, F = undefined>(
  build: (db: Kysely<Schema>, params: P, form: F) => Compilable<R>,
  options: {
    mayBeUnused?: readonly string[];
    formKey?: (form: F) => string;
    boundedLists?: boolean;
    plannedPerRun?: (form: F) => boolean;
  } = {},
) {
  const mayBeUnused = new Set(options.mayBeUnused);
  const formKey = options.formKey;
  const templates = new Map<Dialect, Map<string, Template<R>>>();

  // The template of the last call, and the shape it was made for: a query without forms is called
  // with the same param names (and list lengths) nearly every time, which is then told without
  // building the shape's text.
  let last: { dialect: Dialect; names: string[]; lengths: number[]; template: Template<R> } | undefined;

  function isLastShape(dialect: Dialect, params: P): boolean {
    if (last === undefined || last.dialect !== dialect) return false;
    const { names, lengths } = last;
    let index = 0;
    for (const name in params) {
      if (index === names.length || names[index] !== name) return false;
      const value = params[name];
      if ((Array.isArray(value) ? value.length : -1) !== lengths[index]) return false;
      index++;
    }
    return index === names.length;
  }

  function template(db: Kysely<Schema>, params: P, form: F): Template<R> {
    const dialect = dialectOf(db);
    if (!formKey) {
      if (isLastShape(dialect, params)) return last!.template;
      const found = templateOfShape(db, dialect, params, form);
      const names = Object.keys(params);
      last = {
        dialect,
        names,
        lengths: names.map((name) => (Array.isArray(params[name]) ? (params[name] as readonly Value[]).length : -1)),
        template: found,
      };
      return found;
    }
    return templateOfShape(db, dialect, params, form);
  }

  function templateOfShape(db: Kysely<Schema>, dialect: Dialect, params: P, form: F): Template<R> {
    // The shape, without allocating for the common case of no list parameter.
    let shape = formKey ? `${formKey(form)}|` : '';
    let longestList = 0;
    for (const name in params) {
      const value = params[name];
      if (Array.isArray(value)) {
        longestList = Math.max(longestList, value.length);
        shape += `${name}[${value.length}],`;
      } else shape += `${name},`;
    }
    let byShape = templates.get(dialect);
    if (!byShape) {
      byShape = new Map();
      templates.set(dialect, byShape);
    }
    let found = byShape.get(shape);
    if (found) return found;

    const markers = Object.fromEntries(
      Object.entries(params).map(([name, value]) => [
        name,
        Array.isArray(value) ? value.map((_, index) => `${MARKER}${name}:${index}`) : `${MARKER}${name}`,
      ]),
    ) as unknown as P;
    const compiled = build(db, markers, form).compile();
    const slots = compiled.parameters.map((value) => {
      if (typeof value !== 'string' || !value.startsWith(MARKER)) return { constant: value };
      const [param, index] = value.slice(MARKER.length).split(':');
      return index === undefined ? { param: param! } : { param: param!, index: Number(index) };
    });
    const used = new Set(compiled.parameters.filter((value) => typeof value === 'string' && value.startsWith(MARKER)));
    const expected = Object.entries(markers as Record<string, string | string[]>)
      .filter(([name]) => !mayBeUnused.has(name))
      .flatMap(([, marker]) => marker);
    const known = new Set(Object.values(markers as Record<string, string | string[]>).flat());
    const transformed = compiled.parameters.some(
      (value) => typeof value === 'string' && value.includes(MARKER) && !known.has(value),
    );
    if (transformed || expected.some((marker) => !used.has(marker)))
      throw new Error(`reusableQuery: a parameter was transformed or dropped in ${compiled.sql}`);
    found = {
      compiled,
      select: readsOnly(compiled.query),
      prepared:
        (options.boundedLists === true || longestList <= PREPARED_LIST_LENGTH) && !options.plannedPerRun?.(form),
      slots,
    };
    if (found.prepared) keepPrepared(compiled.sql);
    byShape.set(shape, found);
    return found;
  }

  function parametersOf(slots: Template<R>['slots'], params: P): unknown[] {
    const parameters: unknown[] = new Array(slots.length);
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      if ('constant' in slot) parameters[i] = slot.constant;
      else
        parameters[i] =
          slot.index === undefined ? params[slot.param] : (params[slot.param] as readonly Value[])[slot.index];
    }
    return parameters;
  }

  // Not an async function: the driver's promise is returned as it is. (An async function that
  // awaits it adds a promise and a turn; one that returns it, two turns.) Errors still reject.
  function execute(
    db: Kysely<Schema>,
    params: P,
    ...[form]: F extends undefined ? [form?: F] : [form: F]
  ): Promise<R[]> {
    try {
      const { compiled, select, prepared, slots } = template(db, params, form as F);
      // Outside a transaction, straight through the driver rather than Kysely's executor.
      const database = databaseOf(db);
      if (database && select)
        return database.selectRows(compiled.sql, parametersOf(slots, params), prepared) as Promise<R[]>;
      if (database) return database.writeRows(compiled, parametersOf(slots, params), prepared) as Promise<R[]>;
      return db
        .executeQuery<R>({
          query: compiled.query,
          sql: compiled.sql,
          parameters: parametersOf(slots, params),
          queryId: createQueryId(),
        })
        .then((result) => result.rows);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The statement's text and parameters for these params, not run (e.g. for Database.writeBatch). */
  execute.statement = function statement(
    db: Kysely<Schema>,
    params: P,
    ...[form]: F extends undefined ? [form?: F] : [form: F]
  ): { sql: string; parameters: unknown[] } {
    const { compiled, slots } = template(db, params, form as F);
    return { sql: compiled.sql, parameters: parametersOf(slots, params) };
  };

  /**
   * The rows of a SELECT as arrays of column values, in the order of its select list, outside any
   * transaction: no object per row, which on a long page costs more than the query (see
   * Database.selectArrays).
   */
  execute.arrays = function arrays(
    database: Database,
    params: P,
    ...[form]: F extends undefined ? [form?: F] : [form: F]
  ): Promise<unknown[][]> {
    // A plain function handing on the driver's promise, as `execute`: no promise layer of its own.
    try {
      const { compiled, slots, prepared } = template(database.db, params, form as F);
      return database.selectArrays(compiled.sql, parametersOf(slots, params), prepared);
    } catch (error) {
      return Promise.reject(error);
    }
  };

  return execute;
}

/** A SELECT none of whose WITH clauses writes (PostgreSQL runs data-modifying statements there). */
function readsOnly(query: OperationNode): boolean {
  if (!SelectQueryNode.is(query)) return false;
  return (query.with?.expressions ?? []).every((cte) => readsOnly(cte.expression));
}
