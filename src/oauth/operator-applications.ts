import type { Kysely } from 'kysely';
import { recordSecurityEvent } from '../accounts/security-events.ts';
import { lockKey } from '../db/locks.ts';
import type { Schema } from '../db/schema.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { type Application, toApplication } from './clients.ts';
import { endApplicationSessions } from './sessions.ts';
import type { SuspensionContext, SuspensionOutcome } from './suspension.ts';

/** An application as the operator's list shows it: who registered it and how many sessions it holds. */
export interface ApplicationOverview {
  application: Application;
  /** Sessions that can still be refreshed. */
  sessions: number;
}

/** Every application, operator-made and developer-registered, newest first, with its live sessions counted. */
export async function listEveryApplication(db: Kysely<Schema>, now = Date.now()): Promise<ApplicationOverview[]> {
  const [rows, counts] = await Promise.all([
    db.selectFrom('applications').selectAll().orderBy('created_at', 'desc').orderBy('client_id', 'desc').execute(),
    db
      .selectFrom('sessions')
      .select(['client_id', (eb) => eb.fn.countAll<number | string | bigint>().as('n')])
      .where('refresh_expires_at', '>', now)
      .groupBy('client_id')
      .execute(),
  ]);
  const sessions = new Map(counts.map((row) => [row.client_id, Number(row.n)]));
  return rows.map((row) => ({ application: toApplication(row), sessions: sessions.get(row.client_id) ?? 0 }));
}

/**
 * An operator deletes any application (as its developer can on /account/apps): every session,
 * pending sign-in, code and device authorization of it ends, in one transaction that records
 * application_deleted with the operator's id. 'unknown' for an id that names none (deleted already).
 */
export async function deleteApplicationAsOperator(
  ctx: SuspensionContext,
  clientId: string,
): Promise<Exclude<SuspensionOutcome, 'unchanged'>> {
  if (!isUuid(clientId)) return 'unknown';
  const id = normalizeUuid(clientId);
  return ctx.db.transaction().execute(async (trx) => {
    await lockKey(trx, `application:${id}`);
    const current = await trx
      .selectFrom('applications')
      .select(['name', 'owner_id'])
      .where('client_id', '=', id)
      .executeTakeFirst();
    if (!current) return 'unknown';
    const sessionsEnded = await endApplicationSessions(trx, id);
    await trx.deleteFrom('interactions').where('client_id', '=', id).execute();
    await trx.deleteFrom('authorization_codes').where('client_id', '=', id).execute();
    await trx.deleteFrom('device_authorizations').where('client_id', '=', id).execute();
    await trx.deleteFrom('applications').where('client_id', '=', id).execute();
    await recordSecurityEvent(trx, ctx.origin, {
      kind: 'application_deleted',
      userId: current.owner_id,
      clientId: id,
      details: { via: ctx.via, operator_id: ctx.operatorId, name: current.name, sessions_ended: sessionsEnded },
    });
    return 'done';
  });
}
