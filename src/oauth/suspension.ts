import type { Kysely } from 'kysely';
import { type EventOrigin, recordSecurityEvent } from '../accounts/security-events.ts';
import type { Schema } from '../db/schema.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { endApplicationSessions } from './sessions.ts';

/** Who suspends or restores: the console (an operator's id) or the CLI (none). */
export interface SuspensionContext {
  db: Kysely<Schema>;
  origin?: EventOrigin | undefined;
  via: 'cli' | 'web';
  operatorId: string | null;
}

/** 'unchanged': it was so already (a double submit): nothing changed, nothing recorded. */
export type SuspensionOutcome = 'done' | 'unchanged' | 'unknown';

/**
 * Suspends an application (an operator's decision): its sessions end at once, with every code,
 * device authorization and sign-in in progress; until restored its client authentication fails
 * (invalid_client) and its authorization requests show a page saying it is suspended.
 * Records application_suspended.
 */
export async function suspendApplication(ctx: SuspensionContext, clientId: string): Promise<SuspensionOutcome> {
  if (!isUuid(clientId)) return 'unknown';
  const id = normalizeUuid(clientId);
  return ctx.db.transaction().execute(async (trx) => {
    const changed = await trx
      .updateTable('applications')
      .set({ suspended_at: Date.now() })
      .where('client_id', '=', id)
      .where('suspended_at', 'is', null)
      .executeTakeFirst();
    if (changed.numUpdatedRows === 0n) return (await exists(trx, id)) ? 'unchanged' : 'unknown';
    const sessionsEnded = await endApplicationSessions(trx, id);
    await trx.deleteFrom('authorization_codes').where('client_id', '=', id).execute();
    await trx.deleteFrom('device_authorizations').where('client_id', '=', id).execute();
    await trx.deleteFrom('interactions').where('client_id', '=', id).execute();
    await recordSecurityEvent(trx, ctx.origin, {
      kind: 'application_suspended',
      clientId: id,
      details: { via: ctx.via, operator_id: ctx.operatorId, sessions_ended: sessionsEnded },
    });
    return 'done';
  });
}

/** Restores a suspended application: it authenticates again (the ended sessions stay ended). Records application_restored. */
export async function restoreApplication(ctx: SuspensionContext, clientId: string): Promise<SuspensionOutcome> {
  if (!isUuid(clientId)) return 'unknown';
  const id = normalizeUuid(clientId);
  return ctx.db.transaction().execute(async (trx) => {
    const changed = await trx
      .updateTable('applications')
      .set({ suspended_at: null })
      .where('client_id', '=', id)
      .where('suspended_at', 'is not', null)
      .executeTakeFirst();
    if (changed.numUpdatedRows === 0n) return (await exists(trx, id)) ? 'unchanged' : 'unknown';
    await recordSecurityEvent(trx, ctx.origin, {
      kind: 'application_restored',
      clientId: id,
      details: { via: ctx.via, operator_id: ctx.operatorId },
    });
    return 'done';
  });
}

async function exists(db: Kysely<Schema>, clientId: string): Promise<boolean> {
  return (
    (await db.selectFrom('applications').select('client_id').where('client_id', '=', clientId).executeTakeFirst()) !==
    undefined
  );
}
