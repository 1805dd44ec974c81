// npx tsx bench/migration-ab.ts --before <entry.js> --undo <migration module> [--cases refresh,code] [--seconds 3] [--rounds 4]
// A schema change measured as bench/cpu-per-request.ts measures code changes: the server's CPU time
// per request (/proc) beside req/s and the bytes it wrote per request (its WAL and checkpoints),
// round after round, for an earlier build (--before, e.g. main's dist/ copied inside this checkout)
// and this one (dist/server.js). The two cannot share a database
// when this build's newest migration changes the schema, so each runs on its own copy of one minted
// SQLite database: this build's as migrated, the earlier build's with that migration undone (its
// `down`, and its record removed), so both spend the same tokens on the schema each expects.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { grantLoads } from './cases.ts';
import { BENCH_HOST, mintSecrets, REDIRECT_URI } from './fixtures.ts';
import { type Load, measure } from './measure.ts';
import { cpuMs, type Running, startProcess, writtenBytes } from './processes.ts';

const { values } = parseArgs({
  options: {
    before: { type: 'string' },
    undo: { type: 'string' },
    cases: { type: 'string', default: 'refresh,code' },
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '4' },
  },
});
if (!values.before || !values.undo) throw new Error('--before <entry.js> and --undo <migration module> are required');
const seconds = Number(values.seconds);
const connections = 10;
const wanted = values.cases.split(',');

const dir = mkdtempSync(join(tmpdir(), 'migration-ab-'));
const running: Running[] = [];
try {
  const after = join(dir, 'after.db');
  const secrets = await mintSecrets(`sqlite:${after}`, 150_000);
  const fold = new Database(after);
  fold.pragma('wal_checkpoint(TRUNCATE)');
  fold.close();
  const before = join(dir, 'before.db');
  copyFileSync(after, before);
  const migration = (await import(resolve(values.undo))) as { down(db: Kysely<any>): Promise<void> };
  const db = new Kysely<any>({ dialect: new SqliteDialect({ database: new Database(before) }) });
  await migration.down(db);
  await sql`delete from kysely_migration where name = ${basename(values.undo).replace(/\.ts$/, '')}`.execute(db);
  await db.destroy();

  const env = (path: string) => ({
    DATABASE_URL: `sqlite:${path}`,
    BASE_URL: `https://${BENCH_HOST}`,
    RATE_LIMIT_V1: '1000000000',
    RATE_LIMIT_V4: '1000000000',
    LOG_LEVEL: 'info',
  });
  const servers: Array<[string, Running]> = [
    ['before', await startProcess(values.before, env(before), '/healthz')],
    ['service', await startProcess('dist/server.js', env(after), '/healthz')],
  ];
  running.push(...servers.map(([, server]) => server));
  // Each server keeps its own place in the same list of secrets.
  const loads = (): Record<string, Load> => {
    const grants = grantLoads('/v4/login', { ...secrets, redirectUri: REDIRECT_URI });
    return {
      refresh: grants['refresh_token grant'],
      code: grants['authorization_code exchange'],
      v4user: { path: '/v4/user', headers: { authorization: `Bearer ${secrets.accessToken}` } },
    };
  };
  const perServer = new Map(servers.map(([name]) => [name, loads()]));
  for (const name of wanted)
    for (const [label, server] of servers)
      await measure(server.url, perServer.get(label)![name]!, { seconds: 1, connections });
  for (let round = 1; round <= Number(values.rounds); round++) {
    console.log(`round ${round}`);
    for (const name of wanted) {
      const parts: string[] = [];
      for (const [label, server] of servers) {
        const cpuBefore = cpuMs(server.pid);
        const writtenBefore = writtenBytes(server.pid);
        const figures = await measure(server.url, perServer.get(label)![name]!, { seconds, connections });
        const cpuUs = ((cpuMs(server.pid) - cpuBefore) * 1000) / Math.max(1, figures.requests);
        const kib = (writtenBytes(server.pid) - writtenBefore) / 1024 / Math.max(1, figures.requests);
        parts.push(
          `${label} ${figures.requestsPerSecond} req/s, ${cpuUs.toFixed(0)} µs/request, ${kib.toFixed(1)} KiB written/request${figures.failed ? `, ${figures.failed} failed` : ''}`,
        );
      }
      console.log(`  ${name}: ${parts.join(' | ')}`);
    }
  }
} finally {
  for (const server of running) await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
