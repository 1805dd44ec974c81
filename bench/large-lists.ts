// The 1,000,000-project cases: a user's list page 1 and page 40, filtered by title and sorted by
// it, on SQLite and on PostgreSQL; and the operator console's account search among 1,000,000
// accounts (GET /admin/users?q=…, as a signed-in operator). The data sets are kept between runs (bench/data/ and the
// bench_million database) because seeding takes a minute or more; they are rebuilt when short.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { createWebSession } from '../src/accounts/web-sessions.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/connection.ts';
import { dialectOf } from '../src/db/dialect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { Schema } from '../src/db/schema.ts';
import { createApplication } from '../src/oauth/clients.ts';
import { createSession } from '../src/oauth/sessions.ts';
import type { Target } from './cases.ts';
import { BENCH_HOST, REDIRECT_URI } from './fixtures.ts';
import { type Figures, measure } from './measure.ts';
import { serverUnderTest, startProcess } from './processes.ts';

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
  mkdirSync('bench/data', { recursive: true });
  const exists = databaseUrl.startsWith('sqlite:') || (await postgresDatabaseExists(databaseUrl));
  if (exists && (await countProjects(databaseUrl)) === PROJECTS) return;
  process.stderr.write(`seeding ${PROJECTS} projects into ${databaseUrl} (a minute or more)…\n`);
  if (databaseUrl.startsWith('sqlite:')) {
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

const ACCOUNTS = 1_000_000;
/** The seeded accounts' addresses end so: how they are told from the projects' seeded users. */
const ACCOUNT_DOMAIN = '@million.example';

/**
 * Adds 1,000,000 accounts in one statement each (a generated series): usernames of 8 random hex
 * digits and the account's number, so a two-character prefix matches about 1 in 256 of them
 * (some 3,900), created one second apart. Kept between runs; added again when short. Each has a
 * public key, as an account the service makes has (one shared key, the private half not kept, as
 * when a user sets their own): without one, the server would spend the run giving key pairs to
 * the accounts in the background (giveKeyPairsToAccountsWithout), a core's worth of RSA.
 */
async function ensureAccounts(databaseUrl: string): Promise<void> {
  const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database);
  try {
    const { db } = database;
    await migrateToLatest(db);
    const { n } = await db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('email', 'like', `%${ACCOUNT_DOMAIN}`)
      .executeTakeFirstOrThrow();
    const { publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    if (Number(n) === ACCOUNTS) {
      // Data seeded before accounts had a key here (and the projects' users of scripts/seed.ts) gets one.
      await db.updateTable('users').set({ public_key: publicKey }).where('public_key', 'is', null).execute();
      await settle(db);
      return;
    }
    process.stderr.write(`adding ${ACCOUNTS} accounts to ${databaseUrl}…\n`);
    await db.deleteFrom('users').where('email', 'like', `%${ACCOUNT_DOMAIN}`).execute();
    const start = Date.UTC(2020, 0, 1);
    if (dialectOf(db) === 'postgres') {
      await sql`insert into users (user_id, created_at, username, email, public_key)
        select gen_random_uuid()::text, ${start}::bigint + i * 1000, substr(md5(i::text), 1, 8) || i,
          'acct' || i || ${ACCOUNT_DOMAIN}, ${publicKey}
        from generate_series(1, ${ACCOUNTS}::int) as i`.execute(db);
    } else {
      await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ACCOUNTS})
        insert into users (user_id, created_at, username, email, public_key)
        select lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-8'
            || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
          ${start} + i * 1000, lower(hex(randomblob(4))) || i, 'acct' || i || ${ACCOUNT_DOMAIN}, ${publicKey}
        from n`.execute(db);
    }
    await settle(db);
  } finally {
    await database.close();
  }
}

/**
 * Statistics made and every change written out before a case is measured: the first run after
 * adding the accounts otherwise measured the database writing them (a PostgreSQL p99 of 22 ms
 * against 13–15 in the runs after it).
 */
async function settle(db: Kysely<Schema>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`vacuum analyze users`.execute(db);
    await sql`checkpoint`.execute(db);
  } else {
    await sql`analyze`.execute(db);
    await sql`pragma wal_checkpoint(truncate)`.execute(db);
  }
}

/** A signed-in operator (two-step on, as the console needs): the Cookie header of its browser sign-in. */
async function operatorCookie(databaseUrl: string): Promise<string> {
  const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database);
  try {
    const { db } = database;
    const username = 'bench-operator';
    let row = await db.selectFrom('users').select('user_id').where('username', '=', username).executeTakeFirst();
    if (!row) {
      row = { user_id: crypto.randomUUID() };
      await db
        .insertInto('users')
        .values({
          user_id: row.user_id,
          created_at: Date.now(),
          username,
          email: 'bench-operator@bench.example',
          totp_secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ',
          operator: 1,
        })
        .execute();
    }
    const { token } = await createWebSession(db, row.user_id, false);
    return `sid=${token}`;
  } finally {
    await database.close();
  }
}

/** The two-character prefixes the search case rotates through (each matches some 3,900 accounts). */
const PREFIXES = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export interface LargeRow extends Figures {
  name: string;
  connections: number;
  targets: Target[];
}

/** Latency is measured with one connection: queueing behind other connections would hide the query's own time. */
export async function largeListCases(options: {
  seconds: number;
  wanted: (name: string) => boolean;
}): Promise<LargeRow[]> {
  const rows: LargeRow[] = [];
  // A server on PostgreSQL needs a secrets key; the servers started here inherit this one.
  process.env.SECRETS_KEY ??= randomBytes(32).toString('base64');
  for (const [label, databaseUrl] of [
    ['SQLite', `sqlite:${SQLITE_PATH}`],
    ['PostgreSQL', POSTGRES_URL],
  ] as const) {
    const searchName = `${label}, 1M accounts: console account search by prefix (GET /admin/users?q=, 2 characters, 50 a page)`;
    const projectNames = [1, 40].map(
      (page) => `${label}, 1M projects: list page ${page} (title filter "e", sorted by title, 20 a page)`,
    );
    if (!options.wanted(searchName) && !projectNames.some(options.wanted)) continue;
    // One data set: seeding the projects starts it afresh, so it comes before the accounts are added.
    await ensureSeeded(databaseUrl);
    if (options.wanted(searchName)) rows.push(await accountSearchCase(label, databaseUrl, searchName, options.seconds));
    if (!projectNames.some(options.wanted)) continue;
    const accessToken = await tokenOfASeededUser(databaseUrl);
    const { entry, env, flags } = serverUnderTest();
    const server = await startProcess(
      entry,
      {
        ...env,
        DATABASE_URL: databaseUrl,
        BASE_URL: `https://${BENCH_HOST}`,
        RATE_LIMIT_V4: '1000000000',
        LOG_LEVEL: 'info',
      },
      '/healthz',
      flags,
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
          targets: [{ kind: 'p50 at most ms', value: 15 }],
          ...figures,
        });
      }
    } finally {
      await server.stop();
    }
  }
  return rows;
}

/** The console's account search on 1,000,000 accounts, as a signed-in operator, a different prefix each request. */
async function accountSearchCase(label: string, databaseUrl: string, name: string, seconds: number): Promise<LargeRow> {
  await ensureAccounts(databaseUrl);
  const cookie = await operatorCookie(databaseUrl);
  const { entry, env, flags } = serverUnderTest();
  const server = await startProcess(
    entry,
    { ...env, DATABASE_URL: databaseUrl, BASE_URL: `https://${BENCH_HOST}`, LOG_LEVEL: 'info' },
    '/healthz',
    flags,
  );
  try {
    const headers = { cookie };
    const probe = await fetch(`${server.url}/admin/users?q=a7`, { headers });
    const text = await probe.text();
    if (!probe.ok || !text.includes('rel="next"'))
      throw new Error(`the account search answered ${probe.status} on ${label}: ${text.slice(0, 300)}`);
    let turn = 0;
    const load = {
      path: '/admin/users?q=a7',
      headers,
      next: () => ({ path: `/admin/users?q=${PREFIXES[turn++ % PREFIXES.length]}` }),
    };
    await measure(server.url, load, { seconds: 1, connections: 1 });
    const figures = await measure(server.url, load, { seconds, connections: 1 });
    return { name, connections: 1, targets: [{ kind: 'p99 under ms', value: 20 }], ...figures };
  } finally {
    await server.stop();
  }
}
