import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { findAccount, findAccountByLogin } from './accounts.ts';
import type { EventDetails, SecurityEvent } from './security-events.ts';

/**
 * The security event log as the operator console reads it (DESIGN "Operating a public service"):
 * newest first, filtered, a page at a time by keyset (the last event's time and id, never an
 * OFFSET), and the whole filtered set as JSON lines read in batches the same way, so a download of
 * a million events holds one batch in memory. Each filter has an index ending in (created_at,
 * event_id) (migration 026), so every page is a range scan of an index.
 */

export interface EventFilter {
  kind?: string;
  /** A user id (the events keep it after the account is erased). */
  userId?: string;
  ip?: string;
  /** Milliseconds, inclusive. */
  from?: number;
  /** Milliseconds, exclusive. */
  until?: number;
}

/** Where a page starts: after the event of this time and id (in newest-first order). */
export interface EventCursor {
  createdAt: number;
  eventId: string;
}

export interface EventPage {
  events: SecurityEvent[];
  /** The next (older) page's start, when there is one. */
  next: EventCursor | undefined;
}

/**
 * The user id a `user` filter names: an account's id, username or address; anything else is
 * taken as an id (an erased account's events keep only its id).
 */
export async function eventUserId(db: Kysely<Schema>, value: string): Promise<string> {
  const byId = await findAccount(db, value);
  if (byId) return byId.userId;
  return (await findAccountByLogin(db, value))?.userId ?? value;
}

/** Up to `limit` events matching `filter`, newest first, older than `after` when given. */
export async function readEventPage(
  db: Kysely<Schema>,
  filter: EventFilter,
  after: EventCursor | undefined,
  limit: number,
): Promise<EventPage> {
  let query = db
    .selectFrom('security_events as e')
    .leftJoin('users as u', 'u.user_id', 'e.user_id')
    .select(['e.event_id', 'e.kind', 'e.user_id', 'u.username', 'e.client_id', 'e.ip', 'e.details', 'e.created_at']);
  if (filter.kind !== undefined) query = query.where('e.kind', '=', filter.kind);
  if (filter.userId !== undefined) query = query.where('e.user_id', '=', filter.userId);
  if (filter.ip !== undefined) query = query.where('e.ip', '=', filter.ip);
  if (filter.from !== undefined) query = query.where('e.created_at', '>=', filter.from);
  if (filter.until !== undefined) query = query.where('e.created_at', '<', filter.until);
  if (after)
    query = query.where((eb) =>
      eb(eb.refTuple('e.created_at', 'e.event_id'), '<', eb.tuple(after.createdAt, after.eventId)),
    );
  const rows = await query
    .orderBy('e.created_at', 'desc')
    .orderBy('e.event_id', 'desc')
    .limit(limit + 1)
    .execute();
  const events = rows.slice(0, limit).map((row) => ({
    eventId: row.event_id,
    kind: row.kind,
    userId: row.user_id,
    username: row.username ?? null,
    clientId: row.client_id,
    ip: row.ip,
    details: JSON.parse(row.details) as EventDetails,
    createdAt: Number(row.created_at),
  }));
  const last = events.at(-1);
  return {
    events,
    next: rows.length > limit && last ? { createdAt: last.createdAt, eventId: last.eventId } : undefined,
  };
}

/** One event as a line of the download: at least kind, at, user_id, ip and details (DESIGN). */
export function eventLine(event: SecurityEvent): string {
  return `${JSON.stringify({
    event_id: event.eventId,
    kind: event.kind,
    at: new Date(event.createdAt).toISOString(),
    user_id: event.userId,
    username: event.username,
    client_id: event.clientId,
    ip: event.ip,
    details: event.details,
  })}\n`;
}

const DOWNLOAD_BATCH = 1000;

/**
 * Every event matching `filter`, newest first, as JSON lines: one string per batch of events,
 * each batch read by keyset after the previous one only when the reader wants more (a stream's
 * back-pressure), so memory holds one batch whatever the log's size.
 */
export async function* eventLogLines(db: Kysely<Schema>, filter: EventFilter): AsyncGenerator<string> {
  let after: EventCursor | undefined;
  do {
    const page = await readEventPage(db, filter, after, DOWNLOAD_BATCH);
    if (page.events.length > 0) yield page.events.map(eventLine).join('');
    after = page.next;
  } while (after);
}
