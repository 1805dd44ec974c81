import type { Expression, ExpressionBuilder, Kysely, SqlBool } from 'kysely';
import { sql } from 'kysely';
import type { Schema } from '../db/schema.ts';

// Back-channel logout's outbox (table backchannel_logouts): a notice is queued in the transaction
// that ends the session, so it exists exactly when the ending committed, and is sent afterwards by
// whichever instance claims it (backchannel-delivery.ts). Here are its statements.

/** A queued notice that nobody could send for this long is dropped by the purge. */
export const OUTBOX_TTL_MS = 24 * 60 * 60 * 1000;

/** Which sessions a session-ending statement ends. */
export type SessionFilter = (eb: ExpressionBuilder<Schema, 'sessions'>) => Expression<SqlBool>;

/**
 * Queues a back-channel logout for every session `filter` selects whose application registered a
 * back-channel URI. Run in the ending's transaction, before its delete. One notice per session:
 * a session ended twice at once (two instances) is queued once.
 */
export async function enqueueBackchannelLogouts(
  db: Kysely<Schema>,
  filter: SessionFilter,
  now: number,
): Promise<number> {
  const result = await db
    .insertInto('backchannel_logouts')
    .columns(['session_id', 'client_id', 'user_id', 'created_at', 'attempts', 'next_attempt_at', 'expires_at'])
    .expression((eb) =>
      db
        .selectFrom('sessions')
        .select([
          'session_id',
          'client_id',
          'user_id',
          eb.cast<number>(eb.val(now), 'bigint').as('created_at'),
          sql<number>`0`.as('attempts'),
          eb.cast<number>(eb.val(now), 'bigint').as('next_attempt_at'),
          eb.cast<number>(eb.val(now + OUTBOX_TTL_MS), 'bigint').as('expires_at'),
        ])
        .where(filter)
        .where('client_id', 'in', (sub) =>
          sub.selectFrom('applications').select('client_id').where('backchannel_logout_uri', 'is not', null),
        ),
    )
    .onConflict((oc) => oc.column('session_id').doNothing())
    .executeTakeFirst();
  const queued = Number(result.numInsertedOrUpdatedRows ?? 0n);
  if (queued > 0) queuedSinceWake = true;
  return queued;
}

/** A notice claimed for one try. */
export interface ClaimedLogout {
  sessionId: string;
  clientId: string;
  userId: string;
  /** This try's number (1 for the first). */
  attempt: number;
}

/**
 * Claims up to `limit` due notices for one try each: their attempt is counted and they are due
 * again only after `leaseMs` (another instance takes over a notice whose sender died). The
 * update's condition re-checks that each is still due, so two instances never claim one notice.
 */
export async function claimDueLogouts(
  db: Kysely<Schema>,
  now: number,
  leaseMs: number,
  limit: number,
): Promise<ClaimedLogout[]> {
  const rows = await db
    .updateTable('backchannel_logouts')
    .set((eb) => ({ attempts: eb('attempts', '+', 1), next_attempt_at: now + leaseMs }))
    .where('session_id', 'in', (eb) =>
      eb
        .selectFrom('backchannel_logouts')
        .select('session_id')
        .where('next_attempt_at', '<=', now)
        .orderBy('next_attempt_at')
        .limit(limit),
    )
    .where('next_attempt_at', '<=', now)
    .returning(['session_id', 'client_id', 'user_id', 'attempts'])
    .execute();
  return rows.map((row) => ({
    sessionId: row.session_id,
    clientId: row.client_id,
    userId: row.user_id,
    attempt: Number(row.attempts),
  }));
}

/** A notice that was sent, or will never be: it leaves the queue. */
export async function removeLogout(db: Kysely<Schema>, sessionId: string): Promise<void> {
  await db.deleteFrom('backchannel_logouts').where('session_id', '=', sessionId).execute();
}

/** A failed try: the notice is due again at `at` (unless another instance has claimed it since). */
export async function retryLogoutAt(db: Kysely<Schema>, claimed: ClaimedLogout, at: number): Promise<void> {
  await db
    .updateTable('backchannel_logouts')
    .set({ next_attempt_at: at })
    .where('session_id', '=', claimed.sessionId)
    .where('attempts', '=', claimed.attempt)
    .execute();
}

// Waking the senders: a notice can be sent only once its transaction committed, which the
// statement above cannot see. It notes that something was queued; the app wakes the senders after
// each answer that follows (src/app.ts), and they also look on their own every few seconds.

let queuedSinceWake = false;
const senders = new Set<() => void>();

/** Registers a sender to wake when notices were queued; answers the function that unregisters it. */
export function onLogoutsQueued(wake: () => void): () => void {
  senders.add(wake);
  return () => senders.delete(wake);
}

/** After a request's work committed: wakes the senders if it queued notices. */
export function wakeSendersIfQueued(): void {
  if (!queuedSinceWake) return;
  queuedSinceWake = false;
  for (const wake of senders) wake();
}
