// The 1,000,000-project cases: a user's list page 1 and page 40, filtered by title and sorted by
// it, on SQLite and on PostgreSQL. The data sets are kept between runs (bench/data/ and the
// bench_million database) because seeding takes a minute or more; they are rebuilt when short.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/connection.ts';
import { dialectOf } from '../src/db/dialect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createApplication } from '../src/oauth/clients.ts';
import { createSession } from '../src/oauth/sessions.ts';
import { BENCH_HOST, REDIRECT_URI } from './fixtures.ts';
import { type Figures, measure } from './measure.ts';
import { startProcess } from './processes.ts';

const PROJECTS = 1_000_000;
const USERS = 1_000;
const SQLITE_PATH = 'bench/data/million.db';
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/bench_million';
// With 1,000 projects per user and these seeded titles, "e" matches about 880 of a user's projects:
// page 40 of 20 is a real, deep page.
const FILTER = 'title=e&sortedColumn=title&sortDirection=ascending&pageSize=20';

async function countProjects(databaseUrl: string): Promise<number> {
  const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database);
  try {
    await migrateToLatest(database.db);
    const row = await database.db
      .selectFrom('projects')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  } finally {
    await database.close();
  }
}

async function recreatePostgresDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = target.pathname.slice(1);
  const admin = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() });
  await admin.connect();
  try {
    await admin.query(`drop database if exists "${name}"`);
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
}

async function ensureSeeded(databaseUrl: string): Promise<void> {
  const exists = databaseUrl.startsWith('sqlite:') || (await postgresDatabaseExists(databaseUrl));
  if (exists && (await countProjects(databaseUrl)) === PROJECTS) return;
  process.stderr.write(`seeding ${PROJECTS} projects into ${databaseUrl} (a minute or more)…\n`);
  if (databaseUrl.startsWith('sqlite:')) {
    mkdirSync('bench/data', { recursive: true });
    for (const suffix of ['', '-wal', '-shm']) rmSync(SQLITE_PATH + suffix, { force: true });
  } else {
    await recreatePostgresDatabase(databaseUrl);
  }
  const seeded = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'scripts/seed.ts', '--projects', String(PROJECTS), '--users', String(USERS)],
    {
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  if (seeded.status !== 0) throw new Error(`seeding ${databaseUrl} failed`);
}

async function postgresDatabaseExists(url: string): Promise<boolean> {
  const name = new URL(url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() });
  await admin.connect();
  try {
    return (await admin.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1;
  } finally {
    await admin.end();
  }
}

/** A token for one seeded user (each owns 1,000 projects). */
async function tokenOfASeededUser(databaseUrl: string): Promise<string> {
  const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database);
  try {
    const { db } = database;
    const { user_id } = await db
      .selectFrom('projects')
      .select('user_id')
      .orderBy('project_id')
      .limit(1)
      .executeTakeFirstOrThrow();
    const { clientId } = await createApplication(db, {
      name: 'Benchmark',
      redirectUris: [REDIRECT_URI],
      scopes: ['common'],
      confidential: false,
    });
    if (dialectOf(db) === 'postgres') await sql`analyze projects`.execute(db);
    return (await createSession(db, { userId: user_id, clientId, scope: 'common' })).accessToken;
  } finally {
    await database.close();
  }
}

export interface LargeRow extends Figures {
  name: string;
  ratio: number;
  connections: number;
}

/** Latency is measured with one connection: queueing behind other connections would hide the query's own time. */
export async function largeListCases(options: { seconds: number }): Promise<LargeRow[]> {
  const rows: LargeRow[] = [];
  for (const [label, databaseUrl] of [
    ['SQLite', `sqlite:${SQLITE_PATH}`],
    ['PostgreSQL', POSTGRES_URL],
  ] as const) {
    await ensureSeeded(databaseUrl);
    const accessToken = await tokenOfASeededUser(databaseUrl);
    const server = await startProcess(
      'src/server.ts',
      { DATABASE_URL: databaseUrl, BASE_URL: `https://${BENCH_HOST}`, RATE_LIMIT_V4: '1000000000', LOG_LEVEL: 'info' },
      '/healthz',
    );
    try {
      const headers = { authorization: `Bearer ${accessToken}` };
      const probe = await fetch(`${server.url}/v4/projects?${FILTER}&page=40`, { headers });
      const page40 = (await probe.json()) as { totalResults: number; results: unknown[] };
      if (!probe.ok || page40.results.length === 0)
        throw new Error(`page 40 is empty or failed on ${label}: ${JSON.stringify(page40).slice(0, 200)}`);
      for (const page of [1, 40]) {
        const load = { path: `/v4/projects?${FILTER}&page=${page}`, headers };
        await measure(server.url, load, { seconds: 1, connections: 1 });
        const figures = await measure(server.url, load, { seconds: options.seconds, connections: 1 });
        rows.push({
          name: `${label}, 1M projects: list page ${page} (title filter "e" of ${page40.totalResults}, sorted by title, 20 a page)`,
          connections: 1,
          ratio: 0,
          ...figures,
        });
      }
    } finally {
      await server.stop();
    }
  }
  return rows;
}
