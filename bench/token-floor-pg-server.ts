// A floor, not the service: the least the token endpoint's refresh_token and authorization_code
// grants can cost on PostgreSQL with the service's schema. Fastify with one pino line per request
// (asynchronous destination), an in-memory rate limit, and node-postgres with the service's pool
// size and named statements (parsed once per connection). Like the service, each grant is ONE
// statement that also authenticates the client (the application exists and its secret hash is the
// presented secret's, or both are null):
// - refresh_token: the session by the refresh token's SHA-256 (locked, its client and expiry
//   checked), the rotation and the record of the old hash (a data-modifying WITH);
// - authorization_code: the claim of the code by its hash (client, unused, unexpired, redirect URI,
//   PKCE S256 compared as the challenge) and the new session from the claimed row.
// When it returns no row, one lookup of the client chooses invalid_client or invalid_grant (the
// service's full path does more there; failures are not what the floor measures).
// The answer is the service's token response (the same fields). No validation schema, error model,
// metrics or security headers. Started with DATABASE_URL by bench/token-floors.ts (the token floor
// rows of a PostgreSQL run of bench/run.ts) and by bench/cpu-per-request.ts --database.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import formbody from '@fastify/formbody';
import rateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyReply } from 'fastify';
import pg from 'pg';
import pino from 'pino';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const hash = (text: string) => createHash('sha256').update(text).digest('base64url');
const ACCESS_MS = 3_600_000;
const REFRESH_MS = 30 * 86_400_000;

const CLIENT = 'select 1 from applications where client_id = $1 and secret_hash is not distinct from $2';
const ROTATE = `with old as (select session_id, scope, refresh_expires_at from sessions where refresh_token_hash = $6 and client_id = $7 and refresh_expires_at > $5
      and exists (select 1 from applications where client_id = $7 and secret_hash is not distinct from $8) for update),
  rotated as (update sessions set access_token_hash = $1, access_expires_at = $2, refresh_token_hash = $3, refresh_expires_at = $4, last_used_at = $5
    from old where sessions.session_id = old.session_id and sessions.refresh_token_hash = $6 returning sessions.session_id),
  recorded as (insert into rotated_refresh_tokens (refresh_token_hash, session_id, expires_at) select $6, old.session_id, old.refresh_expires_at from old join rotated on rotated.session_id = old.session_id)
  select old.session_id, old.scope from old join rotated on rotated.session_id = old.session_id`;
const EXCHANGE = `with claimed as (update authorization_codes set used_at = $5, session_id = $1 where code_hash = $9 and used_at is null and client_id = $2
      and expires_at > $5 and redirect_uri = $3 and code_challenge = $4
      and exists (select 1 from applications where client_id = $2 and secret_hash is not distinct from $11)
    returning session_id, user_id, client_id, scope)
  insert into sessions (session_id, user_id, client_id, scope, access_token_hash, access_expires_at, refresh_token_hash, refresh_expires_at, created_at, last_used_at)
  select claimed.session_id, claimed.user_id, claimed.client_id, claimed.scope, $6, cast($7 as bigint), $8, cast($10 as bigint), cast($5 as bigint), cast($5 as bigint) from claimed
  returning scope`;

function answer(reply: FastifyReply, scope: string, now: number) {
  const accessToken = randomBytes(32).toString('base64url');
  const refreshToken = randomBytes(32).toString('base64url');
  const body = {
    token_type: 'Bearer',
    access_token: accessToken,
    refresh_token: refreshToken,
    access_token_expiration: Math.floor((now + ACCESS_MS) / 1000),
    refresh_token_expiration: Math.floor((now + REFRESH_MS) / 1000),
    access_token_expires_in: ACCESS_MS / 1000,
    refresh_token_expires_in: REFRESH_MS / 1000,
    expires_in: ACCESS_MS / 1000,
    scope,
    now: now / 1000,
  };
  return {
    body,
    accessHash: hash(accessToken),
    refreshHash: hash(refreshToken),
    send: () => reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(body),
  };
}

const invalidGrant = (reply: FastifyReply) => reply.code(400).send({ error: 'invalid_grant' });

/** After a grant's statement returned no row: invalid_client if the client does not authenticate. */
async function refuse(reply: FastifyReply, clientId: string, secretHash: string | null) {
  const { rowCount } = await pool.query({ name: 'client', text: CLIENT, values: [clientId, secretHash] });
  return rowCount === 0 ? reply.code(401).send({ error: 'invalid_client' }) : invalidGrant(reply);
}

const app = Fastify({
  logger: { level: 'info', stream: pino.destination({ dest: 1, sync: false }) },
  disableRequestLogging: true,
});
app.addHook('onResponse', (request, reply, done) => {
  request.log.info(
    { method: request.method, path: request.url, status: reply.statusCode, ms: reply.elapsedTime },
    'request',
  );
  done();
});
await app.register(rateLimit, { max: 1_000_000_000, timeWindow: 60_000 });
await app.register(formbody);
app.get('/', async () => 'ok');
app.post('/v4/login', async (request, reply) => {
  const params = request.body as Record<string, string | undefined>;
  const clientId = params.client_id ?? '';
  const secretHash = params.client_secret === undefined ? null : hash(params.client_secret);
  const now = Date.now();
  const tokens = answer(reply, '', now);
  if (params.grant_type === 'refresh_token') {
    const oldHash = hash(params.refresh_token ?? '');
    const values = [
      tokens.accessHash,
      now + ACCESS_MS,
      tokens.refreshHash,
      now + REFRESH_MS,
      now,
      oldHash,
      clientId,
      secretHash,
    ];
    const rotated = await pool.query({ name: 'rotate', text: ROTATE, values });
    if (rotated.rowCount === 0) return refuse(reply, clientId, secretHash);
    tokens.body.scope = rotated.rows[0].scope;
    return tokens.send();
  }
  if (params.grant_type === 'authorization_code') {
    if (!params.code_verifier) return invalidGrant(reply);
    const challenge = createHash('sha256').update(params.code_verifier, 'ascii').digest('base64url');
    const values = [
      randomUUID(),
      clientId,
      params.redirect_uri ?? null,
      challenge,
      now,
      tokens.accessHash,
      now + ACCESS_MS,
      tokens.refreshHash,
      hash(params.code ?? ''),
      now + REFRESH_MS,
      secretHash,
    ];
    const exchanged = await pool.query({ name: 'exchange', text: EXCHANGE, values });
    if (exchanged.rowCount === 0) return refuse(reply, clientId, secretHash);
    tokens.body.scope = exchanged.rows[0].scope;
    return tokens.send();
  }
  return reply.code(400).send({ error: 'unsupported_grant_type' });
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.on(
  'SIGTERM',
  () =>
    void app.close().then(async () => {
      await pool.end();
      process.exit(0);
    }),
);
