// npx tsx bench/compare-builds.ts <name>=<server.js> <name>=<server.js> … [--path /v4/projects?pageSize=250] [--rounds 6] [--seconds 3] [--database postgres://…/empty]
// Compares builds of the server on a shared, noisy machine: every build runs at once on the same
// database (a new SQLite file, or --database: an empty PostgreSQL database), and a page is measured on each in turn, round after round, so each round's
// figures share the machine's state. Prints each round and the median ratios of each build to the
// first: of req/s, and of the server's CPU time per request (from /proc, as bench/cpu-per-request.ts
// does), which moves much less than req/s when other processes take the cores.
// Build a variant with `node scripts/build.mjs .scratch/<name>` (a directory inside the repository,
// so the bundle finds node_modules).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_HOST, mintSecrets, projects } from './fixtures.ts';
import { measure } from './measure.ts';
import { productionStart, type Running, startProcess } from './processes.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    path: { type: 'string', default: '/v4/projects?pageSize=250' },
    rounds: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10' },
    database: { type: 'string' },
  },
});
const builds = positionals.map((arg) => {
  const [name, entry] = arg.split('=');
  if (!name || !entry) throw new Error(`expected <name>=<server.js>, got ${arg}`);
  return { name, entry };
});
if (builds.length < 2) throw new Error('name at least two builds');

/** CPU milliseconds the process has used so far (user and system; /proc counts in 10 ms ticks). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const dir = mkdtempSync(join(tmpdir(), 'compare-builds-'));
const databaseUrl = values.database ?? `sqlite:${join(dir, 'bench.db')}`;
const servers: Running[] = [];
try {
  const secrets = await mintSecrets(databaseUrl, 1);
  const start = productionStart();
  const env = {
    ...start.env,
    DATABASE_URL: databaseUrl,
    BASE_URL: `https://${BENCH_HOST}`,
    RATE_LIMIT_V1: '1000000000',
    RATE_LIMIT_V4: '1000000000',
    LOG_LEVEL: 'info',
  };
  for (const build of builds) servers.push(await startProcess(build.entry, env, '/healthz', start.flags));
  await projects(servers[0]!.url, secrets.accessToken, 300);
  const load = { path: values.path, headers: { authorization: `Bearer ${secrets.accessToken}` } };
  const options = { seconds: Number(values.seconds), connections: Number(values.connections) };
  for (const server of servers) await measure(server.url, load, { ...options, seconds: 1 }); // warm-up
  const ratios: number[][] = builds.map(() => []);
  const cpuRatios: number[][] = builds.map(() => []);
  for (let round = 1; round <= Number(values.rounds); round++) {
    // The order turns each round, so no build always goes first.
    const order = builds.map((_, index) => (index + round) % builds.length);
    const figures: number[] = [];
    const cpuPerRequest: number[] = [];
    for (const index of order) {
      const server = servers[index]!;
      const cpuBefore = cpuMs(server.pid);
      const measured = await measure(server.url, load, options);
      figures[index] = measured.requestsPerSecond;
      cpuPerRequest[index] = (cpuMs(server.pid) - cpuBefore) / measured.requests;
    }
    for (const [index, value] of figures.entries()) ratios[index]!.push(value / figures[0]!);
    for (const [index, value] of cpuPerRequest.entries()) cpuRatios[index]!.push(value / cpuPerRequest[0]!);
    console.log(
      `round ${round}: ${builds.map((build, index) => `${build.name} ${Math.round(figures[index]!)} req/s, ${cpuPerRequest[index]!.toFixed(2)} CPU ms/request`).join('; ')}`,
    );
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  for (const [index, build] of builds.entries()) {
    console.log(
      `${build.name}: req/s median ${median(ratios[index]!).toFixed(2)} × ${builds[0]!.name} (rounds: ${ratios[index]!.map((ratio) => ratio.toFixed(2)).join(' ')})`,
    );
    console.log(
      `${build.name}: CPU per request median ${median(cpuRatios[index]!).toFixed(2)} × ${builds[0]!.name} (rounds: ${cpuRatios[index]!.map((ratio) => ratio.toFixed(2)).join(' ')})`,
    );
  }
} finally {
  for (const server of servers) await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
