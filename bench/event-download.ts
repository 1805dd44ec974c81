// The console's event log download, /admin/events?format=jsonl, of 1,000,000 security events, on
// SQLite and on PostgreSQL: the whole set is streamed to a signed-in operator while the server's
// peak RSS (VmHWM, reset just before through /proc/<pid>/clear_refs) is read. Target: under
// 200 MiB. The data sets are kept between runs (bench/data/events.db and the bench_events
// database) and rebuilt when short. Run alone: `npx tsx bench/event-download.ts`.
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { createWebSession } from '../src/accounts/web-sessions.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/connection.ts';
import { dialectOf } from '../src/db/dialect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { Schema } from '../src/db/schema.ts';
import { BENCH_HOST } from './fixtures.ts';
import { serverUnderTest, startProcess } from './processes.ts';

const EVENTS = 1_000_000;
const SQLITE_PATH = 'bench/data/events.db';
const POSTGRES_URL = process.env.BENCH_EVENTS_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/bench_events';
export const EVENT_DOWNLOAD_PEAK_TARGET_MIB = 200;
// PostgreSQL needs SECRETS_KEY; the kept database is always opened under the same one (a fixed
// bench key, unless SECRETS_KEY is set), so what its earlier runs sealed stays readable.
const SECRETS_KEY = process.env.SECRETS_KEY ?? createHash('sha256').update('bench_events').digest('base64');

export interface EventDownloadRow {
  name: string;
  events: number;
  megabytes: number;
  seconds: number;
  /** The server's peak RSS while it streamed the download. */
  peakMiB: number;
  /** Its RSS before the download began. */
  beforeMiB: number;
}

async function ensurePostgresDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() });
  await admin.connect();
  try {
    if ((await admin.query('select 1 from pg_database where datname = $1', [name])).rowCount === 0)
      await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
}

/**
 * Fills the event log to EVENTS rows in one statement (a recursive CTE on SQLite, generate_series
 * on PostgreSQL): kinds, users, IPs and details vary as a real log's do, a second apart.
 */
async function seedEvents(db: Kysely<Schema>): Promise<void> {
  const { n } = await db
    .selectFrom('security_events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  if (Number(n) >= EVENTS) return;
  process.stderr.write(`seeding ${EVENTS} security events (a minute or less)…\n`);
  await db.deleteFrom('security_events').execute();
  const start = Date.now() - EVENTS * 1000;
  if (dialectOf(db) === 'postgres') {
    await sql`insert into security_events (event_id, kind, user_id, client_id, ip, details, created_at)
      select lpad(to_hex(i), 8, '0') || '-0000-7000-8000-' || lpad(i::text, 12, '0'),
        (array['sign_in_succeeded','sign_in_failed','two_step_failed','password_changed','session_ended'])[1 + i % 5],
        '00000000-0000-4000-8000-' || lpad((i % 5000)::text, 12, '0'),
        null, '198.51.' || (i % 200) || '.' || (i % 250),
        '{"page":"sign_in","method":"password","two_step":"code"}', ${start}::bigint + i * 1000
      from generate_series(1, ${EVENTS}::int) as i`.execute(db);
    await sql`analyze security_events`.execute(db);
  } else {
    await sql`insert into security_events (event_id, kind, user_id, client_id, ip, details, created_at)
      with recursive n(i) as (select 1 union all select i + 1 from n where i < ${EVENTS})
      select printf('%08x-0000-7000-8000-%012d', i, i),
        case i % 5 when 0 then 'sign_in_succeeded' when 1 then 'sign_in_failed' when 2 then 'two_step_failed'
          when 3 then 'password_changed' else 'session_ended' end,
        printf('00000000-0000-4000-8000-%012d', i % 5000),
        null, '198.51.' || (i % 200) || '.' || (i % 250),
        '{"page":"sign_in","method":"password","two_step":"code"}', ${start} + i * 1000
      from n`.execute(db);
  }
}

/** An operator with two-step (the console requires it) and a browser sign-in's cookie. */
async function operatorCookie(db: Kysely<Schema>): Promise<string> {
  const userId = randomUUID();
  await db
    .insertInto('users')
    .values({
      user_id: userId,
      public_key: null,
      created_at: Date.now(),
      username: `bench-operator-${userId.slice(0, 8)}`,
      email: `bench-operator-${userId.slice(0, 8)}@example.org`,
      password_hash: null,
      totp_secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ',
      private_key: null,
      totp_last_step: null,
      operator: 1,
      locked_at: null,
      lock_reason: null,
    })
    .execute();
  const { token } = await createWebSession(db, userId, false);
  return `sid=${token}`;
}

async function prepare(databaseUrl: string): Promise<string> {
  if (databaseUrl.startsWith('postgres')) await ensurePostgresDatabase(databaseUrl);
  else mkdirSync('bench/data', { recursive: true });
  const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl, SECRETS_KEY }).database);
  try {
    await migrateToLatest(database.db);
    await seedEvents(database.db);
    return await operatorCookie(database.db);
  } finally {
    await database.close();
  }
}

/** Streams the download, counting lines and bytes without keeping them; answers the count, bytes and seconds. */
async function download(url: string, cookie: string) {
  const started = performance.now();
  const reply = await fetch(url, { headers: { cookie, 'accept-encoding': 'identity' } });
  if (!reply.ok || !reply.body) throw new Error(`the download answered ${reply.status}: ${await reply.text()}`);
  let lines = 0;
  let bytes = 0;
  for await (const chunk of reply.body as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    for (const byte of chunk) if (byte === 10) lines++;
  }
  return { lines, bytes, seconds: (performance.now() - started) / 1000 };
}

const downloadName = (label: string) =>
  `${label}, 1M security events: /admin/events?format=jsonl streamed to an operator`;

export async function eventDownloadCases(wanted: (name: string) => boolean = () => true): Promise<EventDownloadRow[]> {
  const { entry, ...start } = serverUnderTest();
  const rows: EventDownloadRow[] = [];
  const only = process.env.BENCH_EVENTS_ONLY;
  for (const [label, databaseUrl] of [
    ['SQLite', `sqlite:${SQLITE_PATH}`],
    ['PostgreSQL', POSTGRES_URL],
  ] as const) {
    if ((only && only !== label) || !wanted(downloadName(label))) continue;
    const cookie = await prepare(databaseUrl);
    const server = await startProcess(
      entry,
      {
        ...start.env,
        DATABASE_URL: databaseUrl,
        ...(databaseUrl.startsWith('postgres') ? { SECRETS_KEY } : {}),
        BASE_URL: `https://${BENCH_HOST}`,
        LOG_LEVEL: 'warn',
      },
      '/healthz',
      start.flags,
    );
    try {
      const beforeMiB = server.memory().rssMiB;
      // The peak from here on: clear_refs 5 resets VmHWM to the current RSS.
      writeFileSync(`/proc/${server.pid}/clear_refs`, '5');
      const result = await download(`${server.url}/admin/events?format=jsonl`, cookie);
      if (result.lines !== EVENTS) throw new Error(`${label}: the download held ${result.lines} lines, not ${EVENTS}`);
      rows.push({
        name: downloadName(label),
        events: result.lines,
        megabytes: Math.round(result.bytes / 1e6),
        seconds: Math.round(result.seconds * 10) / 10,
        peakMiB: server.memory().peakMiB,
        beforeMiB,
      });
    } finally {
      await server.stop();
    }
  }
  return rows;
}

/** The rows as Markdown, each judged against the peak RSS target. */
export function eventDownloadTable(rows: EventDownloadRow[]): string {
  return [
    '| case | events | size | time | server RSS before | server peak RSS | target |',
    '|---|---:|---:|---:|---:|---:|---|',
    ...rows.map(
      (row) =>
        `| ${row.name} | ${row.events.toLocaleString('en')} | ${row.megabytes} MB | ${row.seconds} s | ${row.beforeMiB} MiB | ${row.peakMiB} MiB | < ${EVENT_DOWNLOAD_PEAK_TARGET_MIB} MiB: ${row.peakMiB < EVENT_DOWNLOAD_PEAK_TARGET_MIB ? 'met' : 'MISSED'} |`,
    ),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await eventDownloadCases();
  process.stdout.write(`${eventDownloadTable(rows)}\n`);
  if (rows.some((row) => row.peakMiB >= EVENT_DOWNLOAD_PEAK_TARGET_MIB)) process.exitCode = 1;
}
