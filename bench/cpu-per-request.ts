// npx tsx bench/cpu-per-request.ts [--seconds 3] [--rounds 3] [--before '<entry.js> [node flags…]'] [--cases user,engram,download,v4user,v4project,page,304,refresh,code]
//   [--secrets 150000 (refresh tokens and codes minted for the refresh and code cases)]
//   [--database postgres://… (the service on a fresh schema of that database instead of SQLite)]
//
// Server CPU time per request (utime + stime of the server process from /proc, divided by the
// requests answered) beside req/s, for the single-object GETs and the list revalidation, measured
// in turn against the reference (floor-server.ts), the service (dist/server.js) and optionally an
// earlier build (--before, e.g. a copy of an older dist/ inside this checkout so that its imports
// resolve). The service and --before start as `npm start` starts the server, with the start
// script's environment and node flags, so this script's ratios are the bench's. Every server runs on the same SQLite
// database. The v4 cases are compared with the second reference (floor-server.ts with
// FLOOR_BEARER_DATABASE: the bearer-token lookup besides), the others with the first; the
// 250-item page (`page`) with that reference's own page, the page floor; with --database the v1
// cases also with the v1 floor (the reference's lookup on the service's users table). On a shared
// machine req/s ratios move a lot between runs; the CPU time per request moves much less and is
// what a change to the per-request work changes. Linux only (/proc).
// Two builds are compared fairly: the data is made by a server process of its own (dist/), which
// is stopped before either measured build starts, and the builds take turns going first: in odd
// rounds `before` is measured first in every case, in even rounds the service. (Measuring
// `before` first every time favoured it in 13 of 14 comparisons.) The token floor takes part in
// the turns too: first in odd rounds, last in even ones. Use an even --rounds. The last
// lines give each build's median per case and the difference.
// With --database, PostgreSQL shares the cores, so its CPU per request counts too: each server's
// connections carry an application_name of their own (PGAPPNAME), and the CPU its backends used
// over the same window (from /proc of the backends pg_stat_activity names) is shown as "pg µs".
// The refresh and code cases then also run against the token floor (token-floor-pg-server.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { FakeWorkshop } from '../test/helpers/workshop.ts';
import { BENCH_HOST, legacyData, mintSecrets, projects, REDIRECT_URI } from './fixtures.ts';
import { type Load, measure } from './measure.ts';
import { backendCpu, backendMsSince } from './pg-backends.ts';
import { freshSchema } from './postgres-schema.ts';
import { cpuMs, productionStart, type Running, startProcess } from './processes.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10' },
    before: { type: 'string' },
    cases: { type: 'string', default: 'user,engram,download,v4user,v4project,304' },
    database: { type: 'string' },
    // How many refresh tokens and codes to mint for the refresh and code cases (each is used once).
    secrets: { type: 'string', default: '150000' },
  },
});
const seconds = Number(values.seconds);
/** --before '<entry.js> [node flags…]': an earlier build, or this one with other node flags (after the start script's). */
const beforeBuild = values.before?.split(' ').filter(Boolean) ?? [];
const connections = Number(values.connections);
const wanted = values.cases.split(',');
const FLOOR_PATH = '/v1/user.php/00000000-0000-4000-8000-000000000000';

/** The application_name each server's PostgreSQL connections carry, by its pid. */
const appNames = new Map<number, string>();
let admin: pg.Client | undefined;

async function measureCpu(server: Running, load: Load) {
  const appName = appNames.get(server.pid);
  const backendsBefore = await backendCpu(admin, appName);
  const before = cpuMs(server.pid);
  const figures = await measure(server.url, load, { seconds, connections });
  const serverMs = cpuMs(server.pid) - before;
  const backendMs = backendMsSince(backendsBefore, await backendCpu(admin, appName));
  const requests = Math.max(1, figures.requests);
  return { ...figures, cpuUs: (serverMs * 1000) / requests, pgUs: admin ? (backendMs * 1000) / requests : undefined };
}

let nextAppName = 0;
/** Starts a server whose PostgreSQL connections are told apart by their application_name. */
async function startServer(
  entry: string,
  env: Record<string, string>,
  probePath: string,
  flags: string[] = [],
): Promise<Running> {
  const appName = `cpu-per-request-${process.pid}-${nextAppName++}`;
  const server = await startProcess(entry, { ...env, PGAPPNAME: appName }, probePath, flags);
  appNames.set(server.pid, appName);
  return server;
}

const dir = mkdtempSync(join(tmpdir(), 'bench-cpu-'));
const schema = values.database ? await freshSchema(values.database) : undefined;
if (values.database) {
  admin = new pg.Client({ connectionString: values.database });
  await admin.connect();
}
const databaseUrl = schema?.url ?? `sqlite:${join(dir, 'bench.db')}`;
const workshop = await new FakeWorkshop().start();
const running: Running[] = [];
try {
  // refresh, code: the refresh_token grant and the code exchange, each secret used once (all servers share the database).
  const secrets = await mintSecrets(
    databaseUrl,
    wanted.includes('refresh') || wanted.includes('code') ? Number(values.secrets) : 10,
  );
  let nextToken = 0;
  let nextCode = 0;
  const env = {
    DATABASE_URL: databaseUrl,
    BASE_URL: `https://${BENCH_HOST}`,
    WORKSHOP_URL: workshop.template,
    RATE_LIMIT_V1: '1000000000',
    RATE_LIMIT_V4: '1000000000',
    LOG_LEVEL: 'info',
  };
  // The data is made through a server of its own, stopped before the measured ones start, so
  // neither measured build has warmed its caches or its JIT on it.
  const maker = await startServer('dist/server.js', env, '/healthz');
  let legacy: Awaited<ReturnType<typeof legacyData>> | undefined;
  let projectId = '';
  try {
    // The v1 data only for the cases that read it (the token grants need none).
    legacy = wanted.some((name) => name !== 'refresh' && name !== 'code')
      ? await legacyData(maker.url, workshop, 10_000)
      : undefined;
    projectId =
      wanted.includes('v4project') || wanted.includes('page')
        ? await projects(maker.url, secrets.accessToken, 300)
        : '';
  } finally {
    await maker.stop();
  }
  // Both builds start together: neither gets the quieter moment or the lower pid.
  // Both builds start as `npm start` starts the server (its environment and node flags, as the
  // bench does); a --before build's own flags come after those, and V8 takes the last of a flag.
  const production = productionStart();
  const serverEnv = { ...production.env, ...env };
  const [service, earlier] = await Promise.all([
    startServer('dist/server.js', serverEnv, '/healthz', production.flags),
    values.before
      ? startServer(beforeBuild[0]!, serverEnv, '/healthz', [...production.flags, ...beforeBuild.slice(1)])
      : undefined,
  ]);
  running.push(service);
  const grants = wanted.includes('refresh') || wanted.includes('code');
  const tokenFloor =
    schema && grants
      ? await startServer('./bench/token-floor-pg-server.ts', { DATABASE_URL: databaseUrl }, '/')
      : undefined;
  if (tokenFloor) running.push(tokenFloor);
  if (earlier) running.push(earlier);
  const floor = await startProcess('./bench/floor-server.ts', {}, FLOOR_PATH);
  running.push(floor);
  const v4 = wanted.some((name) => name.startsWith('v4') || name === 'page');
  // On PostgreSQL the v1 cases are also measured against the v1 floor (floor-server.ts): the
  // reference's lookup made on the service's users table, the one round trip a v1 GET makes there.
  const v1OnPostgres = schema ? wanted.filter((name) => ['user', 'engram', 'download', '304'].includes(name)) : [];
  // Through startServer: its PostgreSQL backends' CPU counts as well.
  const floorBearer =
    v4 || v1OnPostgres.length > 0
      ? await startServer('./bench/floor-server.ts', { FLOOR_BEARER_DATABASE: databaseUrl }, FLOOR_PATH)
      : undefined;
  if (floorBearer) running.push(floorBearer);
  const bearer = { authorization: `Bearer ${secrets.accessToken}` };
  const probe = await fetch(`${service.url}/v1/engram.php`);
  await probe.arrayBuffer();
  const cases: Record<string, Load> = {
    user: { path: `/v1/user.php/${legacy?.signer.userId}` },
    engram: { path: `/v1/engram.php/${legacy?.engramUid}` },
    download: { path: `/v1/document.php/${legacy?.documentId}` },
    v4user: { path: '/v4/user', headers: bearer },
    v4project: { path: `/v4/projects/${projectId}`, headers: bearer },
    page: { path: '/v4/projects?pageSize=250', headers: bearer },
    refresh: {
      method: 'POST',
      path: '/v4/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      next: () => ({
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          client_id: secrets.clientId,
          refresh_token: secrets.refreshTokens[nextToken++] ?? 'exhausted',
        }).toString(),
      }),
    },
    code: {
      method: 'POST',
      path: '/v4/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      next: () => ({
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          client_id: secrets.clientId,
          code: secrets.codes[nextCode++] ?? 'exhausted',
          redirect_uri: REDIRECT_URI,
          code_verifier: secrets.codeVerifier,
        }).toString(),
      }),
    },
    '304': {
      path: '/v1/engram.php',
      headers: { 'if-none-match': probe.headers.get('etag') ?? '"none"', 'accept-encoding': 'br, gzip' },
      expectStatus: 304,
    },
  };
  const builds: Array<[string, Running]> = [
    ...(earlier ? ([['before', earlier]] as Array<[string, Running]>) : []),
    ['service', service],
  ];
  /**
   * The servers of a case in the order of this round: odd rounds go token floor, before, service;
   * even rounds the reverse, so no server is always measured first (going first favoured it).
   */
  const serversOf = (name: string, round = 1): Array<[string, Running]> => {
    const all: Array<[string, Running]> =
      tokenFloor && (name === 'refresh' || name === 'code') ? [['token floor', tokenFloor], ...builds] : builds;
    return round % 2 === 1 ? all : [...all].reverse();
  };
  /** µs of server CPU per request, by case and server label, one figure per round. */
  const perRound = new Map<string, number[]>();
  /** The same plus the CPU of the server's PostgreSQL backends (with --database). */
  const withBackends = new Map<string, number[]>();
  /** Adds a round's figures of one server in one case to perRound and withBackends. */
  const record = (name: string, label: string, figures: { cpuUs: number; pgUs?: number }) => {
    const key = `${name}\t${label}`;
    perRound.set(key, [...(perRound.get(key) ?? []), figures.cpuUs]);
    if (figures.pgUs !== undefined)
      withBackends.set(key, [...(withBackends.get(key) ?? []), figures.cpuUs + figures.pgUs]);
  };
  // Warm-up: every server JIT-compiles its paths before anything is counted.
  await measure(floor.url, { path: FLOOR_PATH }, { seconds: 1, connections });
  if (floorBearer) await measure(floorBearer.url, { path: FLOOR_PATH, headers: bearer }, { seconds: 1, connections });
  for (const name of wanted)
    for (const [, server] of serversOf(name)) await measure(server.url, cases[name]!, { seconds: 1, connections });

  for (let round = 1; round <= Number(values.rounds); round++) {
    const plain = await measureCpu(floor, { path: FLOOR_PATH });
    const withBearer = floorBearer ? await measureCpu(floorBearer, { path: FLOOR_PATH, headers: bearer }) : undefined;
    console.log(
      `round ${round}: reference ${plain.requestsPerSecond} req/s, ${plain.cpuUs.toFixed(0)} µs/request` +
        (withBearer
          ? ` | reference + bearer ${withBearer.requestsPerSecond} req/s, ${withBearer.cpuUs.toFixed(0)} µs/request`
          : ''),
    );
    const pageFloor = floorBearer && wanted.includes('page') ? await measureCpu(floorBearer, cases.page!) : undefined;
    if (pageFloor) {
      console.log(
        `  page floor ${pageFloor.requestsPerSecond} req/s, ${pageFloor.cpuUs.toFixed(0)} µs/request${pageFloor.pgUs === undefined ? '' : `, pg ${pageFloor.pgUs.toFixed(0)} µs`}`,
      );
      record('page', 'floor', pageFloor);
    }
    const v1Floor =
      floorBearer && v1OnPostgres.length > 0
        ? await measureCpu(floorBearer, { path: `/v1-floor/user.php/${legacy?.signer.userId}` })
        : undefined;
    if (v1Floor) {
      console.log(
        `  v1 floor ${v1Floor.requestsPerSecond} req/s, ${v1Floor.cpuUs.toFixed(0)} µs/request, pg ${v1Floor.pgUs!.toFixed(0)} µs`,
      );
      for (const name of v1OnPostgres) record(name, 'floor', v1Floor);
    }
    for (const name of wanted) {
      const reference =
        name === 'page' && pageFloor
          ? pageFloor
          : v1Floor && v1OnPostgres.includes(name)
            ? v1Floor
            : name.startsWith('v4') && withBearer
              ? withBearer
              : plain;
      const parts: string[] = [];
      for (const [label, server] of serversOf(name, round)) {
        const figures = await measureCpu(server, cases[name]!);
        record(name, label, figures);
        const ratio = (figures.requestsPerSecond / reference.requestsPerSecond).toFixed(2);
        // The reference's CPU per request over ours: what the req/s ratio would be on a machine where CPU is the bound.
        const cpuRatio = (reference.cpuUs / Math.max(1, figures.cpuUs)).toFixed(2);
        parts.push(
          `${label} ${figures.requestsPerSecond} req/s (${ratio} × reference), ${figures.cpuUs.toFixed(0)} µs/request (reference's CPU ${cpuRatio} × ours)${figures.pgUs === undefined ? '' : `, pg ${figures.pgUs.toFixed(0)} µs`}${figures.failed ? `, ${figures.failed} failed` : ''}`,
        );
      }
      console.log(`  ${name}: ${parts.join(' | ')}`);
    }
  }
  const median = (figures: number[]) => {
    const sorted = [...figures].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  };
  console.log(
    `medians over ${values.rounds} rounds, µs of server CPU per request${earlier ? ' (the builds alternated going first)' : ''}:`,
  );
  for (const name of wanted) {
    // The page floor or the v1 floor, where one was measured, first.
    const labels = [...(perRound.has(`${name}\tfloor`) ? ['floor'] : []), ...serversOf(name).map(([label]) => label)];
    const parts = labels.map((label) => `${label} ${median(perRound.get(`${name}\t${label}`) ?? [NaN]).toFixed(1)}`);
    const [beforeUs, serviceUs] = [perRound.get(`${name}\tbefore`), perRound.get(`${name}\tservice`)];
    // Rounds pair the builds in time, so the median of the per-round differences moves less with the
    // machine's load than the difference of the medians.
    const paired = beforeUs && serviceUs ? serviceUs.map((us, index) => us - beforeUs[index]!) : [];
    const change = paired.length
      ? ` (service − before: ${(median(serviceUs!) - median(beforeUs!)).toFixed(1)}; per round, median ${median(paired).toFixed(1)}, service cheaper in ${paired.filter((us) => us < 0).length} of ${paired.length})`
      : '';
    console.log(`  ${name}: ${parts.join(' | ')}${change}`);
    if (withBackends.size > 0) {
      console.log(
        `  ${name}, server + PostgreSQL backends: ${labels.map((label) => `${label} ${median(withBackends.get(`${name}\t${label}`) ?? [NaN]).toFixed(1)}`).join(' | ')}`,
      );
    }
  }
} finally {
  for (const server of running) await server.stop();
  await workshop.stop();
  await schema?.drop();
  await admin?.end();
  rmSync(dir, { recursive: true, force: true });
}
