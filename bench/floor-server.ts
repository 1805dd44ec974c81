// A reference, not the service: the cheapest Fastify server that still does the per-request work
// issue 2 requires of GET /v1/user.php/<id>: one pino line per request, an in-memory per-IP rate
// limit, and one primary-key lookup in SQLite (a raw prepared statement, no query builder). Its
// ratio to hello-world shows how much of the 0.5x targets this machine leaves to our own code.
import rateLimit from '@fastify/rate-limit';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';

const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
const db = new Database(join(dir, 'floor.db'));
db.pragma('journal_mode = WAL');
db.exec('create table users (user_id text primary key, public_key text)');
db.prepare('insert into users values (?, ?)').run('00000000-0000-4000-8000-000000000000', 'x'.repeat(180));
const lookup = db.prepare<[string], { user_id: string; public_key: string }>('select user_id, public_key from users where user_id = ?');

const app = Fastify({ logger: { level: 'info', stream: pino.destination({ dest: 1, sync: false }) }, disableRequestLogging: true });
app.addHook('onResponse', (request, reply, done) => {
  request.log.info({ method: request.method, path: request.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
  done();
});
await app.register(rateLimit, { max: 1_000_000_000, timeWindow: 60_000 });
app.get<{ Params: { id: string } }>('/v1/user.php/:id', async (request, reply) => {
  const row = lookup.get(request.params.id);
  return row ?? reply.code(404).send({ code: 'notFound', message: 'not found' });
});
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.on('SIGTERM', () =>
  void app.close().then(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }),
);
