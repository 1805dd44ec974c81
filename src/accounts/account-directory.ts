import { type ExpressionBuilder, type Kysely, type RawBuilder, sql } from 'kysely';
import { dialectOf, startsWith } from '../db/dialect.ts';
import type { Schema } from '../db/schema.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';

/** An account as the operator's list shows it. */
export interface AccountSummary {
  userId: string;
  username: string | null;
  email: string | null;
  createdAt: number;
  locked: boolean;
  lockReason: string | null;
  operator: boolean;
  twoStep: boolean;
}

export type AccountState = 'active' | 'locked';

export interface AccountListQuery {
  /** A prefix of the username or the address, any case. */
  search?: string | undefined;
  state?: AccountState | undefined;
  /** The `next` of the page before. */
  after?: string | undefined;
  limit?: number | undefined;
}

/** Longer than any username or address: nothing can start with it. */
export const MAX_SEARCH_LENGTH = 254;

const summaryColumns = [
  'user_id',
  'username',
  'email',
  'created_at',
  'locked_at',
  'lock_reason',
  'operator',
  'totp_secret',
] as const;

type SummaryRow = Pick<Schema['users'], Exclude<(typeof summaryColumns)[number], 'operator'>> & { operator: number };

function toSummary(row: SummaryRow): AccountSummary {
  return {
    userId: row.user_id,
    username: row.username,
    email: row.email,
    createdAt: Number(row.created_at),
    locked: row.locked_at !== null,
    lockReason: row.lock_reason,
    operator: row.operator === 1,
    twoStep: row.totp_secret !== null,
  };
}

/** The keyset cursor of a page's last account: its creation time and id. */
const cursorOf = (account: AccountSummary) => `${account.createdAt}.${account.userId}`;

function parseCursor(cursor: string): Cursor | undefined {
  const dot = cursor.indexOf('.');
  const createdAt = Number(cursor.slice(0, dot));
  const userId = cursor.slice(dot + 1);
  return dot > 0 && Number.isSafeInteger(createdAt) && isUuid(userId)
    ? { createdAt, userId: normalizeUuid(userId) }
    : undefined;
}

export class InvalidListQuery extends Error {}

/**
 * Accounts newest first, a page at a time by keyset (the last one's creation time and id: no
 * OFFSET), optionally those whose username or address starts with `search` (any case; a range
 * over the indexes of migration 022) and in one state. `next`: the cursor of the following page.
 */
export async function listAccounts(
  db: Kysely<Schema>,
  query: AccountListQuery = {},
): Promise<{ accounts: AccountSummary[]; next: string | undefined }> {
  const limit = query.limit ?? 50;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000) throw new InvalidListQuery('limit must be 1 to 1000');
  const after = query.after === undefined || query.after === '' ? undefined : parseCursor(query.after);
  if (query.after && !after) throw new InvalidListQuery('after is not a cursor this list gave');
  const search = (query.search ?? '').trim().toLowerCase();
  if (search.length > MAX_SEARCH_LENGTH || search.includes('\u0000')) return { accounts: [], next: undefined };
  if (search !== '') {
    const found = await searchByIndexes(db, search, query.state, after, limit);
    if (found) return found;
  }
  const dialect = dialectOf(db);
  let select = db.selectFrom('users').select(summaryColumns);
  if (search !== '')
    select = select.where((eb) =>
      eb.or([startsWith(dialect, sql`lower(username)`, search), startsWith(dialect, sql.ref('email'), search)]),
    );
  if (query.state === 'active') select = select.where('locked_at', 'is', null);
  else if (query.state === 'locked') select = select.where('locked_at', 'is not', null);
  if (after) select = select.where((eb) => before(eb, after));
  const rows = await select
    .orderBy('created_at', 'desc')
    .orderBy('user_id', 'desc')
    .limit(limit + 1)
    .execute();
  return pageOf(rows.map(toSummary), limit);
}

type Cursor = { createdAt: number; userId: string };

/** Rows older than the cursor's, in the list's order (created_at, then user_id, both descending). */
const before = (eb: ExpressionBuilder<Schema, 'users'>, after: Cursor) =>
  eb.or([
    eb('created_at', '<', after.createdAt),
    eb.and([eb('created_at', '=', after.createdAt), eb('user_id', '<', after.userId)]),
  ]);

const pageOf = (accounts: AccountSummary[], limit: number) => {
  const page = accounts.slice(0, limit);
  return { accounts: page, next: accounts.length > limit ? cursorOf(page[page.length - 1]!) : undefined };
};

/**
 * Up to this many matches of a prefix are ordered from the search indexes alone (migration 025);
 * a prefix that matches more is common enough that walking the newest accounts finds a page soon.
 */
const SEARCH_CANDIDATES = 20_000;
const ROWS_PER_READ = 500;

/**
 * A search page from the indexes that hold each prefix range with the creation time and id: of
 * each range, the database keeps the newest matches (no row of the table read but theirs) and
 * answers their rows; the two are merged here. With a state to filter by, which only the rows
 * hold, each range answers every match's time and id instead, read in order until a page is
 * full. Answers undefined when a range holds more than SEARCH_CANDIDATES matches (the caller
 * walks the creation-time index instead, which soon finds a page of so common a prefix).
 */
async function searchByIndexes(
  db: Kysely<Schema>,
  search: string,
  state: AccountState | undefined,
  after: Cursor | undefined,
  limit: number,
): Promise<{ accounts: AccountSummary[]; next: string | undefined } | undefined> {
  const dialect = dialectOf(db);
  const newest = state ? sql`` : sql`limit ${limit + 1}`;
  const range = (expression: RawBuilder<unknown>, index: string) => {
    // SQLite would take the unique index of the column alone and read every match's row for its
    // creation time: it is told to use the search index, which holds the time and id.
    const table = dialect === 'postgres' ? sql`users` : sql`users indexed by ${sql.raw(index)}`;
    const older = after
      ? sql`and (created_at < ${after.createdAt} or (created_at = ${after.createdAt} and user_id < ${after.userId}))`
      : sql``;
    // `matches` counts the range (up to the cap) before the newest are kept.
    return sql`select * from (select created_at, user_id, count(*) over () as matches
      from (select created_at, user_id from ${table} where ${startsWith(dialect, expression, search)} ${older}
        limit ${SEARCH_CANDIDATES + 1}) as range_matches
      order by created_at desc, user_id desc ${newest}) as ${sql.raw(index)}`;
  };
  // Both ranges in one statement: each row says how many its range matched.
  const both = sql`${range(sql`lower(username)`, 'users_username_search')}
    union all ${range(sql.ref('email'), 'users_email_search')}`;
  const tooCommon = (rows: { matches: number | string }[]) =>
    rows.some((row) => Number(row.matches) > SEARCH_CANDIDATES);
  if (!state) {
    const columns = sql.join(summaryColumns.map((column) => sql.ref(`users.${column}`)));
    const { rows } = await sql<SummaryRow & { matches: number }>`select ${columns}, newest.matches
      from (${both}) as newest join users on users.user_id = newest.user_id`.execute(db);
    if (tooCommon(rows)) return undefined;
    const accounts = new Map(rows.map((row) => [row.user_id, toSummary(row)]));
    return pageOf([...accounts.values()].sort(newestFirst), limit);
  }
  const { rows: all } = await sql<{ created_at: number; user_id: string; matches: number }>`${both}`.execute(db);
  if (tooCommon(all)) return undefined;
  const times = new Map(all.map((row) => [row.user_id, Number(row.created_at)]));
  const ordered = [...times].map(([userId, createdAt]) => ({ userId, createdAt })).sort(newestFirst);
  const accounts: AccountSummary[] = [];
  for (let start = 0; start < ordered.length && accounts.length <= limit; start += ROWS_PER_READ) {
    const ids = ordered.slice(start, start + ROWS_PER_READ).map((match) => match.userId);
    const rows = await db
      .selectFrom('users')
      .select(summaryColumns)
      .where('user_id', 'in', ids)
      .where('locked_at', state === 'active' ? 'is' : 'is not', null)
      .execute();
    const found = new Map(rows.map((row) => [row.user_id, toSummary(row)]));
    for (const id of ids) {
      const account = found.get(id);
      if (account) accounts.push(account);
    }
  }
  return pageOf(accounts, limit);
}

/** The list's order: creation time, then id, both descending. */
const newestFirst = (a: Cursor, b: Cursor) =>
  a.createdAt !== b.createdAt ? b.createdAt - a.createdAt : a.userId < b.userId ? 1 : a.userId > b.userId ? -1 : 0;

/** The account `who` names: its id, username (any case) or address; undefined when none does. */
export async function findAccountSummary(db: Kysely<Schema>, who: string): Promise<AccountSummary | undefined> {
  const key = who.trim();
  if (key === '' || key.length > MAX_SEARCH_LENGTH || key.includes('\u0000')) return undefined;
  const lowered = key.toLowerCase();
  const row = await db
    .selectFrom('users')
    .select(summaryColumns)
    .where((eb) =>
      isUuid(key)
        ? eb('user_id', '=', normalizeUuid(key))
        : lowered.includes('@')
          ? eb('email', '=', lowered)
          : eb(sql`lower(username)`, '=', lowered),
    )
    .executeTakeFirst();
  return row && toSummary(row);
}
