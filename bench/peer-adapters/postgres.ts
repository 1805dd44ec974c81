// The PostgreSQL peer: the SQLite peer's table (knex adapter's shape) in a schema of its own in
// the bench database, through a pg Pool of 10 connections (the service's pool size) with named
// statements, each call one autocommit statement. The schema is dropped on close.
import type { Adapter } from 'oidc-provider';
import pg from 'pg';
import { freshSchema } from '../postgres-schema.ts';
import { payloadOf, payloadsTable } from './sqlite.ts';
import { expiresAt, modelType, type PeerStorage } from './storage.ts';

export async function openPostgres(url: string): Promise<PeerStorage> {
  const schema = await freshSchema(url, 'bench_peer');
  const pool = new pg.Pool({ connectionString: schema.url, max: 10 });
  for (const statement of payloadsTable('bigint')) await pool.query(statement);
  const settings = await pool.query<{ name: string; setting: string }>(
    "select name, setting from pg_settings where name in ('synchronous_commit', 'fsync') order by name",
  );

  const run = (name: string, text: string, values: unknown[]) => pool.query({ name, text, values });
  const select = async (name: string, text: string, values: unknown[]) =>
    payloadOf((await run(name, text, values)).rows[0]);
  const adapter = (model: string): Adapter => {
    const type = modelType(model);
    return {
      async upsert(id, payload, expiresIn) {
        await run(
          'upsert',
          `insert into oidc_payloads (id, type, payload, grant_id, user_code, uid, expires_at) values ($1, $2, $3, $4, $5, $6, $7)
           on conflict (id, type) do update set payload = excluded.payload, grant_id = excluded.grant_id, user_code = excluded.user_code,
             uid = excluded.uid, expires_at = excluded.expires_at`,
          [
            id,
            type,
            JSON.stringify(payload),
            payload.grantId ?? null,
            payload.userCode ?? null,
            payload.uid ?? null,
            expiresAt(expiresIn),
          ],
        );
      },
      find: (id) =>
        select('find', 'select payload, consumed_at from oidc_payloads where id = $1 and type = $2', [id, type]),
      findByUserCode: (userCode) =>
        select(
          'find-by-user-code',
          'select payload, consumed_at from oidc_payloads where user_code = $1 and type = $2',
          [userCode, type],
        ),
      findByUid: (uid) =>
        select('find-by-uid', 'select payload, consumed_at from oidc_payloads where uid = $1 and type = $2', [
          uid,
          type,
        ]),
      async consume(id) {
        await run('consume', 'update oidc_payloads set consumed_at = $1 where id = $2 and type = $3', [
          Math.floor(Date.now() / 1000),
          id,
          type,
        ]);
      },
      async destroy(id) {
        await run('destroy', 'delete from oidc_payloads where id = $1 and type = $2', [id, type]);
      },
      async revokeByGrantId(grantId) {
        await run('revoke-by-grant-id', 'delete from oidc_payloads where grant_id = $1 and type = $2', [grantId, type]);
      },
    };
  };
  return {
    adapter,
    describe: `pg Pool of 10, ${settings.rows.map((row) => `${row.name}=${row.setting}`).join(', ')}`,
    async close() {
      await pool.end();
      await schema.drop();
    },
  };
}
