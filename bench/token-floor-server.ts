// An experiment, not the service: the least a refresh_token grant can cost on the service's own
// schema and SQLite settings. Fastify with a pino line per request, raw better-sqlite3 prepared
// statements, the same four statements and one transaction as the service (client, session by
// refresh-token hash, rotation, rotated-token record). No validation, limits or error model.
// Started by bench/token-floor.ts with DB=<path of a database minted by bench/fixtures.ts>.
import { createHash, randomBytes } from 'node:crypto';
import formbody from '@fastify/formbody';
import Database from 'better-sqlite3';
import Fastify from 'fastify';

const db = new Database(process.env.DB!);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
const hash = (text: string) => createHash('sha256').update(text).digest('base64url');
const findClient = db.prepare<[string], { client_id: string }>('select client_id from applications where client_id = ?');
const findSession = db.prepare<[string], { session_id: string; scope: string; refresh_expires_at: number }>(
  'select session_id, scope, refresh_expires_at from sessions where refresh_token_hash = ?',
);
const rotate = db.prepare(
  'update sessions set access_token_hash = ?, access_expires_at = ?, refresh_token_hash = ?, refresh_expires_at = ?, last_used_at = ? where session_id = ? and refresh_token_hash = ?',
);
const recordRotated = db.prepare('insert into rotated_refresh_tokens (refresh_token_hash, session_id, expires_at) values (?, ?, ?)');
// STORE=memory: the sessions are read once at start into a Map and rotated there, never written.
const inMemory = process.env.STORE === 'memory';
type Session = { session_id: string; scope: string; refresh_expires_at: number; consumed_at?: number };
const memory = new Map<string, Session>(
  inMemory ? db.prepare<[], Session & { refresh_token_hash: string }>('select session_id, scope, refresh_expires_at, refresh_token_hash from sessions').all().map((row) => [row.refresh_token_hash, row]) : [],
);
const begin = db.prepare('begin');
const commit = db.prepare('commit');

const app = Fastify({ logger: { level: 'info' } });
await app.register(formbody);
app.get('/', async () => 'ok');
app.post('/v4/login', async (request, reply) => {
  const params = request.body as Record<string, string>;
  if (!findClient.get(params.client_id ?? '')) return reply.code(401).send({ error: 'invalid_client' });
  const oldHash = hash(params.refresh_token ?? '');
  const session = inMemory ? memory.get(oldHash) : findSession.get(oldHash);
  if (!session) return reply.code(400).send({ error: 'invalid_grant' });
  const now = Date.now();
  const accessToken = randomBytes(32).toString('base64url');
  const refreshToken = randomBytes(32).toString('base64url');
  if (inMemory) {
    // The same grant with a Map for its storage: what the HTTP path and the crypto cost alone.
    // The old token stays usable (marked, not removed), so the bench may hand the same tokens out again.
    memory.set(oldHash, { ...session, consumed_at: now });
    memory.set(hash(refreshToken), { ...session, refresh_expires_at: now + 30 * 86_400_000 });
    memory.set(hash(accessToken), session);
    return reply.header('cache-control', 'no-store').send({ token_type: 'Bearer', access_token: accessToken, refresh_token: refreshToken, expires_in: 3600, scope: session.scope });
  }
  begin.run();
  rotate.run(hash(accessToken), now + 3_600_000, hash(refreshToken), now + 30 * 86_400_000, now, session.session_id, oldHash);
  recordRotated.run(oldHash, session.session_id, session.refresh_expires_at);
  commit.run();
  return reply.header('cache-control', 'no-store').send({ token_type: 'Bearer', access_token: accessToken, refresh_token: refreshToken, expires_in: 3600, scope: session.scope });
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
