import type { FastifyRequest } from 'fastify';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/connection.ts';
import { containsPattern, dialectOf } from '../db/dialect.ts';
import { isUniqueViolation } from '../db/errors.ts';
import { lockKeys } from '../db/locks.ts';
import type { Schema } from '../db/schema.ts';
import { type BatchStatement, BatchWriterUnavailable } from '../db/sqlite-thread.ts';
import { ApiError, badRequest, forbidden, notFound } from '../http/errors.ts';
import { isUuid, normalizeUuid, uuidv7 } from '../http/uuid.ts';
import {
  type ClassQueries,
  classQueries,
  type ListForm,
  onClassTable,
  type Params,
  type Value,
} from './class-queries.ts';
import type { Caller, ClassDefinition, FilterCaller, PropertyDefinition, Row, WriteContext } from './definition.ts';
import { type InstanceWriter, instanceWriter } from './json-writer.ts';
import { type RowMapper, rowMapper, selectedColumns } from './row-mapper.ts';

export interface ListQuery {
  pageSize: number;
  page: number;
  sortDirection: 'ascending' | 'descending';
  sortedColumn: string;
  filters: Record<string, string>;
}

/** Rows per INSERT of a bulk create; between two, the event loop serves other requests. */
export const INSERT_CHUNK = 50;
/** Updates of a bulk POST between two turns of the event loop. */
const UPDATE_CHUNK = 25;
/** The longest id list of one statement (well under every driver's parameter limit). */
const MAX_ID_LIST = 512;

const LONE_SURROGATE = /\p{Cs}/u;

/** A property's value as given in JSON, as its column stores it. */
const fromJson = (property: PropertyDefinition, value: unknown): unknown =>
  property.fromJson && value !== null ? property.fromJson(value) : value;

/** Lets the event loop serve what is waiting (reads, on SQLite a synchronous driver) before going on. */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Id lists in statements of a few lengths only (powers of two, at most MAX_ID_LIST), padded with
 * repeats of their first id, so each length is compiled once.
 */
function idLists(ids: readonly string[]): string[][] {
  const lists: string[][] = [];
  for (let from = 0; from < ids.length; from += MAX_ID_LIST) {
    const list = ids.slice(from, from + MAX_ID_LIST);
    let length = 1;
    while (length < list.length) length *= 2;
    while (list.length < length) list.push(list[0]!);
    lists.push(list);
  }
  return lists;
}

/** Rows in an INSERT: INSERT_CHUNK, or for the rest a power of two, so few statement shapes exist. */
function insertSize(remaining: number): number {
  if (remaining >= INSERT_CHUNK) return INSERT_CHUNK;
  let size = 1;
  while (size * 2 <= remaining) size *= 2;
  return size;
}

/**
 * The generic operations on one class's table, within what the caller may see and change.
 *
 * The statements of reads and bulk writes are compiled once per form (class-queries.ts) and
 * afterwards only executed with new values; writes answer their rows with RETURNING instead of
 * reading them again; list pages read their rows as arrays.
 */
export class ClassStore {
  private readonly idColumn: string;
  private readonly idProperty: string;
  private readonly columns: string[];
  private readonly mapRow: RowMapper;
  private readonly writeInstance: InstanceWriter;
  private readonly queries: ClassQueries;
  /** The read scopes of the class's properties (a caller without one of them reads without their columns: readsAll). */
  private readonly readScopes: readonly string[];
  /** The writable properties, [name, definition], in the class's order. */
  private readonly writable: ReadonlyArray<readonly [string, PropertyDefinition]>;

  constructor(
    private readonly definition: ClassDefinition,
    private readonly database: Database,
  ) {
    this.idColumn = definition.id.column;
    this.idProperty = definition.id.property;
    this.columns = selectedColumns(definition);
    this.mapRow = rowMapper(definition);
    this.writeInstance = instanceWriter(definition);
    this.queries = classQueries(definition, dialectOf(database.db));
    this.readScopes = Object.values(definition.properties).flatMap((property) =>
      property.readScope === undefined ? [] : [property.readScope],
    );
    this.writable = Object.entries(definition.properties).filter(([, property]) => property.writable);
  }

  private get db(): Kysely<Schema> {
    return this.database.db;
  }

  /** A row as read or written (by column) as the instance as JSON: values converted, hidden properties left out. */
  toJson(row: Row, caller: Caller): Row {
    const values = new Array<unknown>(this.columns.length);
    for (let index = 0; index < values.length; index++) values[index] = row[this.columns[index]!];
    return this.mapRow(values, caller);
  }

  /** The JSON text of toJson(row, caller), written without building the object (see json-writer.ts). */
  toJsonText(row: Row, caller: Caller): string {
    const values = new Array<unknown>(this.columns.length);
    for (let index = 0; index < values.length; index++) values[index] = row[this.columns[index]!];
    return this.writeInstance(values, caller);
  }

  /** The same for a row of a list page, its column values in the order of the select list. */
  valuesToJsonText(values: readonly unknown[], caller: Caller): string {
    return this.writeInstance(values, caller);
  }

  private columnOf(property: string): string {
    return property === this.idProperty ? this.idColumn : this.definition.properties[property]!.column;
  }

  /** The values a row filter takes from the caller (see FilterCaller). */
  private callerParams(caller: Caller): FilterCaller {
    return { userId: caller.userId, clientId: caller.clientId, sessionId: caller.sessionId, now: Date.now() };
  }

  /**
   * callerParams with the id besides, as one literal: a property after a spread is defined by
   * V8's slow path (DefineNamedOwnIC), ~4,000 instructions a single GET (issue 21, callgrind).
   */
  private idParams(caller: Caller, id: string): Params {
    return {
      userId: caller.userId,
      clientId: caller.clientId,
      sessionId: caller.sessionId,
      now: Date.now(),
      id: normalizeUuid(id),
    };
  }

  /** Whether the caller has every read scope of the class's properties; if not, its reads leave their columns out (class-queries.ts). */
  private readsAll(caller: Caller): boolean {
    return this.readScopes.every((scope) => caller.scopes.has(scope));
  }

  private byIdFor(caller: Caller): ClassQueries['byId'] {
    return this.readsAll(caller) ? this.queries.byId : this.queries.byIdWithoutScoped;
  }

  /** A page of the instances the caller sees, each row its column values (see valuesToJsonText). */
  async list(caller: Caller, query: ListQuery): Promise<{ total: number; rows: unknown[][] }> {
    const filters = Object.keys(query.filters).sort();
    const params: Params = { ...this.callerParams(caller) };
    for (const [index, name] of filters.entries()) {
      const value = query.filters[name]!;
      if (this.definition.filters?.[name] === 'substring') params[`filter${index}`] = containsPattern(value);
      else
        params[`filter${index}`] = (
          this.definition.properties[name]?.fromJson ? this.convert(name, value) : value
        ) as Value;
    }
    const form: ListForm = {
      filters,
      sortColumn: this.columnOf(query.sortedColumn),
      direction: query.sortDirection === 'descending' ? 'desc' : 'asc',
    };
    const offset = (query.page - 1) * query.pageSize;
    const rows = await (this.readsAll(caller) ? this.queries.page : this.queries.pageWithoutScoped).arrays(
      this.database,
      { ...params, limit: query.pageSize, offset },
      form,
    );
    // A page that is neither full nor past the end is the last one: it tells the total without a count.
    if (rows.length < query.pageSize && (rows.length > 0 || offset === 0)) return { total: offset + rows.length, rows };
    const [counted] = await this.queries.count(this.db, params, form);
    return { total: Number(counted?.total ?? 0), rows };
  }

  async get(caller: Caller, id: string, db: Kysely<Schema> = this.db): Promise<Row | undefined> {
    if (!isUuid(id)) return undefined;
    const [row] = await this.byIdFor(caller)(db, this.idParams(caller, id));
    return row;
  }

  /**
   * The JSON text of the instance `get` finds, read as column values and written straight from
   * them: a single GET builds neither a row object nor the instance object for the serializer.
   */
  getJsonText(caller: Caller, id: string): Promise<string | undefined> {
    if (!isUuid(id)) return Promise.resolve(undefined);
    return this.byIdFor(caller)
      .arrays(this.database, this.idParams(caller, id))
      .then(([values]) => values && this.writeInstance(values, caller));
  }

  /**
   * POST: per object, update (supplied properties only) when it exists, create otherwise. The
   * existence check is one statement for the whole batch and the inserts one per INSERT_CHUNK
   * objects, each answering its rows; between two chunks the event loop serves other requests,
   * so a large POST does not hold up the reads beside it. All or nothing: one transaction.
   */
  async save(request: FastifyRequest, items: Row[]): Promise<{ created: Row[]; updated: Row[] }> {
    const caller = request.auth;
    const idProperty = this.idProperty;
    const ids = items
      .map((item) => item[idProperty])
      .filter((id): id is string => typeof id === 'string')
      .map(normalizeUuid);
    const givenIds = new Set(ids);
    const repeated = givenIds.size === ids.length ? undefined : ids.find((id, index) => ids.indexOf(id) !== index);
    if (repeated)
      throw badRequest(`${idProperty} ${repeated} appears twice in the request`, { [idProperty]: repeated });
    const written = await this.createOffThread(caller, items, ids);
    if (written) return { created: written, updated: [] };
    const result = await this.transaction(async (db) => {
      await this.lockIds(db, ids);
      const found = await this.existingIds(db, caller, ids);
      const creates: Row[] = [];
      const updates: Array<{ id: string; item: Row }> = [];
      for (const [index, item] of items.entries()) {
        const given = item[idProperty] as string | undefined;
        const id = given === undefined ? undefined : normalizeUuid(given);
        if (id !== undefined && found.get(id) === true) updates.push({ id, item });
        else creates.push(this.newRow(caller, id, item, index));
      }
      // Ids that exist but the caller may not see are 404: to the caller they do not exist, and cannot be taken.
      const hidden = creates.find((row) => found.get(row[this.idColumn] as string) === false);
      if (hidden) throw this.notFound([hidden[this.idColumn] as string]);
      await this.checkChangeable(
        db,
        caller,
        updates.map(({ id }) => id),
      );
      const updated: Row[] = [];
      for (const [index, { id, item }] of updates.entries()) {
        if (index > 0 && index % UPDATE_CHUNK === 0) await yieldToEventLoop();
        updated.push(await this.applyUpdate({ db, caller, request }, id, item, 'merge'));
      }
      const created = await this.insertRows(db, creates);
      // The commit (on SQLite, writing every page changed) and the answer get turns of their own.
      if (items.length > INSERT_CHUNK) await yieldToEventLoop();
      return { created, updated };
    });
    if (items.length > INSERT_CHUNK) await yieldToEventLoop();
    return result;
  }

  /**
   * save() of new objects only, more than one INSERT holds, where the database writes batches off
   * the request thread (SQLite: Database.writeBatch): the look-up of the ids given and every INSERT
   * run there as one transaction, while this thread goes on serving other requests. Answers
   * undefined where that does not apply, and save() takes its usual path: an id that exists (an
   * update, or 404 when hidden; the batch then writes nothing), rows to read back, or no thread to
   * write them.
   */
  private async createOffThread(caller: Caller, items: Row[], ids: string[]): Promise<Row[] | undefined> {
    const { writeBatch } = this.database;
    if (!writeBatch || items.length <= INSERT_CHUNK) return undefined;
    let rows: Row[];
    try {
      rows = items.map((item, index) => {
        const given = item[this.idProperty] as string | undefined;
        return this.newRow(caller, given === undefined ? undefined : normalizeUuid(given), item, index);
      });
    } catch {
      // Not every object can be created (a required property missing, say): an update perhaps,
      // where it is not needed; the usual path tells.
      return undefined;
    }
    const statements = this.insertStatements(rows);
    if (!statements) return undefined;
    const params = this.callerParams(caller);
    const lookups = idLists(ids).map((list) => this.queries.existing.statement(this.db, { ...params, ids: list }));
    try {
      return (await writeBatch(statements, lookups)) ? rows : undefined;
    } catch (error) {
      if (error instanceof BatchWriterUnavailable) return undefined;
      throw this.writeError(error);
    }
  }

  /**
   * The INSERTs of `rows`, INSERT_CHUNK rows a statement, when each holds every column the answer
   * shows as the database stores it and only values that cross to another thread unchanged (see
   * rowValues); undefined otherwise.
   */
  private insertStatements(rows: Row[]): BatchStatement[] | undefined {
    const columns = Object.keys(rows[0]!);
    const statements: BatchStatement[] = [];
    for (let from = 0; from < rows.length; ) {
      const chunk = rows.slice(from, from + insertSize(rows.length - from));
      const flat = this.rowValues(chunk, columns);
      if (!flat || flat.readBack || !flat.plain) return undefined;
      statements.push(this.queries.insertOnly.statement(this.db, { values: flat.values }, columns));
      from += chunk.length;
    }
    return statements;
  }

  /**
   * Writes naming the same ids run one after another, so an id another request is creating is seen
   * as existing once that request commits (an update, or 404 when hidden) instead of failing its insert.
   */
  private lockIds(db: Transaction<Schema>, ids: string[]): Promise<void> {
    return lockKeys(
      db,
      ids.map((id) => `${this.definition.table}:${id}`),
    );
  }

  /**
   * Which of `ids` exist, and whether the caller sees each (true) or not (false): looked up by the
   * primary key, the visibility computed per row (a filter in the WHERE clause could lead the
   * database to scan every row of the caller instead).
   */
  private async existingIds(db: Kysely<Schema>, caller: Caller, ids: string[]): Promise<Map<string, boolean>> {
    const found = new Map<string, boolean>();
    if (ids.length === 0) return found;
    const params = this.callerParams(caller);
    for (const list of idLists(ids)) {
      for (const row of await this.queries.existing(db, { ...params, ids: list }))
        found.set(row.id as string, Boolean(row.visible));
    }
    return found;
  }

  /** PUT: replaces the instance (201 when it was new). */
  async replace(request: FastifyRequest, id: string, body: Row): Promise<{ created: boolean; row: Row }> {
    const caller = request.auth;
    this.checkBodyId(id, body);
    return this.transaction(async (db) => {
      await this.lockIds(db, [normalizeUuid(id)]);
      if (await this.existing(db, caller, normalizeUuid(id)))
        return { created: false, row: await this.update({ db, caller, request }, normalizeUuid(id), body, 'replace') };
      return { created: true, row: await this.create(db, caller, normalizeUuid(id), body) };
    });
  }

  /** PATCH: changes the supplied properties of an existing instance. */
  async patch(request: FastifyRequest, id: string, body: Row): Promise<Row> {
    const caller = request.auth;
    this.checkBodyId(id, body);
    return this.transaction(async (db) => {
      await this.lockIds(db, [normalizeUuid(id)]);
      if (!(await this.existing(db, caller, normalizeUuid(id)))) throw this.notFound([id]);
      return this.update({ db, caller, request }, normalizeUuid(id), body, 'merge');
    });
  }

  /** DELETE of one or several: all or nothing. */
  async remove(request: FastifyRequest, ids: string[]): Promise<void> {
    const caller = request.auth;
    const wanted = [...new Set(ids.map(normalizeUuid))];
    await this.transaction(async (db) => {
      // The same locks as the writes: a PUT or PATCH that found the instance updates it before it goes.
      await this.lockIds(db, wanted);
      const found = await this.existingIds(db, caller, wanted);
      const missing = wanted.filter((id) => found.get(id) !== true);
      if (missing.length > 0) throw this.notFound(missing);
      await this.checkChangeable(db, caller, wanted);
      const remove = this.definition.writes?.delete;
      if (remove) await remove({ db, caller, request }, wanted);
      else await onClassTable(db).deleteFrom(this.definition.table).where(this.idColumn, 'in', wanted).execute();
    });
  }

  private notFound(ids: string[]): ApiError {
    const noun = this.definition.name.toLowerCase();
    return notFound(ids.length === 1 ? `No ${noun} ${ids[0]}` : `No ${noun} with these ids: ${ids.join(', ')}`, {
      [this.idProperty]: ids,
    });
  }

  private checkBodyId(id: string, body: Row): void {
    const given = body[this.idProperty];
    if (typeof given === 'string' && normalizeUuid(given) !== normalizeUuid(id)) {
      throw badRequest(`${this.idProperty} in the body differs from the one in the path`);
    }
  }

  /** True when the instance exists and the caller sees it; 404 when it exists but is hidden. */
  private async existing(db: Kysely<Schema>, caller: Caller, id: string): Promise<boolean> {
    const visible = (await this.existingIds(db, caller, [id])).get(id);
    if (visible === false) throw this.notFound([id]);
    return visible === true;
  }

  private async checkChangeable(db: Kysely<Schema>, caller: Caller, ids: string[]): Promise<void> {
    if (!this.definition.changeable || ids.length === 0) return;
    const params = this.callerParams(caller);
    const allowed = new Set<unknown>();
    for (const list of idLists(ids))
      for (const row of await this.queries.changeable(db, { ...params, ids: list })) allowed.add(row[this.idColumn]);
    if (ids.some((id) => !allowed.has(id)))
      throw forbidden(`You may not change this ${this.definition.name.toLowerCase()}`);
  }

  private convert(name: string, value: unknown): unknown {
    return fromJson(this.definition.properties[name]!, value);
  }

  /** Column values for the writable properties in `body`; with `replace`, absent ones reset. */
  private writtenColumns(caller: Caller, body: Row, mode: 'merge' | 'replace', values: Row = {}): Row {
    for (const [name, property] of this.writable) {
      if (name in body) values[property.column] = fromJson(property, body[name]);
      else if (mode === 'replace') values[property.column] = property.default ? property.default(caller) : null;
    }
    return values;
  }

  private async create(db: Kysely<Schema>, caller: Caller, id: string, body: Row): Promise<Row> {
    const [row] = await this.insertRows(db, [this.newRow(caller, id, body)]);
    if (!row) throw new Error(`${this.definition.name}: the INSERT of ${id} answered no row`);
    return row;
  }

  /** The columns of a new instance: written values, defaults, owner, timestamps and revision. */
  private newRow(caller: Caller, id: string | undefined, body: Row, index?: number): Row {
    if (this.definition.operations?.create === false) {
      throw id
        ? this.notFound([id])
        : new ApiError(405, `${this.definition.name} instances cannot be created through the API`);
    }
    const where = index === undefined ? '' : ` (item ${index})`;
    const values: Row = {};
    values[this.idColumn] = id ?? uuidv7();
    this.writtenColumns(caller, body, 'merge', values);
    for (const [name, property] of this.writable) {
      if (property.column in values) continue;
      if (property.default) values[property.column] = property.default(caller);
      else if (property.required)
        throw badRequest(`Missing required property ${name}${where}`, { property: name, index });
    }
    const now = Date.now();
    const { timestamps, revision, onCreate } = this.definition;
    if (onCreate) {
      const given = onCreate(caller);
      for (const column in given) values[column] = given[column];
    }
    if (timestamps?.created) values[timestamps.created] = now;
    if (timestamps?.updated) values[timestamps.updated] = now;
    if (revision) values[revision] = 1;
    return values;
  }

  /**
   * Inserts `rows` and answers them as stored, in order; when they take several INSERTs, the event
   * loop runs before each. A row that gives every column the answer shows is answered as written
   * (its INSERT returns nothing); others are read back with RETURNING (a column's database default).
   */
  private async insertRows(db: Kysely<Schema>, rows: Row[]): Promise<Row[]> {
    const stored: Row[] = [];
    for (let from = 0; from < rows.length; ) {
      if (rows.length > INSERT_CHUNK) await yieldToEventLoop();
      const chunk = rows.slice(from, from + insertSize(rows.length - from));
      const answered = await this.write(() => this.insertChunk(db, chunk));
      if (answered === undefined) stored.push(...chunk);
      else {
        const byId = new Map(answered.map((row) => [row[this.idColumn], row]));
        for (const row of chunk) {
          const inserted = byId.get(row[this.idColumn]);
          if (!inserted)
            throw new Error(`${this.definition.name}: the INSERT of ${String(row[this.idColumn])} answered no row`);
          stored.push(inserted);
        }
      }
      from += chunk.length;
    }
    return stored;
  }

  /**
   * One INSERT, compiled once per column list and row count when every row has the same columns.
   * Answers undefined when every row holds every column the answer shows, as the database stores
   * it (nothing to read back), the rows as stored (RETURNING) otherwise.
   */
  private async insertChunk(db: Kysely<Schema>, rows: Row[]): Promise<Row[] | undefined> {
    const columns = Object.keys(rows[0]!);
    const flat = this.rowValues(rows, columns);
    if (!flat) return onClassTable(db).insertInto(this.definition.table).values(rows).returning(this.columns).execute();
    if (flat.readBack) return this.queries.insert(db, { values: flat.values }, columns);
    await this.queries.insertOnly(db, { values: flat.values }, columns);
    return undefined;
  }

  /**
   * The values of `rows`, flattened in the order of `columns`; undefined when a row's columns are
   * others. `readBack`: the database does not store them as given (a column the answer shows is
   * missing, or a lone surrogate, stored as the driver encodes it). `plain`: strings, numbers and
   * nulls only (a Buffer, say, would reach another thread as a Uint8Array).
   */
  private rowValues(
    rows: Row[],
    columns: string[],
  ): { values: Value[]; readBack: boolean; plain: boolean } | undefined {
    const values: Value[] = [];
    let readBack = !this.columns.every((column) => columns.includes(column));
    let plain = true;
    for (const row of rows) {
      let count = 0;
      for (const key in row) if (key !== columns[count++]) return undefined;
      if (count !== columns.length) return undefined;
      for (const column of columns) {
        const value = row[column] as Value;
        if (typeof value === 'string') {
          if (LONE_SURROGATE.test(value)) readBack = true;
        } else if (value !== null && typeof value !== 'number') plain = false;
        values.push(value);
      }
    }
    return { values, readBack, plain };
  }

  private async update(context: WriteContext, id: string, body: Row, mode: 'merge' | 'replace'): Promise<Row> {
    await this.checkChangeable(context.db, context.caller, [id]);
    return this.applyUpdate(context, id, body, mode);
  }

  /** Applies the update (the engine's statement, or the class's own write) and answers the row as stored. */
  private async applyUpdate(context: WriteContext, id: string, body: Row, mode: 'merge' | 'replace'): Promise<Row> {
    const { db, caller } = context;
    if (this.definition.operations?.update === false)
      throw new ApiError(405, `${this.definition.name} instances cannot be changed`);
    const values: Row = this.writtenColumns(caller, body, mode);
    const { timestamps, revision } = this.definition;
    if (timestamps?.updated) values[timestamps.updated] = Date.now();
    if (revision) values[revision] = sql`${sql.ref(revision)} + 1`;
    // No row: gone since it was looked up (a DELETE that does not take the id's lock, another process). To the caller, 404.
    if (Object.keys(values).length === 0) {
      const row = await this.get(caller, id, db);
      if (!row) throw this.notFound([id]);
      return row;
    }
    const update = this.definition.writes?.update;
    if (update) {
      if (!(await this.write(() => update(context, id, values)))) throw this.notFound([id]);
      const [row] = await this.queries.byId(db, this.idParams(caller, id));
      if (!row) throw this.notFound([id]);
      return row;
    }
    const [row] = await this.write(() =>
      onClassTable(db)
        .updateTable(this.definition.table)
        .set(values)
        .where(this.idColumn, '=', id)
        .returning(this.columns)
        .execute(),
    );
    if (!row) throw this.notFound([id]);
    return row;
  }

  private async write<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw this.writeError(error);
    }
  }

  /** What a failed write is answered: 409 for a value already taken, the error itself otherwise. */
  private writeError(error: unknown): unknown {
    if (isUniqueViolation(error))
      return new ApiError(409, `That value is already taken by another ${this.definition.name.toLowerCase()}`);
    return error;
  }

  private transaction<T>(work: (db: Transaction<Schema>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }
}
