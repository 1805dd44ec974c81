// npx tsx bench/token-floor-variants.ts [--seconds 3] [--rounds 3]
// Issue 21's two storage ideas for the refresh_token grant on SQLite, tried on the token floor
// (token-floor-server.ts) before anything in the service: today's statements, a WITHOUT ROWID
// token-hash table (SCHEMA=tokens), group commit of the rotations of one event-loop turn (GROUP=1),
// and both; the service (dist/server.js) beside them. Each server works on its own copy of one
// minted database, so every one spends the same refresh tokens; the rounds alternate the servers.
// Reported: req/s and the server's CPU time per grant (utime + stime of all its threads, /proc),
// which moves much less than req/s on a shared machine.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { BENCH_HOST, mintSecrets } from './fixtures.ts';
import { type Load, measure } from './measure.ts';
import { type Running, startProcess } from './processes.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '3' }, rounds: { type: 'string', default: '3' } },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const connections = 10;

function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const dir = mkdtempSync(join(tmpdir(), 'token-variants-'));
const running: Running[] = [];
try {
  const base = join(dir, 'base.db');
  // Each round spends `perRun` tokens per server (a warm-up slice first).
  const perRun = seconds * 6_000;
  const secrets = await mintSecrets(`sqlite:${base}`, perRun * (rounds + 1));
  const fold = new Database(base);
  fold.pragma('wal_checkpoint(TRUNCATE)');
  fold.close();
  const variants: Array<[string, string, Record<string, string>]> = [
    ["floor, today's schema", './bench/token-floor-server.ts', {}],
    ['floor, token-hash table', './bench/token-floor-server.ts', { SCHEMA: 'tokens' }],
    ['floor, group commit', './bench/token-floor-server.ts', { GROUP: '1' }],
    ['floor, token-hash table + group commit', './bench/token-floor-server.ts', { SCHEMA: 'tokens', GROUP: '1' }],
    ['the service (dist/server.js)', 'dist/server.js', {}],
  ];
  const servers: Array<{ name: string; server: Running }> = [];
  for (const [name, entry, env] of variants) {
    const path = join(dir, `${servers.length}.db`);
    copyFileSync(base, path);
    const serviceEnv = {
      DATABASE_URL: `sqlite:${path}`,
      BASE_URL: `https://${BENCH_HOST}`,
      RATE_LIMIT_V1: '1000000000',
      RATE_LIMIT_V4: '1000000000',
      LOG_LEVEL: 'info',
    };
    const server = await startProcess(
      entry,
      entry.endsWith('.js') ? serviceEnv : { DB: path, ...env },
      entry.endsWith('.js') ? '/healthz' : '/',
    );
    running.push(server);
    servers.push({ name, server });
  }
  const load = (from: number): Load => {
    let next = from;
    return {
      method: 'POST',
      path: '/v4/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      next: () => ({
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          client_id: secrets.clientId,
          refresh_token: next < from + perRun ? secrets.refreshTokens[next++]! : 'exhausted',
        }).toString(),
      }),
    };
  };
  // Warm-up: one second on the first slice.
  for (const { server } of servers) await measure(server.url, load(0), { seconds: 1, connections });
  for (let round = 1; round <= rounds; round++) {
    console.log(`round ${round}`);
    for (const { name, server } of servers) {
      const before = cpuMs(server.pid);
      const figures = await measure(server.url, load(round * perRun), { seconds, connections });
      const cpuUs = ((cpuMs(server.pid) - before) * 1000) / Math.max(1, figures.requests);
      console.log(
        `  ${name}: ${figures.requestsPerSecond} req/s, ${cpuUs.toFixed(0)} µs CPU per grant${figures.failed ? `, ${figures.failed} failed` : ''}`,
      );
    }
  }
} finally {
  for (const server of running) await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
