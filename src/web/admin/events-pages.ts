import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  type EventCursor,
  type EventFilter,
  eventLogLines,
  eventUserId,
  readEventPage,
} from '../../accounts/event-log.ts';
import { SECURITY_EVENT_KINDS, type SecurityEvent } from '../../accounts/security-events.ts';
import { sendPage } from '../pages.ts';
import { operatorOf } from './operator-gate.ts';

/**
 * The console's event log, GET /admin/events (DESIGN "Operating a public service"): newest first,
 * filtered by the query's `kind`, `user` (id, username or address), `ip`, `from` and `to` (ISO
 * 8601), 100 a page, the next page starting after the last event shown (`before`, a keyset);
 * `format=jsonl` downloads the whole filtered set, streamed from the database in batches.
 */

const PAGE_SIZE = 100;
const FILTERS = ['kind', 'user', 'ip', 'from', 'to'] as const;
type FilterName = (typeof FILTERS)[number];
const MAX_LENGTH: Record<FilterName | 'before' | 'format', number> = {
  kind: 64,
  user: 254,
  ip: 64,
  from: 40,
  to: 40,
  before: 80,
  format: 10,
};
const LABEL: Record<FilterName | 'before' | 'format', string> = {
  kind: 'The kind',
  user: 'The user',
  ip: 'The IP address',
  from: 'The start time',
  to: 'The end time',
  before: 'The page link',
  format: 'The format',
};

type Query = Record<string, unknown>;
type Typed = Partial<Record<FilterName, string>>;
type Parsed =
  | {
      ok: true;
      typed: Typed;
      filter: Omit<EventFilter, 'userId'> & { user?: string };
      before?: EventCursor;
      jsonl: boolean;
    }
  | { ok: false; typed: Typed; field: FilterName | 'before' | 'format'; message: string };

const CONTROL = /[\u0000-\u001f\u007f]/;
const CURSOR = /^([0-9]{1,15})\.([A-Za-z0-9-]{1,64})$/;
const ISO_TIME =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$/i;

/**
 * An ISO 8601 date or date and time as milliseconds: [start, end) of the day or of the instant
 * (a time without a zone is UTC), or undefined when it is no such time.
 */
export function parseIsoTime(text: string): { start: number; end: number } | undefined {
  const match = ISO_TIME.exec(text);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zone] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const dayStart = Date.UTC(year, month - 1, day);
  const check = new Date(dayStart);
  if (month < 1 || month > 12 || check.getUTCFullYear() !== year || check.getUTCDate() !== day) return undefined;
  if (h === undefined) return { start: dayStart, end: dayStart + 24 * 60 * 60 * 1000 };
  if (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) return undefined;
  let offsetMinutes = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    const hours = Number(digits.slice(0, 2));
    const minutes = Number(digits.slice(2));
    if (hours > 23 || minutes > 59) return undefined;
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (hours * 60 + minutes);
  }
  const ms = fraction ? Math.floor(Number(fraction) * 1000) : 0;
  const start = dayStart + (Number(h) * 60 + Number(mi)) * 60_000 + Number(s ?? 0) * 1000 + ms - offsetMinutes * 60_000;
  return { start, end: start + 1 };
}

function parseQuery(query: Query): Parsed {
  const typed: Typed = {};
  const values: Partial<Record<FilterName | 'before' | 'format', string>> = {};
  for (const name of [...FILTERS, 'before', 'format'] as const) {
    if (!Object.hasOwn(query, name)) continue;
    const value = query[name];
    if (typeof value !== 'string')
      return { ok: false, typed, field: name, message: `${LABEL[name]} was given more than once. Give it once.` };
    if (value.length > MAX_LENGTH[name])
      return {
        ok: false,
        typed,
        field: name,
        message: `${LABEL[name]} is too long: at most ${MAX_LENGTH[name]} characters.`,
      };
    if (CONTROL.test(value))
      return { ok: false, typed, field: name, message: `${LABEL[name]} holds a control character.` };
    const trimmed = value.trim();
    if (name !== 'before' && name !== 'format') typed[name] = trimmed;
    if (trimmed !== '') values[name] = trimmed;
  }
  const filter: Omit<EventFilter, 'userId'> & { user?: string } = {};
  if (values.kind) filter.kind = values.kind;
  if (values.user) filter.user = values.user;
  if (values.ip) filter.ip = values.ip;
  for (const name of ['from', 'to'] as const) {
    const text = values[name];
    if (text === undefined) continue;
    const time = parseIsoTime(text);
    if (!time)
      return {
        ok: false,
        typed,
        field: name,
        message: `${LABEL[name]} is not an ISO 8601 date or time: write it as 2025-01-31 or 2025-01-31T14:30Z.`,
      };
    if (name === 'from') filter.from = time.start;
    else filter.until = time.end;
  }
  let before: EventCursor | undefined;
  if (values.before !== undefined) {
    const match = CURSOR.exec(values.before);
    if (!match)
      return { ok: false, typed, field: 'before', message: 'The page link is damaged. Start again from the newest.' };
    before = { createdAt: Number(match[1]), eventId: match[2]! };
  }
  if (values.format !== undefined && values.format !== 'jsonl' && values.format !== 'html')
    return { ok: false, typed, field: 'format', message: 'The format is jsonl (a download) or html (this page).' };
  return { ok: true, typed, filter, ...(before ? { before } : {}), jsonl: values.format === 'jsonl' };
}

/** The query string of the filters typed (and more), for the page's links. */
function queryOf(typed: Typed, more: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  for (const name of FILTERS) if (typed[name]) params.set(name, typed[name]);
  for (const [name, value] of Object.entries(more)) params.set(name, value);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** A time as the page shows it: to the second, in UTC (the datetime attribute keeps the milliseconds). */
const shownTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

function eventView(event: SecurityEvent) {
  return {
    kind: event.kind,
    at: new Date(event.createdAt).toISOString(),
    shown: shownTime(event.createdAt),
    userId: event.userId,
    username: event.username,
    clientId: event.clientId,
    ip: event.ip,
    details: Object.entries(event.details).map(([key, value]) => `${key}=${value === null ? 'null' : String(value)}`),
  };
}

export async function eventsPages(admin: FastifyInstance): Promise<void> {
  const db = () => admin.database.db;

  const page = (reply: FastifyReply, data: Record<string, unknown>, status = 200) =>
    sendPage(
      reply,
      'admin/events',
      {
        section: 'events',
        kinds: SECURITY_EVENT_KINDS,
        typed: {},
        events: [],
        error: null,
        errorField: null,
        olderLink: null,
        newestLink: null,
        downloadLink: '/admin/events?format=jsonl',
        ...data,
      },
      status,
    );

  admin.get<{ Querystring: Query }>('/admin/events', async (request, reply) => {
    const username = operatorOf(request).account.username;
    const parsed = parseQuery(request.query);
    if (!parsed.ok)
      return page(
        reply,
        { username, typed: parsed.typed, error: parsed.message, errorField: parsed.field, filtered: true },
        400,
      );
    const { user, ...rest } = parsed.filter;
    const filter: EventFilter = user === undefined ? rest : { ...rest, userId: await eventUserId(db(), user) };
    if (parsed.jsonl) {
      // A fixed file name: nothing the operator typed reaches a header.
      return reply
        .code(200)
        .header('content-type', 'application/x-ndjson; charset=utf-8')
        .header('content-disposition', 'attachment; filename="security-events.jsonl"')
        .header('cache-control', 'no-store')
        .send(Readable.from(eventLogLines(db(), filter), { objectMode: false }));
    }
    const found = await readEventPage(db(), filter, parsed.before, PAGE_SIZE);
    return page(reply, {
      username,
      typed: parsed.typed,
      events: found.events.map(eventView),
      filtered: FILTERS.some((name) => parsed.typed[name]),
      olderLink: found.next
        ? `/admin/events${queryOf(parsed.typed, { before: `${found.next.createdAt}.${found.next.eventId}` })}`
        : null,
      newestLink: parsed.before ? `/admin/events${queryOf(parsed.typed)}` : null,
      downloadLink: `/admin/events${queryOf(parsed.typed, { format: 'jsonl' })}`,
    });
  });
}
