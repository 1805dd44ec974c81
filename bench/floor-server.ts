// A reference, not the service: the cheapest Fastify server that still does the per-request work
// issue 2 requires of GET /v1/user.php/<id>: one pino line per request, an in-memory per-IP rate
// limit, and one primary-key lookup in SQLite (a raw prepared statement, no query builder). Its
// ratio to hello-world shows how much of the 0.5x targets this machine leaves to our own code.
//
// With FLOOR_BEARER_DATABASE (the service's DATABASE_URL, sqlite:PATH or postgres://…) it is the
// second reference of issue 21, what a v4 GET must do besides: before the lookup, the bearer token
// of the Authorization header is looked up by its hash (SHA-256, as the service stores it) with one
// raw prepared SELECT on the service's sessions table, in the service's own database; a missing or
// expired token answers 401. The SQL names only the table and its columns.
import rateLimit from '@fastify/rate-limit';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { hashSecret } from '../src/oauth/secrets.ts';

const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
const db = new Database(join(dir, 'floor.db'));
db.pragma('journal_mode = WAL');
db.exec('create table users (user_id text primary key, public_key text)');
db.prepare('insert into users values (?, ?)').run('00000000-0000-4000-8000-000000000000', 'x'.repeat(180));
const lookup = db.prepare<[string], { user_id: string; public_key: string }>('select user_id, public_key from users where user_id = ?');

interface BearerSession {
  session_id: string;
  user_id: string;
  client_id: string;
  scope: string;
  access_expires_at: number | string;
}
const BEARER_SQL = 'select session_id, user_id, client_id, scope, access_expires_at from sessions where access_token_hash = ';

/** The session of an access-token hash, from the service's database, by one prepared statement. */
function bearerLookup(url: string): { find: (hash: string) => BearerSession | undefined | Promise<BearerSession | undefined>; close: () => Promise<void> } {
  if (url.startsWith('sqlite:')) {
    const service = new Database(url.slice('sqlite:'.length), { readonly: true, fileMustExist: true });
    const statement = service.prepare<[string], BearerSession>(`${BEARER_SQL}?`);
    return { find: (hash) => statement.get(hash), close: async () => void service.close() };
  }
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  return {
    find: async (hash) => (await pool.query<BearerSession>({ name: 'bearer', text: `${BEARER_SQL}$1`, values: [hash] })).rows[0],
    close: () => pool.end(),
  };
}
const bearer = process.env.FLOOR_BEARER_DATABASE ? bearerLookup(process.env.FLOOR_BEARER_DATABASE) : undefined;

const app = Fastify({ logger: { level: 'info', stream: pino.destination({ dest: 1, sync: false }) }, disableRequestLogging: true });
app.addHook('onResponse', (request, reply, done) => {
  request.log.info({ method: request.method, path: request.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
  done();
});
await app.register(rateLimit, { max: 1_000_000_000, timeWindow: 60_000 });
app.get<{ Params: { id: string } }>('/v1/user.php/:id', async (request, reply) => {
  if (bearer) {
    const header = request.headers.authorization;
    const session = header?.startsWith('Bearer ') ? await bearer.find(hashSecret(header.slice('Bearer '.length))) : undefined;
    if (!session || Number(session.access_expires_at) <= Date.now()) return reply.code(401).send({ code: 'unauthorized', message: 'no valid bearer token' });
  }
  const row = lookup.get(request.params.id);
  return row ?? reply.code(404).send({ code: 'notFound', message: 'not found' });
});
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.on('SIGTERM', () =>
  void app.close().then(async () => {
    await bearer?.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }),
);
