import { type Kysely, sql } from 'kysely';
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

function parseCursor(cursor: string): { createdAt: number; userId: string } | undefined {
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
  const dialect = dialectOf(db);
  let select = db.selectFrom('users').select(summaryColumns);
  if (search !== '')
    select = select.where((eb) =>
      eb.or([startsWith(dialect, sql`lower(username)`, search), startsWith(dialect, sql.ref('email'), search)]),
    );
  if (query.state === 'active') select = select.where('locked_at', 'is', null);
  else if (query.state === 'locked') select = select.where('locked_at', 'is not', null);
  if (after)
    select = select.where((eb) =>
      eb.or([
        eb('created_at', '<', after.createdAt),
        eb.and([eb('created_at', '=', after.createdAt), eb('user_id', '<', after.userId)]),
      ]),
    );
  const rows = await select
    .orderBy('created_at', 'desc')
    .orderBy('user_id', 'desc')
    .limit(limit + 1)
    .execute();
  const accounts = rows.slice(0, limit).map(toSummary);
  return { accounts, next: rows.length > limit ? cursorOf(accounts[accounts.length - 1]!) : undefined };
}

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
