// npm run bench [-- --seconds 10 --connections 10 --only <text> --database <url> --large --skip-peer]
// Every ratio is of figures measured in the same run, because absolute figures drift on shared
// machines: against a bare Fastify hello-world (before and after the cases, averaged), against the
// reference row (floor-server.ts: the per-request work the service must do and nothing else), and
// against the peer (node-oidc-provider 9, peer-oidc-provider.ts) for the token endpoint.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PEER_EXCHANGE, PEER_REFRESH, engramListLoads, mixedLoads, standardCases, type Target } from './cases.ts';
import { BENCH_HOST, legacyData, mintSecrets, projects } from './fixtures.ts';
import { largeListCases } from './large-lists.ts';
import { measure, type Figures, type Load } from './measure.ts';
import { productionStart, startProcess, type Running } from './processes.ts';
import { FakeWorkshop } from '../test/helpers/workshop.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    only: { type: 'string' },
    database: { type: 'string' },
    large: { type: 'boolean', default: false },
    'skip-standard': { type: 'boolean', default: false },
    'skip-peer': { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const wanted = (name: string) => !values.only || name.includes(values.only);

interface Row extends Partial<Figures> {
  name: string;
  connections?: number;
  target?: Target;
  /** What the row is measured against and the figure, filled in once every row is measured. */
  verdict?: string;
  serverRssMiB?: number;
  /** A figure that is not a throughput (milliseconds to start, MiB), judged by its target. */
  value?: number;
  note?: string;
}

const HELLO = './bench/hello-world.ts';
const FLOOR = './bench/floor-server.ts';
const PEER = './bench/peer-oidc-provider.ts';
const FLOOR_PATH = '/v1/user.php/00000000-0000-4000-8000-000000000000';
/** The service as production runs it: the compiled JavaScript of `npm run build` (run by `npm ci`), else the sources under tsx. */
const SERVER = process.env.BENCH_SERVER_ENTRY ?? (existsSync('dist/server.js') ? 'dist/server.js' : 'src/server.ts');
/** The compiled server starts with the environment and node flags of `npm start` (memory settings, docs/decisions.md). */
const START = SERVER.endsWith('.js') ? productionStart() : { env: {}, flags: [] };
// The server runs with its production settings, rate limits included, set high enough not to trip.
const serverEnv = (databaseUrl: string, workshopTemplate: string) => ({
  DATABASE_URL: databaseUrl,
  BASE_URL: `https://${BENCH_HOST}`,
  WORKSHOP_URL: workshopTemplate,
  RATE_LIMIT_V1: '1000000000',
  RATE_LIMIT_V4: '1000000000',
  LOG_LEVEL: 'info',
});
const IDLE_SETTLE_MS = Number(process.env.BENCH_IDLE_SETTLE_MS ?? 45_000);
const databaseLabel = values.database?.startsWith('postgres') ? 'PostgreSQL' : 'SQLite';

async function measureWarm(url: string, load: Load, count = connections): Promise<Figures> {
  if (!load.next) await measure(url, load, { seconds: 1, connections: count });
  return measure(url, load, { seconds, connections: count });
}

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
    return { name: 'reference: bare Fastify + pino line + rate limit + raw SQLite lookup', connections, ...figures, serverRssMiB: server.memory().peakMiB };
  } finally {
    await server.stop();
  }
}

/** node-oidc-provider 9 in memory: the authorization_code exchange and the refresh_token grant. */
async function peer(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-peer-'));
  const file = join(dir, 'secrets.json');
  // Enough single-use secrets for every request of either case at the peer's pace (over 5,000 req/s
  // on a quiet machine); an exhausted list shows up as failed requests.
  const server = await startProcess(PEER, { PEER_SECRETS_FILE: file, PEER_MINT: String(Math.max(20_000, seconds * 10_000)) }, '/.well-known/openid-configuration');
  try {
    const secrets = JSON.parse(readFileSync(file, 'utf8')) as { clientId: string; redirectUri: string; codeVerifier: string; codes: string[]; refreshTokens: string[] };
    const rows: Row[] = [];
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const body = (params: Record<string, string>) => new URLSearchParams({ client_id: secrets.clientId, ...params }).toString();
    let code = 0;
    let refresh = 0;
    const cases: Array<[string, Load]> = [
      [
        PEER_EXCHANGE,
        { method: 'POST', path: '/token', headers: form, next: () => ({ body: body({ grant_type: 'authorization_code', code: secrets.codes[code++] ?? 'exhausted', redirect_uri: secrets.redirectUri, code_verifier: secrets.codeVerifier }) }) },
      ],
      [PEER_REFRESH, { method: 'POST', path: '/token', headers: form, next: () => ({ body: body({ grant_type: 'refresh_token', refresh_token: secrets.refreshTokens[refresh++] ?? 'exhausted' }) }) }],
    ];
    for (const [name, load] of cases) rows.push({ name, connections, ...(await measure(server.url, load, { seconds, connections })), serverRssMiB: server.memory().peakMiB });
    return rows;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runStandard(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  const databaseUrl = values.database ?? `sqlite:${join(dir, 'bench.db')}`;
  const workshop = await new FakeWorkshop().start();
  try {
    process.stderr.write('minting codes and refresh tokens…\n');
    const secrets = await mintSecrets(databaseUrl, 60_000);
    const server = await startProcess(SERVER, { ...START.env, ...serverEnv(databaseUrl, workshop.template) }, '/healthz', START.flags);
    const rows: Row[] = [
      { name: `${databaseLabel}: start to healthy (ms)`, target: { kind: 'at most', value: 1000 }, value: server.startMs },
      { name: `${databaseLabel}: server RSS when idle after start (MiB)`, target: { kind: 'at most', value: 80 }, value: server.memory().rssMiB },
    ];
    // V8 grows its heap while the server starts and gives the surplus back once the process has been
    // idle for a while (its memory reducer, 10–35 s after start in our runs): the idle figure once it settled.
    await new Promise((resolve) => setTimeout(resolve, IDLE_SETTLE_MS));
    rows.push({ name: `${databaseLabel}: server RSS idle ${IDLE_SETTLE_MS / 1000} s after start (MiB)`, target: { kind: 'at most', value: 80 }, value: server.memory().rssMiB });
    try {
      process.stderr.write('creating v1 and v4 data through the API…\n');
      const legacy = await legacyData(server.url, workshop, 10_000);
      const projectId = await projects(server.url, secrets.accessToken, 300);
      for (const item of standardCases(legacy, secrets, projectId, databaseLabel)) {
        if (!wanted(item.name)) continue;
        process.stderr.write(`${item.name}…\n`);
        rows.push({ name: item.name, target: item.target, connections, ...(await measureWarm(server.url, item.load)), serverRssMiB: server.memory().peakMiB });
      }
      rows.push(...(await engramLists(server)));
      rows.push(...(await mixed(server, legacy, secrets.accessToken, projectId)));
      rows.push({ name: `${databaseLabel}: server peak RSS over the run (MiB)`, target: { kind: 'at most', value: 150 }, value: server.memory().peakMiB });
      return rows;
    } finally {
      await server.stop();
    }
  } finally {
    await workshop.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The 10,000-engram list: plain, compressed, and revalidated with If-None-Match. */
async function engramLists(server: Running): Promise<Row[]> {
  const rows: Row[] = [];
  const probe = await fetch(`${server.url}/v1/engram.php`);
  await probe.arrayBuffer();
  const etag = probe.headers.get('etag') ?? undefined;
  for (const item of engramListLoads(etag)) {
    if (!wanted(item.name)) continue;
    process.stderr.write(`${item.name}…\n`);
    if (item.name.includes('If-None-Match') && !etag) {
      rows.push({ name: item.name, target: item.target, note: 'no ETag on the list: not measurable' });
      continue;
    }
    rows.push({ name: item.name, target: item.target, connections, ...(await measureWarm(server.url, item.load)), serverRssMiB: server.memory().peakMiB });
  }
  return rows;
}

/** Single-object GETs alone, then the same GETs while 2 connections POST arrays of 250 new projects. */
async function mixed(server: Running, legacy: Parameters<typeof mixedLoads>[0], accessToken: string, projectId: string): Promise<Row[]> {
  const { reads, writes } = mixedLoads(legacy, accessToken, projectId);
  const name = 'mixed: p99 of single-object GETs while 2 connections POST 250 new projects';
  if (!wanted(name)) return [];
  process.stderr.write(`${name}…\n`);
  const readConnections = Math.max(1, connections - 2);
  const alone = await measureWarm(server.url, reads, readConnections);
  const [underWrites, writing] = await Promise.all([
    measure(server.url, reads, { seconds, connections: readConnections }),
    measure(server.url, writes, { seconds, connections: 2 }),
  ]);
  return [
    { name: 'mixed: the GETs alone', connections: readConnections, ...alone },
    {
      name,
      connections: readConnections,
      ...underWrites,
      target: { kind: 'p99 at most times', value: 3, of: 'mixed: the GETs alone' },
      note: `writes meanwhile: ${writing.requestsPerSecond} req/s, ${writing.failed} failed`,
      serverRssMiB: server.memory().peakMiB,
    },
  ];
}

/** Fills in each row's verdict from the rows it is measured against. */
function judge(rows: Row[], hello: number): void {
  const byName = new Map(rows.map((row) => [row.name, row]));
  const reference = rows.find((row) => row.name.startsWith('reference'))?.requestsPerSecond;
  for (const row of rows) {
    const target = row.target;
    const value = row.value ?? row.requestsPerSecond;
    if (!target || value === undefined) continue;
    switch (target.kind) {
      case 'of reference': {
        if (!reference) break;
        const ratio = value / reference;
        row.verdict = `${ratio.toFixed(2)} × reference (≥ ${target.value}): ${ratio >= target.value ? 'met' : 'MISSED'}`;
        break;
      }
      case 'of peer': {
        const peerRow = byName.get(target.of!);
        if (!peerRow?.requestsPerSecond) break;
        const ratio = value / peerRow.requestsPerSecond;
        row.verdict = `${ratio.toFixed(2)} × peer (≥ ${target.value}): ${ratio >= target.value ? 'met' : 'MISSED'}`;
        break;
      }
      case 'req/s':
        row.verdict = `≥ ${target.value} req/s: ${value >= target.value ? 'met' : 'MISSED'}`;
        break;
      case 'at most':
        row.verdict = `${value} (≤ ${target.value}): ${value <= target.value ? 'met' : 'MISSED'}`;
        break;
      case 'p99 at most times': {
        const base = byName.get(target.of!);
        if (!base?.p99 || row.p99 === undefined) break;
        const times = row.p99 / base.p99;
        row.verdict = `p99 ${times.toFixed(1)} × alone (≤ ${target.value}): ${times <= target.value ? 'met' : 'MISSED'}`;
        break;
      }
    }
  }
  for (const row of rows) if (row.verdict === undefined && row.requestsPerSecond !== undefined && row.p50 !== undefined) row.verdict = `${(row.requestsPerSecond / hello).toFixed(2)} × hello-world`;
}

function table(rows: Row[], hello: number): string {
  const lines = [
    `| case | conns | req/s | p50 ms | p99 ms | bytes/answer | value | verdict | failed | server peak RSS MiB | note |`,
    `|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|`,
    `| bare Fastify hello-world | ${connections} | ${hello} | | | | | 1.00 × hello-world | | | |`,
  ];
  for (const row of rows) {
    lines.push(
      `| ${row.name} | ${row.connections ?? ''} | ${row.requestsPerSecond ?? ''} | ${row.p50 ?? ''} | ${row.p99 ?? ''} | ${row.bytesPerAnswer ?? ''} | ${row.value ?? ''} | ${row.verdict ?? ''} | ${row.failed || ''} | ${row.serverRssMiB ?? ''} | ${row.note ?? ''} |`,
    );
  }
  return lines.join('\n');
}

const started = new Date();
const before = await helloWorld();
process.stderr.write(`hello-world: ${before.requestsPerSecond} req/s\n`);
const rows: Row[] = [];
if (!values['skip-standard']) {
  rows.push(await floor());
  if (!values['skip-peer']) rows.push(...(await peer()));
  rows.push(...(await runStandard()));
}
if (values.large) rows.push(...(await largeListCases({ seconds })));
const after = await helloWorld();
const hello = Math.round((before.requestsPerSecond + after.requestsPerSecond) / 2);
judge(rows, hello);

const machine = `${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}, server ${[...Object.entries(START.env).map(([key, value]) => `${key}=${value}`), ...START.flags, SERVER].join(' ')}`;
const report = `Run ${started.toISOString()} on ${machine}; ${databaseLabel}; ${seconds} s per case; hello-world ${before.requestsPerSecond} req/s before and ${after.requestsPerSecond} after.\n\n${table(rows, hello)}\n`;
process.stdout.write(`\n${report}`);
mkdirSync('bench/results', { recursive: true });
writeFileSync(`bench/results/${started.toISOString().replace(/[:.]/g, '-')}.md`, report);
if (rows.some((row) => (row.failed ?? 0) > 0)) {
  process.stderr.write('some requests failed: the figures of those cases are not valid\n');
  process.exitCode = 1;
}
