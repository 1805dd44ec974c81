// The SQLite peer: the table of the maintainers' contributed knex adapter (one row per record,
// keyed by (id, type), with the columns its lookups need) on better-sqlite3 with the service's
// own settings (WAL, synchronous = NORMAL), every statement prepared once. Each call is one
// autocommit statement, as knex issues them.
import Database from 'better-sqlite3';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { expiresAt, modelType, type PeerStorage } from './storage.ts';

/** The table and its indexes, in the SQL both SQL peers share (PostgreSQL spells the integers bigint). */
export const payloadsTable = (integer: string) => [
  `create table oidc_payloads (
    id text not null,
    type smallint not null,
    payload text not null,
    grant_id text,
    user_code text,
    uid text,
    expires_at ${integer},
    consumed_at ${integer},
    primary key (id, type)
  )`,
  'create index oidc_payloads_grant_id on oidc_payloads (grant_id)',
  'create index oidc_payloads_user_code on oidc_payloads (user_code) where user_code is not null',
  'create index oidc_payloads_uid on oidc_payloads (uid) where uid is not null',
];

interface Row {
  payload: string;
  consumed_at: number | string | null;
}

/** A stored row as the provider expects it back: its payload, marked consumed once consume ran. */
export const payloadOf = (row: Row | undefined): AdapterPayload | undefined =>
  row &&
  (row.consumed_at === null
    ? JSON.parse(row.payload)
    : { ...JSON.parse(row.payload), consumed: Number(row.consumed_at) });

export function openSqlite(file: string): PeerStorage {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  for (const statement of payloadsTable('integer')) db.exec(statement);
  const upsert = db.prepare(
    `insert into oidc_payloads (id, type, payload, grant_id, user_code, uid, expires_at) values (?, ?, ?, ?, ?, ?, ?)
     on conflict (id, type) do update set payload = excluded.payload, grant_id = excluded.grant_id, user_code = excluded.user_code,
       uid = excluded.uid, expires_at = excluded.expires_at`,
  );
  const byId = db.prepare<[string, number], Row>(
    'select payload, consumed_at from oidc_payloads where id = ? and type = ?',
  );
  const byUserCode = db.prepare<[string, number], Row>(
    'select payload, consumed_at from oidc_payloads where user_code = ? and type = ?',
  );
  const byUid = db.prepare<[string, number], Row>(
    'select payload, consumed_at from oidc_payloads where uid = ? and type = ?',
  );
  const consume = db.prepare('update oidc_payloads set consumed_at = ? where id = ? and type = ?');
  const destroy = db.prepare('delete from oidc_payloads where id = ? and type = ?');
  const revoke = db.prepare('delete from oidc_payloads where grant_id = ? and type = ?');
  const adapter = (model: string): Adapter => {
    const type = modelType(model);
    return {
      async upsert(id, payload, expiresIn) {
        upsert.run(
          id,
          type,
          JSON.stringify(payload),
          payload.grantId ?? null,
          payload.userCode ?? null,
          payload.uid ?? null,
          expiresAt(expiresIn),
        );
      },
      find: async (id) => payloadOf(byId.get(id, type)),
      findByUserCode: async (userCode) => payloadOf(byUserCode.get(userCode, type)),
      findByUid: async (uid) => payloadOf(byUid.get(uid, type)),
      async consume(id) {
        consume.run(Math.floor(Date.now() / 1000), id, type);
      },
      async destroy(id) {
        destroy.run(id, type);
      },
      async revokeByGrantId(grantId) {
        revoke.run(grantId, type);
      },
    };
  };
  return {
    adapter,
    describe: `better-sqlite3, journal_mode=${db.pragma('journal_mode', { simple: true })}, synchronous=${db.pragma('synchronous', { simple: true })} (1 = NORMAL)`,
    close: async () => void db.close(),
  };
}
