import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Schema } from '../db/schema.ts';
import { countSecurityEvent } from '../http/metrics.ts';
import { uuidv7 } from '../http/uuid.ts';

/** What a security event says happened. */
export const SECURITY_EVENT_KINDS = [
  'sign_in_succeeded',
  'sign_in_failed',
  'sign_in_locked_out',
  'two_step_failed',
  'refresh_token_reused',
  'authorization_code_replayed',
  'client_authentication_failed',
  'password_changed',
  'two_step_enabled',
  'two_step_disabled',
  'session_ended',
  'device_trust_ended',
  'application_created',
  'application_deleted',
  'signed_up',
  'password_reset',
  'email_changed',
  'backup_code_used',
  'backup_codes_renewed',
  'application_updated',
  'application_secret_renewed',
  'passkey_added',
  'passkey_removed',
  'passkey_refused',
  'account_locked',
  'account_unlocked',
  'account_deleted',
  'operator_granted',
  'operator_revoked',
  'sessions_ended_by_operator',
  'two_step_removed_by_operator',
  'reset_sent_by_operator',
  'application_suspended',
  'application_restored',
  'data_exported',
  'web_session_ended',
  'invitation_sent',
] as const;

export type SecurityEventKind = (typeof SECURITY_EVENT_KINDS)[number];

/** Plain values only, and never a secret (no password, token, code or client secret). */
export type EventDetails = Record<string, string | number | boolean | null>;

export interface NewSecurityEvent {
  kind: SecurityEventKind;
  userId?: string | null | undefined;
  clientId?: string | null | undefined;
  details?: EventDetails;
}

/** Where an event comes from: a request (its client IP and logger) or the admin CLI (neither). */
export interface EventOrigin {
  ip?: string | null;
  log?: { info(object: object, message: string): void; error(object: object, message: string): void };
}

export interface SecurityEvent {
  eventId: string;
  kind: string;
  userId: string | null;
  username: string | null;
  clientId: string | null;
  ip: string | null;
  details: EventDetails;
  createdAt: number;
}

/**
 * Kinds an attacker can repeat without limit (a locked-out sign-in is refused before any check;
 * client authentication is limited only by the request rate): each is stored and logged at most
 * once a minute per process for the same IP, user and client, and the next one counts the
 * repeats left out, so a flood cannot turn every request into a database write.
 */
const REPEATABLE: ReadonlySet<SecurityEventKind> = new Set(['sign_in_locked_out', 'client_authentication_failed']);
const REPEAT_WINDOW_MS = 60_000;
const repeats = new LRUCache<string, { until: number; left: number }>({ max: 10_000 });

/** Whether to record this event now; adds the count of repeats left out since the last one. */
function notARepeat(event: NewSecurityEvent, ip: string | null, now: number): boolean {
  if (!REPEATABLE.has(event.kind)) return true;
  const key = JSON.stringify([event.kind, ip, event.userId ?? null, event.clientId ?? null]);
  const seen = repeats.get(key);
  if (seen && seen.until > now) {
    seen.left++;
    return false;
  }
  if (seen && seen.left > 0) event.details = { ...event.details, repeats_left_out: seen.left };
  repeats.set(key, { until: now + REPEAT_WINDOW_MS, left: 0 });
  return true;
}

/**
 * Stores the event and logs it as one JSON line. Never throws: failing to record an event must
 * not fail the user's request (the failure is logged instead).
 */
export async function recordSecurityEvent(
  db: Kysely<Schema>,
  origin: EventOrigin | undefined,
  event: NewSecurityEvent,
): Promise<void> {
  const now = Date.now();
  // Counted even when a repeat is not stored, so the metric shows the real rate (a lockout flood).
  countSecurityEvent(event.kind);
  if (!notARepeat(event, origin?.ip ?? null, now)) return;
  const row = {
    event_id: uuidv7(),
    kind: event.kind,
    user_id: event.userId ?? null,
    client_id: event.clientId ?? null,
    ip: origin?.ip ?? null,
    details: JSON.stringify(event.details ?? {}),
    created_at: now,
  };
  origin?.log?.info(
    {
      securityEvent: event.kind,
      eventId: row.event_id,
      userId: row.user_id,
      clientId: row.client_id,
      ip: row.ip,
      details: event.details ?? {},
    },
    'security event',
  );
  try {
    await db.insertInto('security_events').values(row).execute();
  } catch (err) {
    origin?.log?.error({ err, securityEvent: event.kind, eventId: row.event_id }, 'could not store a security event');
  }
}

/** Events newest first, optionally of one user and from a time on. */
export async function listSecurityEvents(
  db: Kysely<Schema>,
  filter: { userId?: string; since?: number; limit?: number } = {},
): Promise<SecurityEvent[]> {
  let query = db
    .selectFrom('security_events')
    .leftJoin('users', 'users.user_id', 'security_events.user_id')
    .select([
      'security_events.event_id',
      'security_events.kind',
      'security_events.user_id',
      'users.username',
      'security_events.client_id',
      'security_events.ip',
      'security_events.details',
      'security_events.created_at',
    ]);
  if (filter.userId !== undefined) query = query.where('security_events.user_id', '=', filter.userId);
  if (filter.since !== undefined) query = query.where('security_events.created_at', '>=', filter.since);
  const rows = await query
    .orderBy('security_events.created_at', 'desc')
    .orderBy('security_events.event_id', 'desc')
    .limit(filter.limit ?? 1000)
    .execute();
  return rows.map((row) => ({
    eventId: row.event_id,
    kind: row.kind,
    userId: row.user_id,
    username: row.username ?? null,
    clientId: row.client_id,
    ip: row.ip,
    details: JSON.parse(row.details) as EventDetails,
    createdAt: row.created_at,
  }));
}
