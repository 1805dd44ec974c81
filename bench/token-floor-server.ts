// A floor, not the service: the least the token endpoint's refresh_token and authorization_code
// grants can cost on the service's own SQLite schema and settings. Fastify with one pino line per
// request (asynchronous destination, as the reference floor-server.ts), an in-memory rate limit, and
// the grants' statements on raw better-sqlite3 prepared statements, each grant's writes a savepoint
// of the one transaction the grants of an event-loop turn share, answered after its COMMIT (the
// service's group commit on SQLite, src/db/sqlite-driver.ts). What the service sends for each grant:
// - refresh_token: the client by id; the session by the refresh token's SHA-256; then, in one
//   transaction, the rotation (both hashes, guarded by the old one) and the record of the old hash;
// - authorization_code: the client by id; the code by its hash (checked: client, unused, unexpired,
//   redirect URI, PKCE S256 in constant time); then, in one transaction, the claim of the code
//   (guarded by used_at is null) and the new session with both token hashes.
// The answer is the service's token response (the same fields). No validation schema, error model,
// metrics or security headers. Started by bench/token-floors.ts (the token floor rows of
// bench/run.ts) with DB=<path of a database minted by bench/fixtures.ts>.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import formbody from '@fastify/formbody';
import rateLimit from '@fastify/rate-limit';
import Database from 'better-sqlite3';
import Fastify, { type FastifyReply } from 'fastify';
import pino from 'pino';

const db = new Database(process.env.DB!);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
db.pragma('busy_timeout = 5000');
const hash = (text: string) => createHash('sha256').update(text).digest('base64url');
const ACCESS_MS = 3_600_000;
const REFRESH_MS = 30 * 86_400_000;
const findClient = db.prepare<[string], { client_id: string; secret_hash: string | null }>(
  'select client_id, secret_hash from applications where client_id = ?',
);
const findSession = db.prepare<
  [string],
  { session_id: string; client_id: string; scope: string; refresh_expires_at: number }
>('select session_id, client_id, scope, refresh_expires_at from sessions where refresh_token_hash = ?');
const rotate = db.prepare(
  'update sessions set access_token_hash = ?, access_expires_at = ?, refresh_token_hash = ?, refresh_expires_at = ?, last_used_at = ? where session_id = ? and refresh_token_hash = ?',
);
const recordRotated = db.prepare(
  'insert into rotated_refresh_tokens (refresh_token_hash, session_id, expires_at) values (?, ?, ?)',
);
const findCode = db.prepare<
  [string],
  {
    client_id: string;
    user_id: string;
    redirect_uri: string;
    scope: string;
    code_challenge: string;
    expires_at: number;
    used_at: number | null;
  }
>(
  'select client_id, user_id, redirect_uri, scope, code_challenge, expires_at, used_at from authorization_codes where code_hash = ?',
);
const claimCode = db.prepare(
  'update authorization_codes set used_at = ?, session_id = ? where code_hash = ? and used_at is null',
);
const insertSession = db.prepare(
  'insert into sessions (session_id, user_id, client_id, scope, access_token_hash, access_expires_at, refresh_token_hash, refresh_expires_at, created_at, last_used_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
);
const rotation = db.transaction((values: unknown[], oldHash: string, sessionId: string, oldExpiresAt: number) => {
  if (rotate.run(...values, sessionId, oldHash).changes === 0) return false;
  recordRotated.run(oldHash, sessionId, oldExpiresAt);
  return true;
});
const exchange = db.transaction((codeHash: string, session: unknown[], now: number) => {
  if (claimCode.run(now, session[0], codeHash).changes === 0) return false;
  insertSession.run(...session, now, now);
  return true;
});

// Nested in the group's transaction, each better-sqlite3 transaction function runs as a savepoint.
const grouped: Array<{ work: () => boolean; done: (ok: boolean) => void }> = [];
const commitGroup = db.transaction((batch: typeof grouped) => batch.map((item) => item.work()));
/** Runs `work` (a transaction function) in the transaction shared by the turn's grants; resolves after its COMMIT. */
function inGroup(work: () => boolean): Promise<boolean> {
  return new Promise((done) => {
    if (grouped.push({ work, done }) > 1) return;
    setImmediate(() => {
      const batch = grouped.splice(0);
      const results = commitGroup(batch);
      for (const [i, item] of batch.entries()) item.done(results[i]!);
    });
  });
}
function answer(reply: FastifyReply, scope: string, now: number) {
  const accessToken = randomBytes(32).toString('base64url');
  const refreshToken = randomBytes(32).toString('base64url');
  const seconds = now / 1000;
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
    now: seconds,
  };
  return {
    body,
    values: [hash(accessToken), now + ACCESS_MS, hash(refreshToken), now + REFRESH_MS],
    send: () => reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(body),
  };
}

const invalidGrant = (reply: FastifyReply) => reply.code(400).send({ error: 'invalid_grant' });

function verifierMatches(verifier: string | undefined, challenge: string): boolean {
  if (!verifier) return false;
  const expected = Buffer.from(challenge);
  const actual = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  return expected.length === actual.length && timingSafeEqual(expected, actual);
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
  const client = findClient.get(params.client_id ?? '');
  if (!client || client.secret_hash !== null) return reply.code(401).send({ error: 'invalid_client' });
  const now = Date.now();
  if (params.grant_type === 'refresh_token') {
    const oldHash = hash(params.refresh_token ?? '');
    const session = findSession.get(oldHash);
    if (!session || session.client_id !== client.client_id || session.refresh_expires_at <= now)
      return invalidGrant(reply);
    const tokens = answer(reply, session.scope, now);
    const values = [...tokens.values, now];
    const rotated = await inGroup(() => rotation(values, oldHash, session.session_id, session.refresh_expires_at));
    if (!rotated) return invalidGrant(reply);
    return tokens.send();
  }
  if (params.grant_type === 'authorization_code') {
    const codeHash = hash(params.code ?? '');
    const code = findCode.get(codeHash);
    if (!code || code.client_id !== client.client_id || code.used_at !== null || code.expires_at <= now)
      return invalidGrant(reply);
    if (code.redirect_uri !== params.redirect_uri || !verifierMatches(params.code_verifier, code.code_challenge))
      return invalidGrant(reply);
    const tokens = answer(reply, code.scope, now);
    const claim = () =>
      exchange(codeHash, [randomUUID(), code.user_id, client.client_id, code.scope, ...tokens.values], now);
    if (!(await inGroup(claim))) return invalidGrant(reply);
    return tokens.send();
  }
  return reply.code(400).send({ error: 'unsupported_grant_type' });
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.on(
  'SIGTERM',
  () =>
    void app.close().then(() => {
      db.close();
      process.exit(0);
    }),
);
