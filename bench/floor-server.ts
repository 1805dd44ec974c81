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
//
// It then also serves the floor of the 250-item page, GET /v4/projects?pageSize=N: after the bearer
// lookup, the page of the token's user by one raw prepared SELECT on the service's projects table
// (the service's order: updated_at, then project_id, an index range scan), rows as arrays, the total
// by a second SELECT when the page is full, and the spec's page object by JSON.stringify.
//
// On PostgreSQL, also the floor of the v1 GETs, GET /v1-floor/user.php/<id>: the reference's one
// primary-key lookup made on the service's users table by a named statement instead of on a SQLite
// table of its own, with no bearer (a v1 GET on PostgreSQL makes at least that one round trip).
//
// On PostgreSQL, also the floor of the bulk POST, POST /v4/projects with an array of new projects:
// after the bearer lookup, Fastify's JSON body, a check that each object has a string title and
// description, a UUIDv7 id, the defaults and timestamps per object, then one transaction of 50-row
// INSERTs (named statements) on the service's projects table, and the created objects as
// `{"created": […], "updated": []}` by JSON.stringify.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import rateLimit from '@fastify/rate-limit';
import Database from 'better-sqlite3';
import Fastify, { type FastifyRequest } from 'fastify';
import pg from 'pg';
import pino from 'pino';
import { uuidv7 } from '../src/http/uuid.ts';
import { hashSecret } from '../src/secrets/random-secrets.ts';

const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
const db = new Database(join(dir, 'floor.db'));
db.pragma('journal_mode = WAL');
db.exec('create table users (user_id text primary key, public_key text)');
db.prepare('insert into users values (?, ?)').run('00000000-0000-4000-8000-000000000000', 'x'.repeat(180));
const lookup = db.prepare<[string], { user_id: string; public_key: string }>(
  'select user_id, public_key from users where user_id = ?',
);

type ProjectValues = [string, string, string, string, string, number | string, number | string, number | string];
const PAGE_COLUMNS = 'project_id, user_id, title, description, game_id, revision, created_at, updated_at';

interface BearerSession {
  session_id: string;
  user_id: string;
  client_id: string;
  scope: string;
  access_expires_at: number | string;
}
const BEARER_SQL =
  'select session_id, user_id, client_id, scope, access_expires_at from sessions where access_token_hash = ';

interface ServiceDatabase {
  /** The session of an access-token hash. */
  find: (hash: string) => BearerSession | undefined | Promise<BearerSession | undefined>;
  /** A page of a user's projects, as column values, and their number. */
  page: (userId: string, limit: number) => ProjectValues[] | Promise<ProjectValues[]>;
  count: (userId: string) => number | Promise<number>;
  /** A project of a user, as column values. */
  project: (projectId: string, userId: string) => ProjectValues | undefined | Promise<ProjectValues | undefined>;
  /** PostgreSQL: a v1 user of the service's users table, the reference's lookup on the service's database. */
  user?: (userId: string) => Promise<{ user_id: string; public_key: string } | undefined>;
  /** PostgreSQL: inserts the rows (column values in PAGE_COLUMNS order) in one transaction. */
  insert?: (rows: ProjectValues[]) => Promise<void>;
  close: () => Promise<void>;
}

/** Rows in one INSERT of the bulk POST's floor, as in the service (src/rest/store.ts). */
const INSERT_CHUNK = 50;
const insertSql = (rows: number) =>
  `insert into projects (${PAGE_COLUMNS}) values ${Array.from({ length: rows }, (_, row) => `(${Array.from({ length: 8 }, (_, column) => `$${row * 8 + column + 1}`).join(', ')})`).join(', ')}`;
/** The rows in chunks of INSERT_CHUNK, the last one shorter. */
const chunks = (rows: ProjectValues[]) =>
  Array.from({ length: Math.ceil(rows.length / INSERT_CHUNK) }, (_, index) =>
    rows.slice(index * INSERT_CHUNK, (index + 1) * INSERT_CHUNK),
  );

/** The service's database, read by prepared statements. */
function serviceDatabase(url: string): ServiceDatabase {
  const pageSql = (userParam: string, limitParam: string) =>
    `select ${PAGE_COLUMNS} from projects where user_id = ${userParam} order by updated_at, project_id limit ${limitParam}`;
  const countSql = (userParam: string) => `select count(*) as total from projects where user_id = ${userParam}`;
  const projectSql = (idParam: string, userParam: string) =>
    `select ${PAGE_COLUMNS} from projects where project_id = ${idParam} and user_id = ${userParam}`;
  if (url.startsWith('sqlite:')) {
    const service = new Database(url.slice('sqlite:'.length), { readonly: true, fileMustExist: true });
    const bearerStatement = service.prepare<[string], BearerSession>(`${BEARER_SQL}?`);
    const pageStatement = service.prepare<[string, number], ProjectValues>(pageSql('?', '?')).raw(true);
    const countStatement = service.prepare<[string], { total: number }>(countSql('?'));
    const projectStatement = service.prepare<[string, string], ProjectValues>(projectSql('?', '?')).raw(true);
    return {
      find: (hash) => bearerStatement.get(hash),
      page: (userId, limit) => pageStatement.all(userId, limit) as unknown as ProjectValues[],
      count: (userId) => countStatement.get(userId)!.total,
      project: (projectId, userId) => projectStatement.get(projectId, userId) as unknown as ProjectValues | undefined,
      close: async () => void service.close(),
    };
  }
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  return {
    find: async (hash) =>
      (await pool.query<BearerSession>({ name: 'bearer', text: `${BEARER_SQL}$1`, values: [hash] })).rows[0],
    page: async (userId, limit) =>
      (
        await pool.query<ProjectValues>({
          name: 'page',
          text: pageSql('$1', '$2'),
          values: [userId, limit],
          rowMode: 'array',
        })
      ).rows,
    count: async (userId) =>
      Number(
        (await pool.query<{ total: string }>({ name: 'count', text: countSql('$1'), values: [userId] })).rows[0]!.total,
      ),
    project: async (projectId, userId) =>
      (
        await pool.query<ProjectValues>({
          name: 'project',
          text: projectSql('$1', '$2'),
          values: [projectId, userId],
          rowMode: 'array',
        })
      ).rows[0],
    user: async (userId) =>
      (
        await pool.query<{ user_id: string; public_key: string }>({
          name: 'user',
          text: 'select user_id, public_key from users where user_id = $1',
          values: [userId],
        })
      ).rows[0],
    insert: async (rows) => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        for (const chunk of chunks(rows))
          await client.query({ name: `insert${chunk.length}`, text: insertSql(chunk.length), values: chunk.flat() });
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
const bearer = process.env.FLOOR_BEARER_DATABASE ? serviceDatabase(process.env.FLOOR_BEARER_DATABASE) : undefined;

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
/** The bearer token's session, or undefined when the request has no valid token. */
async function session(request: FastifyRequest): Promise<BearerSession | undefined> {
  const header = request.headers.authorization;
  const found = header?.startsWith('Bearer ')
    ? await bearer!.find(hashSecret(header.slice('Bearer '.length)))
    : undefined;
  return found && Number(found.access_expires_at) > Date.now() ? found : undefined;
}
const unauthorized = { code: 'unauthorized', message: 'no valid bearer token' };

app.get<{ Params: { id: string } }>('/v1/user.php/:id', async (request, reply) => {
  if (bearer && !(await session(request))) return reply.code(401).send(unauthorized);
  const row = lookup.get(request.params.id);
  return row ?? reply.code(404).send({ code: 'notFound', message: 'not found' });
});
if (bearer) {
  const iso = (millis: number | string) => new Date(Number(millis)).toISOString();
  const projectJson = ([
    projectId,
    userId,
    title,
    description,
    gameId,
    revision,
    createdAt,
    updatedAt,
  ]: ProjectValues) => ({
    projectId,
    userId,
    title,
    description,
    gameId,
    revision: Number(revision),
    createdAt: iso(createdAt),
    updatedAt: iso(updatedAt),
  });
  app.get<{ Params: { id: string } }>('/v4/projects/:id', async (request, reply) => {
    const caller = await session(request);
    if (!caller) return reply.code(401).send(unauthorized);
    const row = await bearer.project(request.params.id, caller.user_id);
    return row ? projectJson(row) : reply.code(404).send({ code: 'notFound', message: 'not found' });
  });
  app.get<{ Querystring: { pageSize?: string } }>('/v4/projects', async (request, reply) => {
    const caller = await session(request);
    if (!caller) return reply.code(401).send(unauthorized);
    const pageSize = Math.min(250, Math.max(1, Number(request.query.pageSize ?? 250) || 250));
    const rows = await bearer.page(caller.user_id, pageSize);
    const total = rows.length < pageSize ? rows.length : await bearer.count(caller.user_id);
    const results = rows.map(projectJson);
    return reply
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ totalResults: total, pageSize, pages: Math.ceil(total / pageSize), page: 1, results }));
  });
  const { user } = bearer;
  if (user)
    app.get<{ Params: { id: string } }>('/v1-floor/user.php/:id', async (request, reply) => {
      const row = await user(request.params.id);
      return row ?? reply.code(404).send({ code: 'notFound', message: 'not found' });
    });
  const { insert } = bearer;
  if (insert)
    app.post<{ Body: unknown }>('/v4/projects', async (request, reply) => {
      const caller = await session(request);
      if (!caller) return reply.code(401).send(unauthorized);
      const body = request.body;
      const items = Array.isArray(body) ? body : [body];
      const valid =
        items.length <= 1000 &&
        items.every(
          (item) =>
            typeof item === 'object' &&
            item !== null &&
            typeof item.title === 'string' &&
            typeof item.description === 'string',
        );
      if (!valid)
        return reply
          .code(400)
          .send({ code: 'badRequest', message: 'each object needs a string title and description' });
      const now = Date.now();
      const rows = (items as Array<{ title: string; description: string }>).map(
        ({ title, description }): ProjectValues => [
          uuidv7(now),
          caller.user_id,
          title,
          description,
          'Ark',
          1,
          now,
          now,
        ],
      );
      await insert(rows);
      return reply
        .type('application/json; charset=utf-8')
        .send(JSON.stringify({ created: rows.map(projectJson), updated: [] }));
    });
}
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.on(
  'SIGTERM',
  () =>
    void app.close().then(async () => {
      await bearer?.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    }),
);
