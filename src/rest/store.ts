import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { Database } from '../db/connection.ts';
import { containsIgnoringCase } from '../db/dialect.ts';
import { isUniqueViolation } from '../db/errors.ts';
import { lockKeys } from '../db/locks.ts';
import { ApiError, badRequest, forbidden, notFound } from '../http/errors.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import type { Caller, ClassDefinition, Row } from './definition.ts';

export interface ListQuery {
  pageSize: number;
  page: number;
  sortDirection: 'ascending' | 'descending';
  sortedColumn: string;
  filters: Record<string, string>;
}

/** The generic operations on one class's table, within what the caller may see and change. */
export class ClassStore {
  private readonly idColumn: string;
  private readonly columns: string[];

  constructor(
    private readonly definition: ClassDefinition,
    private readonly database: Database,
  ) {
    this.idColumn = definition.id.column;
    this.columns = [this.idColumn, ...Object.values(definition.properties).map((property) => property.column)];
  }

  private get db(): Kysely<any> {
    return this.database.db;
  }

  private columnOf(property: string): string {
    return property === this.definition.id.property ? this.idColumn : this.definition.properties[property]!.column;
  }

  private visibleRows(db: Kysely<any>, caller: Caller): SelectQueryBuilder<any, any, {}> {
    const visible = this.definition.visible;
    const query = db.selectFrom(this.definition.table);
    return visible ? query.where((eb) => visible(eb, caller)) : query;
  }

  /** The instance as JSON: column values converted, hidden properties left out. */
  toJson(row: Row, caller: Caller): Row {
    const out: Row = { [this.definition.id.property]: row[this.idColumn] };
    for (const [name, property] of Object.entries(this.definition.properties)) {
      if (property.readScope && !caller.scopes.has(property.readScope)) continue;
      if (property.shownWhen && !property.shownWhen(row, caller)) continue;
      const value = row[property.column];
      out[name] = property.toJson ? property.toJson(value) : value;
    }
    return out;
  }

  async list(caller: Caller, query: ListQuery): Promise<{ total: number; rows: Row[] }> {
    let rows = this.visibleRows(this.db, caller);
    for (const [name, value] of Object.entries(query.filters)) {
      const column = this.columnOf(name);
      if (this.definition.filters?.[name] === 'substring') rows = rows.where(containsIgnoringCase(this.database.kind, column, value));
      else rows = rows.where(column, '=', this.definition.properties[name]?.fromJson ? this.convert(name, value) : value);
    }
    const counted = await rows.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
    const direction = query.sortDirection === 'descending' ? 'desc' : 'asc';
    const page = await rows
      .select(this.columns)
      .orderBy(this.columnOf(query.sortedColumn), direction)
      .orderBy(this.idColumn, direction)
      .limit(query.pageSize)
      .offset((query.page - 1) * query.pageSize)
      .execute();
    return { total: Number(counted.total), rows: page };
  }

  async get(caller: Caller, id: string, db: Kysely<any> = this.db): Promise<Row | undefined> {
    if (!isUuid(id)) return undefined;
    return this.visibleRows(db, caller).select(this.columns).where(this.idColumn, '=', normalizeUuid(id)).executeTakeFirst();
  }

  /**
   * POST: per object, update (supplied properties only) when it exists, create otherwise. The
   * existence checks, the inserts and the final read are one statement each for the whole batch,
   * not per object: a 250-object POST was a thousand statements before.
   */
  async save(caller: Caller, items: Row[]): Promise<{ created: Row[]; updated: Row[] }> {
    const idProperty = this.definition.id.property;
    const ids = items.map((item) => item[idProperty]).filter((id): id is string => typeof id === 'string').map(normalizeUuid);
    const givenIds = new Set(ids);
    const repeated = givenIds.size === ids.length ? undefined : ids.find((id, index) => ids.indexOf(id) !== index);
    if (repeated) throw badRequest(`${idProperty} ${repeated} appears twice in the request`, { [idProperty]: repeated });
    return this.transaction(async (db) => {
      await this.lockIds(db, ids);
      const visible = await this.visibleIds(db, caller, ids);
      const creates: Row[] = [];
      const updates: Array<{ id: string; item: Row }> = [];
      for (const [index, item] of items.entries()) {
        const given = item[idProperty] as string | undefined;
        const id = given === undefined ? undefined : normalizeUuid(given);
        if (id !== undefined && visible.has(id)) updates.push({ id, item });
        else creates.push(this.newRow(caller, id, item, index));
      }
      await this.checkNotHidden(db, creates.map((row) => row[this.idColumn] as string).filter((id) => givenIds.has(id)));
      await this.checkChangeable(db, caller, updates.map(({ id }) => id));
      for (const { id, item } of updates) await this.applyUpdate(db, caller, id, item, 'merge');
      await this.insertRows(db, creates);
      const rows = await this.rowsById(db, caller, [...creates.map((row) => row[this.idColumn] as string), ...updates.map(({ id }) => id)]);
      return {
        created: creates.map((row) => rows.get(row[this.idColumn] as string)!),
        updated: updates.map(({ id }) => rows.get(id)!),
      };
    });
  }

  /**
   * Writes naming the same ids run one after another, so an id another request is creating is seen
   * as existing once that request commits (an update, or 404 when hidden) instead of failing its insert.
   */
  private lockIds(db: Transaction<any>, ids: string[]): Promise<void> {
    return lockKeys(db, ids.map((id) => `${this.definition.table}:${id}`));
  }

  private async visibleIds(db: Kysely<any>, caller: Caller, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.visibleRows(db, caller).select(this.idColumn).where(this.idColumn, 'in', ids).execute();
    return new Set(rows.map((row) => row[this.idColumn] as string));
  }

  /** Ids that exist but the caller may not see are 404: to the caller they do not exist, and cannot be taken. */
  private async checkNotHidden(db: Kysely<any>, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const hidden = await db.selectFrom(this.definition.table).select(this.idColumn).where(this.idColumn, 'in', ids).execute();
    const hiddenIds = new Set(hidden.map((row) => row[this.idColumn] as string));
    const first = ids.find((id) => hiddenIds.has(id));
    if (first) throw this.notFound([first]);
  }

  private async rowsById(db: Kysely<any>, caller: Caller, ids: string[]): Promise<Map<string, Row>> {
    const rows = new Map<string, Row>();
    for (let from = 0; from < ids.length; from += 500) {
      const chunk = await this.visibleRows(db, caller).select(this.columns).where(this.idColumn, 'in', ids.slice(from, from + 500)).execute();
      for (const row of chunk) rows.set(row[this.idColumn] as string, row);
    }
    return rows;
  }

  /** PUT: replaces the instance (201 when it was new). */
  async replace(caller: Caller, id: string, body: Row): Promise<{ created: boolean; row: Row }> {
    this.checkBodyId(id, body);
    return this.transaction(async (db) => {
      await this.lockIds(db, [normalizeUuid(id)]);
      if (await this.existing(db, caller, normalizeUuid(id))) return { created: false, row: await this.update(db, caller, normalizeUuid(id), body, 'replace') };
      return { created: true, row: await this.create(db, caller, normalizeUuid(id), body) };
    });
  }

  /** PATCH: changes the supplied properties of an existing instance. */
  async patch(caller: Caller, id: string, body: Row): Promise<Row> {
    this.checkBodyId(id, body);
    return this.transaction(async (db) => {
      if (!(await this.existing(db, caller, normalizeUuid(id)))) throw this.notFound([id]);
      return this.update(db, caller, normalizeUuid(id), body, 'merge');
    });
  }

  /** DELETE of one or several: all or nothing. */
  async remove(caller: Caller, ids: string[]): Promise<void> {
    const wanted = [...new Set(ids.map(normalizeUuid))];
    await this.transaction(async (db) => {
      const found = wanted.length === 0 ? [] : await this.visibleRows(db, caller).select(this.idColumn).where(this.idColumn, 'in', wanted).execute();
      const foundIds = new Set(found.map((row) => row[this.idColumn] as string));
      const missing = wanted.filter((id) => !foundIds.has(id));
      if (missing.length > 0) throw this.notFound(missing);
      await this.checkChangeable(db, caller, wanted);
      await db.deleteFrom(this.definition.table).where(this.idColumn, 'in', wanted).execute();
    });
  }

  private notFound(ids: string[]): ApiError {
    const noun = this.definition.name.toLowerCase();
    return notFound(ids.length === 1 ? `No ${noun} ${ids[0]}` : `No ${noun} with these ids: ${ids.join(', ')}`, { [this.definition.id.property]: ids });
  }

  private checkBodyId(id: string, body: Row): void {
    const given = body[this.definition.id.property];
    if (typeof given === 'string' && normalizeUuid(given) !== normalizeUuid(id)) {
      throw badRequest(`${this.definition.id.property} in the body differs from the one in the path`);
    }
  }

  /** True when the instance exists and the caller sees it; 404 when it exists but is hidden. */
  private async existing(db: Kysely<any>, caller: Caller, id: string): Promise<boolean> {
    if (await this.get(caller, id, db)) return true;
    const hidden = await db.selectFrom(this.definition.table).select(this.idColumn).where(this.idColumn, '=', id).executeTakeFirst();
    if (hidden) throw this.notFound([id]);
    return false;
  }

  private async checkChangeable(db: Kysely<any>, caller: Caller, ids: string[]): Promise<void> {
    const changeable = this.definition.changeable;
    if (!changeable) return;
    const rows = await db.selectFrom(this.definition.table).select(this.idColumn).where(this.idColumn, 'in', ids).where((eb) => changeable(eb, caller)).execute();
    if (rows.length !== ids.length) throw forbidden(`You may not change this ${this.definition.name.toLowerCase()}`);
  }

  private convert(name: string, value: unknown): unknown {
    const property = this.definition.properties[name]!;
    return property.fromJson && value !== null ? property.fromJson(value) : value;
  }

  /** Column values for the writable properties in `body`; with `replace`, absent ones reset. */
  private writtenColumns(caller: Caller, body: Row, mode: 'merge' | 'replace'): Row {
    const values: Row = {};
    for (const [name, property] of Object.entries(this.definition.properties)) {
      if (!property.writable) continue;
      if (name in body) values[property.column] = this.convert(name, body[name]);
      else if (mode === 'replace') values[property.column] = property.default ? property.default(caller) : null;
    }
    return values;
  }

  private async create(db: Kysely<any>, caller: Caller, id: string, body: Row): Promise<Row> {
    const row = this.newRow(caller, id, body);
    await this.insertRows(db, [row]);
    return (await this.get(caller, id, db))!;
  }

  /** The columns of a new instance: written values, defaults, owner, timestamps and revision. */
  private newRow(caller: Caller, id: string | undefined, body: Row, index?: number): Row {
    if (this.definition.operations?.create === false) {
      throw id ? this.notFound([id]) : new ApiError(405, `${this.definition.name} instances cannot be created through the API`);
    }
    const where = index === undefined ? '' : ` (item ${index})`;
    const values: Row = { [this.idColumn]: id ?? randomUUID(), ...this.writtenColumns(caller, body, 'merge') };
    for (const [name, property] of Object.entries(this.definition.properties)) {
      if (!property.writable || property.column in values) continue;
      if (property.default) values[property.column] = property.default(caller);
      else if (property.required) throw badRequest(`Missing required property ${name}${where}`, { property: name, index });
    }
    const now = Date.now();
    const { timestamps, revision } = this.definition;
    Object.assign(values, this.definition.onCreate?.(caller));
    if (timestamps?.created) values[timestamps.created] = now;
    if (timestamps?.updated) values[timestamps.updated] = now;
    if (revision) values[revision] = 1;
    return values;
  }

  private async insertRows(db: Kysely<any>, rows: Row[]): Promise<void> {
    // Rows of one class share their columns; 100 a statement keeps under every driver's parameter limit.
    for (let from = 0; from < rows.length; from += 100) {
      await this.write(() => db.insertInto(this.definition.table).values(rows.slice(from, from + 100)).execute());
    }
  }

  private async update(db: Kysely<any>, caller: Caller, id: string, body: Row, mode: 'merge' | 'replace'): Promise<Row> {
    await this.checkChangeable(db, caller, [id]);
    await this.applyUpdate(db, caller, id, body, mode);
    return (await this.get(caller, id, db))!;
  }

  private async applyUpdate(db: Kysely<any>, caller: Caller, id: string, body: Row, mode: 'merge' | 'replace'): Promise<void> {
    if (this.definition.operations?.update === false) throw new ApiError(405, `${this.definition.name} instances cannot be changed`);
    const values: Row = this.writtenColumns(caller, body, mode);
    const { timestamps, revision } = this.definition;
    if (timestamps?.updated) values[timestamps.updated] = Date.now();
    if (revision) values[revision] = sql`${sql.ref(revision)} + 1`;
    if (Object.keys(values).length > 0) {
      await this.write(() => db.updateTable(this.definition.table).set(values).where(this.idColumn, '=', id).execute());
    }
  }

  private async write(run: () => Promise<unknown>): Promise<void> {
    try {
      await run();
    } catch (error) {
      if (isUniqueViolation(error)) throw new ApiError(409, `That value is already taken by another ${this.definition.name.toLowerCase()}`);
      throw error;
    }
  }

  private transaction<T>(work: (db: Transaction<any>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }
}
