// A floor, not the service: the least the token endpoint's refresh_token and authorization_code
// grants can cost on PostgreSQL with the service's schema. Fastify with one pino line per request
// (asynchronous destination), an in-memory rate limit, and node-postgres with the service's pool
// size and named statements (parsed once per connection), the round trips the service sends:
// - refresh_token: the client by id; then the session by the refresh token's SHA-256 (locked, its
//   client and expiry checked), the rotation and the record of the old hash as one statement (a
//   data-modifying WITH): two round trips;
// - authorization_code: the client by id; the code by its hash (checked: client, unused, unexpired,
//   redirect URI, PKCE S256 in constant time); the claim of the code and the new session as one
//   statement: three round trips.
// The answer is the service's token response (the same fields). No validation schema, error model,
// metrics or security headers. Started by bench/run.ts (the floor rows of a PostgreSQL run) and
// bench/token-floor.ts with DATABASE_URL.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
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

const ROTATE = `with old as (select session_id, scope, refresh_expires_at from sessions where refresh_token_hash = $6 and client_id = $7 and refresh_expires_at > $5 for update),
  rotated as (update sessions set access_token_hash = $1, access_expires_at = $2, refresh_token_hash = $3, refresh_expires_at = $4, last_used_at = $5
    from old where sessions.session_id = old.session_id and sessions.refresh_token_hash = $6 returning sessions.session_id),
  recorded as (insert into rotated_refresh_tokens (refresh_token_hash, session_id, expires_at) select $6, old.session_id, old.refresh_expires_at from old join rotated on rotated.session_id = old.session_id)
  select old.session_id, old.scope from old join rotated on rotated.session_id = old.session_id`;
const EXCHANGE = `with claimed as (update authorization_codes set used_at = $5, session_id = $1 where code_hash = $9 and used_at is null returning session_id)
  insert into sessions (session_id, user_id, client_id, scope, access_token_hash, access_expires_at, refresh_token_hash, refresh_expires_at, created_at, last_used_at)
  select claimed.session_id, $2, $3, $4, $6, cast($7 as bigint), $8, cast($10 as bigint), cast($5 as bigint), cast($5 as bigint) from claimed returning session_id`;

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
  return { body, accessHash: hash(accessToken), refreshHash: hash(refreshToken), send: () => reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(body) };
}

const invalidGrant = (reply: FastifyReply) => reply.code(400).send({ error: 'invalid_grant' });

function verifierMatches(verifier: string | undefined, challenge: string): boolean {
  if (!verifier) return false;
  const expected = Buffer.from(challenge);
  const actual = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

const app = Fastify({ logger: { level: 'info', stream: pino.destination({ dest: 1, sync: false }) }, disableRequestLogging: true });
app.addHook('onResponse', (request, reply, done) => {
  request.log.info({ method: request.method, path: request.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
  done();
});
await app.register(rateLimit, { max: 1_000_000_000, timeWindow: 60_000 });
await app.register(formbody);
app.get('/', async () => 'ok');
app.post('/v4/login', async (request, reply) => {
  const params = request.body as Record<string, string | undefined>;
  const { rows: clients } = await pool.query({ name: 'client', text: 'select client_id, secret_hash from applications where client_id = $1', values: [params.client_id ?? ''] });
  const client = clients[0];
  if (!client || client.secret_hash !== null) return reply.code(401).send({ error: 'invalid_client' });
  const now = Date.now();
  if (params.grant_type === 'refresh_token') {
    const oldHash = hash(params.refresh_token ?? '');
    const tokens = answer(reply, '', now);
    const rotated = await pool.query({ name: 'rotate', text: ROTATE, values: [tokens.accessHash, now + ACCESS_MS, tokens.refreshHash, now + REFRESH_MS, now, oldHash, client.client_id] });
    if (rotated.rowCount === 0) return invalidGrant(reply);
    tokens.body.scope = rotated.rows[0].scope;
    return tokens.send();
  }
  if (params.grant_type === 'authorization_code') {
    const codeHash = hash(params.code ?? '');
    const found = await pool.query({ name: 'code', text: 'select client_id, user_id, redirect_uri, scope, code_challenge, expires_at, used_at from authorization_codes where code_hash = $1', values: [codeHash] });
    const code = found.rows[0];
    if (!code || code.client_id !== client.client_id || code.used_at !== null || code.expires_at <= now) return invalidGrant(reply);
    if (code.redirect_uri !== params.redirect_uri || !verifierMatches(params.code_verifier, code.code_challenge)) return invalidGrant(reply);
    const tokens = answer(reply, code.scope, now);
    const values = [randomUUID(), code.user_id, client.client_id, code.scope, now, tokens.accessHash, now + ACCESS_MS, tokens.refreshHash, codeHash, now + REFRESH_MS];
    const exchanged = await pool.query({ name: 'exchange', text: EXCHANGE, values });
    return exchanged.rowCount === 0 ? invalidGrant(reply) : tokens.send();
  }
  return reply.code(400).send({ error: 'unsupported_grant_type' });
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(async () => (await pool.end(), process.exit(0))));
