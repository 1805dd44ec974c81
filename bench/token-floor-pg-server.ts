// An experiment, not the service: the least a refresh_token grant can cost on PostgreSQL with the
// service's schema. Fastify with a pino line per request and node-postgres with the same pool size,
// no validation, limits or error model. ROTATION=transaction sends what the service sends (client,
// session by refresh-token hash, then BEGIN, rotation, rotated-token record, COMMIT: six round
// trips); ROTATION=statement does the rotation and its record in one statement (a data-modifying
// WITH), three round trips in all. Started by bench/token-floor.ts with DATABASE_URL.
import { createHash, randomBytes } from 'node:crypto';
import formbody from '@fastify/formbody';
import Fastify from 'fastify';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const hash = (text: string) => createHash('sha256').update(text).digest('base64url');
const oneStatement = process.env.ROTATION === 'statement';

const app = Fastify({ logger: { level: 'info' } });
await app.register(formbody);
app.get('/', async () => 'ok');
app.post('/v4/login', async (request, reply) => {
  const params = request.body as Record<string, string>;
  const client = await pool.query({ name: 'client', text: 'select client_id from applications where client_id = $1', values: [params.client_id ?? ''] });
  if (client.rowCount === 0) return reply.code(401).send({ error: 'invalid_client' });
  const oldHash = hash(params.refresh_token ?? '');
  const now = Date.now();
  const accessToken = randomBytes(32).toString('base64url');
  const refreshToken = randomBytes(32).toString('base64url');
  const values = [hash(accessToken), now + 3_600_000, hash(refreshToken), now + 30 * 86_400_000, now, oldHash];
  let scope: string | undefined;
  if (oneStatement) {
    const { rows } = await pool.query({
      name: 'rotate-in-one',
      text: `with old as (select session_id, scope, refresh_expires_at from sessions where refresh_token_hash = $6 for update),
        rotated as (update sessions s set access_token_hash = $1, access_expires_at = $2, refresh_token_hash = $3, refresh_expires_at = $4, last_used_at = $5
          from old where s.session_id = old.session_id and s.refresh_token_hash = $6 returning s.session_id),
        recorded as (insert into rotated_refresh_tokens (refresh_token_hash, session_id, expires_at) select $6, old.session_id, old.refresh_expires_at from old join rotated using (session_id))
        select old.scope from old join rotated using (session_id)`,
      values,
    });
    scope = rows[0]?.scope;
  } else {
    const found = await pool.query({ name: 'session', text: 'select session_id, scope, refresh_expires_at from sessions where refresh_token_hash = $1', values: [oldHash] });
    const session = found.rows[0];
    if (session) {
      const connection = await pool.connect();
      try {
        await connection.query('begin');
        await connection.query({
          name: 'rotate',
          text: 'update sessions set access_token_hash = $1, access_expires_at = $2, refresh_token_hash = $3, refresh_expires_at = $4, last_used_at = $5 where session_id = $7 and refresh_token_hash = $6',
          values: [...values, session.session_id],
        });
        await connection.query({ name: 'record', text: 'insert into rotated_refresh_tokens (refresh_token_hash, session_id, expires_at) values ($1, $2, $3)', values: [oldHash, session.session_id, session.refresh_expires_at] });
        await connection.query('commit');
        scope = session.scope;
      } finally {
        connection.release();
      }
    }
  }
  if (scope === undefined) return reply.code(400).send({ error: 'invalid_grant' });
  return reply.header('cache-control', 'no-store').send({ token_type: 'Bearer', access_token: accessToken, refresh_token: refreshToken, expires_in: 3600, scope });
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
