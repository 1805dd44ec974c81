// npm run bench [-- --seconds 10 --connections 10 --only <text> --database <url> --large]
// Every case is measured against a bare Fastify hello-world measured in the same run (before and
// after the cases, averaged), because absolute figures drift on shared machines.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { standardCases, type Case } from './cases.ts';
import { BENCH_HOST, legacyData, mintSecrets, projects } from './fixtures.ts';
import { largeListCases } from './large-lists.ts';
import { measure, type Figures } from './measure.ts';
import { startProcess } from './processes.ts';
import { FakeWorkshop } from '../test/helpers/workshop.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    only: { type: 'string' },
    database: { type: 'string' },
    large: { type: 'boolean', default: false },
    'skip-standard': { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);

interface Row extends Figures {
  name: string;
  ratio: number;
  target?: number;
  connections: number;
  serverRssMiB?: number;
}

const HELLO = './bench/hello-world.ts';
const FLOOR = './bench/floor-server.ts';
const FLOOR_PATH = '/v1/user.php/00000000-0000-4000-8000-000000000000';
// The server runs with its production settings, rate limits included, set high enough not to trip.
const serverEnv = (databaseUrl: string, workshopTemplate: string) => ({
  DATABASE_URL: databaseUrl,
  BASE_URL: `https://${BENCH_HOST}`,
  WORKSHOP_URL: workshopTemplate,
  RATE_LIMIT_V1: '1000000000',
  RATE_LIMIT_V4: '1000000000',
  LOG_LEVEL: 'info',
});

async function helloWorld(): Promise<Figures> {
  const hello = await startProcess(HELLO, {});
  try {
    await measure(hello.url, { path: '/' }, { seconds: 2, connections }); // warm-up
    return await measure(hello.url, { path: '/' }, { seconds, connections });
  } finally {
    await hello.stop();
  }
}

/** The reference of floor-server.ts: the per-request work the issues require, and nothing else. */
async function floor(): Promise<Row> {
  const server = await startProcess(FLOOR, {}, FLOOR_PATH);
  try {
    await measure(server.url, { path: FLOOR_PATH }, { seconds: 2, connections }); // warm-up
    const figures = await measure(server.url, { path: FLOOR_PATH }, { seconds, connections });
    return { name: 'reference: bare Fastify + pino line + rate limit + raw SQLite lookup', connections, ...figures, ratio: 0, serverRssMiB: server.memory().peakMiB };
  } finally {
    await server.stop();
  }
}

async function runStandard(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  const databaseUrl = values.database ?? `sqlite:${join(dir, 'bench.db')}`;
  const workshop = await new FakeWorkshop().start();
  try {
    process.stderr.write('minting codes and refresh tokens…\n');
    const secrets = await mintSecrets(databaseUrl, 60_000);
    const server = await startProcess('src/server.ts', serverEnv(databaseUrl, workshop.template), '/healthz');
    try {
      process.stderr.write('creating v1 and v4 data through the API…\n');
      const legacy = await legacyData(server.url, workshop, 10_000);
      const projectId = await projects(server.url, secrets.accessToken, 300);
      const cases = standardCases(legacy, secrets, projectId).filter((item) => !values.only || item.name.includes(values.only));
      const rows: Row[] = [];
      for (const item of cases) {
        process.stderr.write(`${item.name}…\n`);
        if (!item.load.next) await measure(server.url, item.load, { seconds: 1, connections }); // warm-up
        const figures = await measure(server.url, item.load, { seconds, connections });
        rows.push({ name: item.name, target: item.target, connections, ...figures, ratio: 0, serverRssMiB: server.memory().peakMiB });
      }
      return rows;
    } finally {
      await server.stop();
    }
  } finally {
    await workshop.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function table(rows: Row[], hello: number): string {
  const lines = [
    `| case | conns | req/s | p50 ms | p99 ms | × hello-world | target | failed | server peak RSS MiB |`,
    `|---|---:|---:|---:|---:|---:|---:|---:|---:|`,
    `| bare Fastify hello-world | ${connections} | ${hello} | | | 1.00 | | | |`,
  ];
  for (const row of rows) {
    const verdict = row.target === undefined ? '' : `≥ ${row.target} ${row.ratio >= row.target ? 'met' : 'MISSED'}`;
    lines.push(`| ${row.name} | ${row.connections} | ${row.requestsPerSecond} | ${row.p50} | ${row.p99} | ${row.ratio.toFixed(2)} | ${verdict} | ${row.failed || ''} | ${row.serverRssMiB ?? ''} |`);
  }
  return lines.join('\n');
}

const started = new Date();
const before = await helloWorld();
process.stderr.write(`hello-world: ${before.requestsPerSecond} req/s\n`);
const rows: Row[] = [];
if (!values['skip-standard']) rows.push(await floor(), ...(await runStandard()));
if (values.large) rows.push(...(await largeListCases({ seconds })));
const after = await helloWorld();
const hello = Math.round((before.requestsPerSecond + after.requestsPerSecond) / 2);
for (const row of rows) row.ratio = row.requestsPerSecond / hello;

const machine = `${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}`;
const report = `Run ${started.toISOString()} on ${machine}; ${seconds} s per case; hello-world ${before.requestsPerSecond} req/s before and ${after.requestsPerSecond} after.\n\n${table(rows, hello)}\n`;
process.stdout.write(`\n${report}`);
mkdirSync('bench/results', { recursive: true });
writeFileSync(`bench/results/${started.toISOString().replace(/[:.]/g, '-')}.md`, report);
if (rows.some((row) => row.failed > 0)) {
  process.stderr.write('some requests failed: the figures of those cases are not valid\n');
  process.exitCode = 1;
}
