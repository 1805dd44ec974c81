// npm run bench [-- --seconds 10 --connections 10 --only <text> --database <url> --large --skip-standard --skip-peer | --help]
// Every ratio is of figures measured in the same run, because absolute figures drift on shared
// machines (a case judged against a reference or a peer is measured in slices between slices of
// that server: measureCase): against a bare Fastify hello-world (before and after the cases, averaged), against the
// reference rows (floor-server.ts: the per-request work the service must do and nothing else; the
// second adds the bearer-token lookup a v4 GET needs), and against the peers for the token endpoint
// (node-oidc-provider 9, peer-oidc-provider.ts, with the storage adapters of bench/peer-adapters/:
// in memory, SQLite and Redis on a SQLite run, in memory and PostgreSQL on a PostgreSQL run).
// Redis is 127.0.0.1:6379 unless BENCH_REDIS_URL says otherwise; on PostgreSQL the service and the
// peer each work in a fresh schema of the --database, dropped at the end (docs/benchmarks.md).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FakeWorkshop } from '../test/helpers/workshop.ts';
import {
  bulkPostFloor,
  bulkPostLoad,
  type Case,
  engramListLoads,
  grantLoads,
  mixedLoads,
  PAGE_PATH,
  PEER_ROW_PREFIX,
  type PeerStorage,
  pageFloor,
  peerRowName,
  peersOf,
  peerTargets,
  projectFloor,
  REFERENCE,
  referenceWithBearer,
  standardCases,
  type Target,
  V1_JUDGED,
  V4_BULK_POST,
  V4_PAGE,
  V4_SINGLE_GETS,
  v1Floor,
} from './cases.ts';
import { eventDownloadCases, eventDownloadTable } from './event-download.ts';
import { BENCH_HOST, legacyData, mintSecrets, projects } from './fixtures.ts';
import { largeListCases } from './large-lists.ts';
import { type Figures, type Load, measure } from './measure.ts';
import { freshSchema } from './postgres-schema.ts';
import { type Running, serverUnderTest, startProcess } from './processes.ts';
import { GRANTS, noteFloorShares, tokenFloorRows } from './token-floors.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    only: { type: 'string' },
    database: { type: 'string' },
    large: { type: 'boolean', default: false },
    'skip-standard': { type: 'boolean', default: false },
    'skip-peer': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  process.stdout.write(`npm run bench [-- options]   (docs/benchmarks.md)
  --seconds <n>       seconds per case, after a 1 s warm-up (default 10)
  --connections <n>   connections per case (default 10)
  --only <text>       only the cases (and peer rows) whose name contains the text
  --database <url>    PostgreSQL (postgres://…, the database must exist) instead of a temp SQLite file
  --large             add the large data sets' cases: 1,000,000 projects (list pages), 1,000,000 accounts (the
                      console's search) and 1,000,000 security events (the download), on SQLite and PostgreSQL
  --skip-standard     leave out the standard cases (with --large: the large ones only)
  --skip-peer         leave out the node-oidc-provider peers and the token floors
Results: stdout and bench/results/<time>-<database>.md. Environment: BENCH_REDIS_URL,
BENCH_POSTGRES_URL (--large), BENCH_SERVER_ENTRY, BENCH_IDLE_SETTLE_MS.
`);
  process.exit(0);
}
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const wanted = (name: string) => !values.only || name.includes(values.only);

interface Row extends Partial<Figures> {
  name: string;
  connections?: number;
  targets?: Target[];
  /** What the row is measured against and the figure, filled in once every row is measured. */
  verdict?: string;
  /** Whether the verdict judges the row's targets (rather than only relating it to hello-world). */
  judged?: boolean;
  /** Targets shown for information, not counted among the run's targets (the token floors). */
  informational?: boolean;
  serverRssMiB?: number;
  /** A figure that is not a throughput (milliseconds to start, MiB), judged by its target. */
  value?: number;
  note?: string;
  /** req/s of a reference or peer row measured around this case (measureCase), by that row's name. */
  around?: Record<string, number>;
}

const HELLO = './bench/hello-world.ts';
const FLOOR = './bench/floor-server.ts';
const PEER = './bench/peer-oidc-provider.ts';
const FLOOR_PATH = '/v1/user.php/00000000-0000-4000-8000-000000000000';
/**
 * The service as production runs it: the compiled JavaScript of `npm run build` (run by `npm ci`),
 * with the environment and node flags of `npm start` (memory settings, docs/decisions/0031-0034),
 * else the sources under tsx.
 */
const { entry: SERVER, ...START } = serverUnderTest();
// The server runs with its production settings, rate limits included, set high enough not to trip.
const serverEnv = (databaseUrl: string, workshopTemplate: string) => ({
  DATABASE_URL: databaseUrl,
  BASE_URL: `https://${BENCH_HOST}`,
  WORKSHOP_URL: workshopTemplate,
  RATE_LIMIT_V1: '1000000000',
  RATE_LIMIT_V4: '1000000000',
  LOG_LEVEL: 'info',
});
/**
 * Single-use secrets (codes and refresh tokens) each server of the token rows holds: the peers,
 * the token floor and the service alike, so each grant runs on tables of the same size (a refresh
 * costs more CPU on larger ones: 118 µs against 154 µs per grant with 60,000 and 150,000 in
 * bench/cpu-per-request.ts). Enough for a peer measured for its row (1 s of warm-up and
 * `--seconds`) and again around the service's case (another 1.2 × `--seconds`: measureCase), 2.3 ×
 * `--seconds` in all, at up to 10,000 req/s: the in-memory peer did 9,500 around the refresh case
 * on 2026-11-27, when 10,000 a second of the run ran out and its 400s were counted as answers. An
 * exhausted list shows up as failed requests, in the row of the case it was measured around too.
 * (At least the 100,000 of a 10 s run before: a `--seconds 2` run exhausted 50,000.)
 */
const SECRETS_PER_SERVER = Math.max(100_000, seconds * 25_000);
const IDLE_SETTLE_MS = Number(process.env.BENCH_IDLE_SETTLE_MS ?? 45_000);
const databaseLabel = values.database?.startsWith('postgres') ? 'PostgreSQL' : 'SQLite';
/** A run with --only measures some cases: its peak RSS is not the whole bench's. */
const partial = values.only ? `partial run (--only ${values.only}): not the whole bench` : undefined;

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

/**
 * The servers of the reference and peer rows measured so far, by row name: they stay up to be
 * measured again around each case judged against them (measureCase).
 */
const references = new Map<string, { server: Running; load: Load; stop: () => Promise<void> }>();

/**
 * The reference of floor-server.ts: the per-request work the issues require, and nothing else.
 * With `bearer`, the second reference: the same plus one raw bearer-token lookup by hash in the
 * service's database, for a token the fixtures minted there. The server stays up (stopReferences).
 */
async function floor(bearer?: { databaseUrl: string; accessToken: string }): Promise<Row> {
  const server = await startProcess(FLOOR, bearer ? { FLOOR_BEARER_DATABASE: bearer.databaseUrl } : {}, FLOOR_PATH);
  const load: Load = {
    path: FLOOR_PATH,
    headers: bearer ? { authorization: `Bearer ${bearer.accessToken}` } : undefined,
  };
  const name = bearer ? referenceWithBearer(databaseLabel) : REFERENCE;
  references.set(name, { server, load, stop: () => server.stop() });
  await measure(server.url, load, { seconds: 2, connections }); // warm-up
  const figures = await measure(server.url, load, { seconds, connections });
  return { name, connections, ...figures, serverRssMiB: server.memory().peakMiB };
}

/**
 * A floor of the reference + bearer's server that reads the service's data by raw statements, once
 * the service made it (floor-server.ts): the 250-item page of the token's user, one of the user's
 * projects, or (PostgreSQL) the v1 user. It stays up with that server.
 */
async function floorOnServiceData(name: string, load: Load): Promise<Row> {
  const { server } = floorReference(name, load);
  await measure(server.url, load, { seconds: 2, connections }); // warm-up
  return {
    name,
    connections,
    ...(await measure(server.url, load, { seconds, connections })),
    serverRssMiB: server.memory().peakMiB,
  };
}

/** Registers `load` on the reference + bearer's server as the reference `name` (cases measure around it). */
function floorReference(name: string, load: Load): { server: Running } {
  const { server, stop } = references.get(referenceWithBearer(databaseLabel))!;
  references.set(name, { server, load, stop });
  return { server };
}

/**
 * Stops the peers that no case left to measure is judged against. A peer that has done its grants
 * does not stay quiet: the in-memory one, holding ~1 GiB by then, ran V8's memory reducer ~27 s
 * later and used 2 s of CPU within 3 s, on the two cores the v4 GETs were being measured on.
 */
async function stopPeersNotNeeded(remaining: readonly Case[]): Promise<void> {
  const needed = new Set(
    remaining.flatMap((item) => (item.targets ?? []).flatMap((target) => ('of' in target ? [target.of] : []))),
  );
  const peers = [...references].filter(([name]) => name.startsWith(PEER_ROW_PREFIX));
  // A peer's two rows share one server: stopped when neither is needed.
  const stillNeeded = new Set(peers.filter(([name]) => needed.has(name)).map(([, reference]) => reference.stop));
  for (const [name, reference] of peers) {
    if (stillNeeded.has(reference.stop)) continue;
    references.delete(name);
    if (![...references.values()].some((other) => other.stop === reference.stop)) await reference.stop();
  }
}

async function stopReferences(): Promise<void> {
  // A peer's rows share one server: stopped once.
  for (const stop of new Set([...references.values()].map((reference) => reference.stop))) await stop();
  references.clear();
}

/** Slices a case judged against a reference or a peer is measured in (measureCase). */
const SLICES = 5;

/**
 * A case of the service, warmed up. A case judged against a reference or a peer row is measured
 * in SLICES slices, the reference's (or peer's) server measured for a slice as long before the
 * first and after each: R S R S … S R. The ratio is taken against the reference's mean over its
 * slices, which sit at the same mean time as the case's. This machine's speed moves by a third
 * within minutes and by more between seconds, and the reference rows are measured minutes before
 * the cases: around the case, a steady drift is the same on both sides of the ratio, and slices of
 * one length give both sides the same share of ramp-up. The verdict gives the ratio to the row at
 * the start too (docs/benchmarks.md). The case's req/s is over all its slices, its p50 the median
 * of theirs, its p99 the highest.
 */
async function measureCase(server: Running, name: string, targets: Target[] | undefined, load: Load): Promise<Row> {
  const bases = (targets ?? []).flatMap((target) => ('of' in target && references.has(target.of) ? [target.of] : []));
  if (bases.length === 0)
    return {
      name,
      targets,
      connections,
      ...(await measureWarm(server.url, load)),
      serverRssMiB: server.memory().peakMiB,
    };
  if (!load.next) await measure(server.url, load, { seconds: 1, connections });
  const slice = seconds / SLICES;
  // Only the reference's good answers count: a peer whose single-use secrets ran out answers 400
  // faster than it grants. Its failures are the row's too, so that the run says it is not valid.
  const referenceRequests: Record<string, number> = Object.fromEntries(bases.map((base) => [base, 0]));
  let failedAround = 0;
  const onReferences = async () => {
    for (const base of bases) {
      const reference = references.get(base)!;
      const figures = await measure(reference.server.url, reference.load, { seconds: slice, connections });
      referenceRequests[base]! += figures.requests - figures.failed;
      failedAround += figures.failed;
    }
  };
  const slices: Figures[] = [];
  await onReferences();
  for (let index = 0; index < SLICES; index++) {
    slices.push(await measure(server.url, load, { seconds: slice, connections }));
    await onReferences();
  }
  const around = Object.fromEntries(
    bases.map((base) => [base, Math.round(referenceRequests[base]! / ((SLICES + 1) * slice))]),
  );
  const requests = slices.reduce((sum, figures) => sum + figures.requests, 0);
  const figures: Figures = {
    requests,
    requestsPerSecond: Math.round(requests / seconds),
    p50: slices.map((figures) => figures.p50).sort((a, b) => a - b)[Math.floor(SLICES / 2)]!,
    p99: Math.max(...slices.map((figures) => figures.p99)),
    failed: slices.reduce((sum, figures) => sum + figures.failed, 0) + failedAround,
    bytesPerAnswer: Math.round(
      slices.reduce((sum, figures) => sum + figures.bytesPerAnswer * figures.requests, 0) / Math.max(1, requests),
    ),
  };
  const note =
    `${SLICES} slices; around them: ${bases.map((base) => `${shortName(base)} ${around[base]} req/s`).join(', ')}` +
    (failedAround > 0 ? `; ${failedAround} requests failed around them` : '');
  return { name, targets, connections, ...figures, serverRssMiB: server.memory().peakMiB, around, note };
}

/**
 * node-oidc-provider 9 on one storage: the authorization_code exchange and the refresh_token grant,
 * over single-use secrets the peer minted through that storage before it listened.
 */
async function peer(storage: PeerStorage): Promise<Row[]> {
  const grants = GRANTS.filter((grant) => wanted(peerRowName(storage, grant)) || wanted(`v4 token: ${grant}`));
  if (grants.length === 0) return [];
  const dir = mkdtempSync(join(tmpdir(), 'bench-peer-'));
  const file = join(dir, 'secrets.json');
  const env: Record<string, string> = {
    PEER_STORAGE: storage,
    PEER_SECRETS_FILE: file,
    PEER_MINT: String(SECRETS_PER_SERVER),
  };
  if (storage === 'sqlite') env.PEER_SQLITE_FILE = join(dir, 'peer.db');
  if (storage === 'postgres') env.PEER_DATABASE_URL = values.database!;
  if (storage === 'redis' && process.env.BENCH_REDIS_URL) env.PEER_REDIS_URL = process.env.BENCH_REDIS_URL;
  process.stderr.write(`peer on ${storage}: minting ${SECRETS_PER_SERVER} codes and refresh tokens…\n`);
  // Minting through a network storage takes a while before the peer listens.
  const server = await startProcess(PEER, env, '/.well-known/openid-configuration', [], 600_000);
  // The server stays up, to be measured again around the service's grants (measureCase, stopReferences).
  const stop = async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const secrets = JSON.parse(readFileSync(file, 'utf8')) as {
      clientId: string;
      redirectUri: string;
      codeVerifier: string;
      codes: string[];
      refreshTokens: string[];
      storage: string;
    };
    const rows: Row[] = [];
    const loads = grantLoads('/token', secrets);
    for (const grant of grants) {
      const name = peerRowName(storage, grant);
      const load = loads[grant];
      references.set(name, { server, load, stop });
      process.stderr.write(`${name}…\n`);
      rows.push({
        name,
        connections,
        ...(await measure(server.url, load, { seconds, connections })),
        serverRssMiB: server.memory().peakMiB,
        note: secrets.storage,
      });
    }
    return rows;
  } catch (error) {
    await stop();
    throw error;
  }
}

async function runStandard(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  // On PostgreSQL the service gets a schema of its own in the given database, dropped at the end.
  const schema = values.database ? await freshSchema(values.database) : undefined;
  const databaseUrl = schema?.url ?? `sqlite:${join(dir, 'bench.db')}`;
  const workshop = await new FakeWorkshop().start();
  try {
    // A partial run without the token cases needs only the access token: minting the full count takes minutes on a slow host.
    const grantsWanted = GRANTS.some((grant) => wanted(`v4 token: ${grant}`));
    process.stderr.write('minting codes and refresh tokens…\n');
    const secrets = await mintSecrets(databaseUrl, grantsWanted ? SECRETS_PER_SERVER : 10);
    const rows: Row[] = [];
    if (
      [
        referenceWithBearer(databaseLabel),
        ...V4_SINGLE_GETS,
        V4_PAGE,
        V4_BULK_POST,
        ...(databaseLabel === 'PostgreSQL' ? V1_JUDGED : []),
      ].some(wanted)
    ) {
      process.stderr.write(`${referenceWithBearer(databaseLabel)}…\n`);
      rows.push(await floor({ databaseUrl, accessToken: secrets.accessToken }));
    }
    // The token floors, on a database of their own of the service's schema, before the service
    // starts (bench/token-floors.ts): minting their secrets into the service's would double its tables.
    if (!values['skip-peer']) {
      const floorSchema = values.database ? await freshSchema(values.database, 'bench_floor') : undefined;
      try {
        const floorDatabaseUrl = floorSchema?.url ?? `sqlite:${join(dir, 'floor.db')}`;
        rows.push(
          ...(await tokenFloorRows({
            databaseUrl: floorDatabaseUrl,
            secretsCount: SECRETS_PER_SERVER,
            database: databaseLabel,
            seconds,
            connections,
            wanted,
            measure: measureWarm,
            targets: (grant) => peerTargets(databaseLabel, grant),
          })),
        );
      } finally {
        await floorSchema?.drop();
      }
    }
    const server = await startProcess(
      SERVER,
      { ...START.env, ...serverEnv(databaseUrl, workshop.template) },
      '/healthz',
      START.flags,
    );
    rows.push(
      {
        name: `${databaseLabel}: start to healthy (ms)`,
        targets: [{ kind: 'at most', value: 1000 }],
        value: server.startMs,
      },
      {
        name: `${databaseLabel}: server RSS when idle after start (MiB)`,
        targets: [{ kind: 'at most', value: 80 }],
        value: server.memory().rssMiB,
      },
    );
    // V8 grows its heap while the server starts and gives the surplus back once the process has been
    // idle for a while (its memory reducer, 10–35 s after start in our runs): the idle figure once it settled.
    await new Promise((resolve) => setTimeout(resolve, IDLE_SETTLE_MS));
    rows.push({
      name: `${databaseLabel}: server RSS idle ${IDLE_SETTLE_MS / 1000} s after start (MiB)`,
      targets: [{ kind: 'at most', value: 80 }],
      value: server.memory().rssMiB,
    });
    try {
      process.stderr.write('creating v1 and v4 data through the API…\n');
      const legacy = await legacyData(server.url, workshop, 10_000);
      const projectId = await projects(server.url, secrets.accessToken, 300);
      const bearer = { authorization: `Bearer ${secrets.accessToken}` };
      for (const [name, load, forCases] of [
        [pageFloor(databaseLabel), { path: PAGE_PATH, headers: bearer }, [V4_PAGE]],
        [projectFloor(databaseLabel), { path: `/v4/projects/${projectId}`, headers: bearer }, V4_SINGLE_GETS],
        ...(databaseLabel === 'PostgreSQL'
          ? [[v1Floor(databaseLabel), { path: `/v1-floor/user.php/${legacy.signer.userId}` }, V1_JUDGED] as const]
          : []),
      ] as const) {
        if (!forCases.some(wanted) || !references.has(referenceWithBearer(databaseLabel))) continue;
        process.stderr.write(`${name}…\n`);
        rows.push(await floorOnServiceData(name, load));
      }
      // The bulk-POST floor is measured only around its case, in slices: a row of its own before the
      // cases would add ~300,000 projects to the user's, which the 250-item page counts.
      if (wanted(V4_BULK_POST) && databaseLabel === 'PostgreSQL')
        floorReference(bulkPostFloor(databaseLabel), bulkPostLoad(secrets.accessToken));
      const cases = standardCases(legacy, secrets, projectId, databaseLabel).filter((item) => wanted(item.name));
      for (const [index, item] of cases.entries()) {
        process.stderr.write(`${item.name}…\n`);
        rows.push(await measureCase(server, item.name, item.targets, item.load));
        await stopPeersNotNeeded(cases.slice(index + 1));
      }
      rows.push(...(await engramLists(server)));
      rows.push(...(await mixed(server, legacy, secrets.accessToken, projectId)));
      // VmHWM of the server process: its peak from start to here, every case above included.
      rows.push({
        name: `${databaseLabel}: server peak RSS over the run (MiB)`,
        targets: [{ kind: 'at most', value: 150 }],
        value: server.memory().peakMiB,
        note: partial,
      });
      return rows;
    } finally {
      await server.stop();
    }
  } finally {
    await workshop.stop();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The 10,000-engram list: plain, compressed, and revalidated with If-None-Match. */
async function engramLists(server: Running): Promise<Row[]> {
  const rows: Row[] = [];
  const probe = await fetch(`${server.url}/v1/engram.php`);
  await probe.arrayBuffer();
  const etag = probe.headers.get('etag') ?? undefined;
  for (const item of engramListLoads(etag, databaseLabel)) {
    if (!wanted(item.name)) continue;
    process.stderr.write(`${item.name}…\n`);
    if (item.name.includes('If-None-Match') && !etag) {
      rows.push({ name: item.name, targets: item.targets, note: 'no ETag on the list: not measurable' });
      continue;
    }
    rows.push(await measureCase(server, item.name, item.targets, item.load));
  }
  return rows;
}

/**
 * Single-object GETs alone, then the same GETs while 2 connections POST arrays of 250 new projects.
 * The GETs are sent by the node:http client, which times answers to the microsecond: autocannon
 * keeps whole milliseconds, and a p99 alone of "1 ms" made the ratio a matter of rounding.
 */
async function mixed(
  server: Running,
  legacy: Parameters<typeof mixedLoads>[0],
  accessToken: string,
  projectId: string,
): Promise<Row[]> {
  const { reads, writes } = mixedLoads(legacy, accessToken, projectId);
  const aloneName = `${databaseLabel} mixed: the GETs alone`;
  const name = `${databaseLabel} mixed: p99 of single-object GETs while 2 connections POST 250 new projects`;
  if (!wanted(name)) return [];
  process.stderr.write(`${name}…\n`);
  const readConnections = Math.max(1, connections - 2);
  await measure(server.url, reads, { seconds: 1, connections: readConnections }); // warm-up
  const alone = await measure(server.url, reads, { seconds, connections: readConnections });
  const [underWrites, writing] = await Promise.all([
    measure(server.url, reads, { seconds, connections: readConnections }),
    measure(server.url, writes, { seconds, connections: 2 }),
  ]);
  return [
    { name: aloneName, connections: readConnections, ...alone },
    {
      name,
      connections: readConnections,
      ...underWrites,
      // Issue 21: ≤ 5 × alone on SQLite (one writer), ≤ 3 × on PostgreSQL.
      targets: [{ kind: 'p99 at most times', value: databaseLabel === 'SQLite' ? 5 : 3, of: aloneName }],
      note: `writes meanwhile: ${writing.requestsPerSecond} req/s, ${writing.failed} failed`,
      serverRssMiB: server.memory().peakMiB,
    },
  ];
}

/** A reference or peer row's name as a verdict or note gives it. */
function shortName(row: string): string {
  if (row === REFERENCE) return 'reference';
  if (row === referenceWithBearer(databaseLabel)) return 'reference + bearer';
  if (row === pageFloor(databaseLabel)) return 'page floor';
  if (row === projectFloor(databaseLabel)) return 'single-GET floor';
  if (row === v1Floor(databaseLabel)) return 'v1 floor';
  if (row === bulkPostFloor(databaseLabel)) return 'bulk-POST floor';
  return row.slice(0, row.indexOf(':')).replace('node-oidc-provider 9 ', '');
}

/** What one target says of a value, against the rows of the same run; undefined when its base row is missing. */
function verdictOf(target: Target, row: Row, value: number, byName: Map<string, Row>): string | undefined {
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
  switch (target.kind) {
    case 'of reference':
    case 'of peer': {
      const first = byName.get(target.of)?.requestsPerSecond;
      const base = row.around?.[target.of] ?? first;
      if (!base) return undefined;
      const ratio = value / base;
      const label = shortName(target.of);
      // Measured around the case: the ratio to the row at the start is shown beside it.
      const bracketed = row.around?.[target.of] !== undefined;
      const aside = bracketed && first ? ` (${(value / first).toFixed(2)} × its row at the start)` : '';
      return `${ratio.toFixed(2)} × ${label}${bracketed ? ' around it' : ''} (≥ ${target.value}): ${met(ratio >= target.value)}${aside}`;
    }
    case 'beside floor': {
      const around = row.around?.[target.of];
      if (!around) return undefined;
      // The floor against the reference the case is judged by, both measured around the case: where
      // the floor itself falls short of the target, the target is out of reach of the required work.
      const reach = (ok: boolean) => (ok ? 'within' : 'out of');
      const judgedBy = row.targets?.find((other) => other.kind === 'of reference' || other.kind === 'req/s');
      const reference = judgedBy?.kind === 'of reference' ? row.around?.[judgedBy.of] : undefined;
      const floorReach =
        judgedBy?.kind === 'req/s'
          ? `; ${judgedBy.value} req/s is ${reach(around >= judgedBy.value)} the floor's reach`
          : judgedBy && reference
            ? `; the floor ${(around / reference).toFixed(2)} × ${shortName(judgedBy.of)}: ${judgedBy.value} × is ${reach(around / reference >= judgedBy.value)} its reach`
            : '';
      return `${shortName(target.of)} around it ${around} req/s (${(value / around).toFixed(2)} × it${floorReach})`;
    }
    case 'req/s':
      return `≥ ${target.value} req/s: ${met(value >= target.value)}`;
    case 'at most':
      return `${value} (≤ ${target.value}): ${met(value <= target.value)}`;
    case 'p99 at most times': {
      const base = byName.get(target.of)?.p99;
      if (!base || row.p99 === undefined) return undefined;
      const times = row.p99 / base;
      return `p99 ${times.toFixed(1)} × alone (≤ ${target.value}): ${met(times <= target.value)}`;
    }
    case 'p50 at most ms':
      return row.p50 === undefined
        ? undefined
        : `p50 ${row.p50} ms (≤ ${target.value}): ${met(row.p50 <= target.value)}`;
    case 'p99 under ms':
      return row.p99 === undefined
        ? undefined
        : `p99 ${row.p99} ms (< ${target.value}): ${met(row.p99 < target.value)}`;
  }
}

/** Fills in each row's verdict from the rows it is measured against: one ratio per target. */
function judge(rows: Row[], hello: number): void {
  const byName = new Map(rows.map((row) => [row.name, row]));
  for (const row of rows) {
    const value = row.value ?? row.requestsPerSecond;
    if (!row.targets || value === undefined) continue;
    const verdicts = row.targets
      .map((target) => verdictOf(target, row, value, byName))
      .filter((verdict) => verdict !== undefined);
    if (verdicts.length > 0) {
      row.verdict = `${row.informational ? 'for information: ' : ''}${verdicts.join('; ')}`;
      row.judged = !row.informational;
    }
  }
  for (const row of rows)
    if (row.verdict === undefined && row.requestsPerSecond !== undefined && row.p50 !== undefined)
      row.verdict = `${(row.requestsPerSecond / hello).toFixed(2)} × hello-world`;
  noteFloorShares(rows, databaseLabel);
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

/** The targets in a few lines: how many are met, and each missed one with its ratio. */
function summary(rows: Row[]): string {
  const judged = rows.filter((row) => row.judged);
  const missed = judged.filter((row) => row.verdict!.includes('MISSED'));
  const lines = [`Targets: ${judged.length - missed.length} of ${judged.length} rows meet every target.`];
  for (const row of missed) lines.push(`- MISSED: ${row.name}: ${row.verdict}`);
  const unjudged = rows.filter((row) => row.targets && !row.judged && !row.informational);
  for (const row of unjudged) lines.push(`- not judged (a row it is measured against did not run): ${row.name}`);
  return lines.join('\n');
}

const started = new Date();
const before = await helloWorld();
process.stderr.write(`hello-world: ${before.requestsPerSecond} req/s\n`);
const rows: Row[] = [];
if (!values['skip-standard']) {
  try {
    rows.push(await floor());
    if (!values['skip-peer']) for (const { storage } of peersOf(databaseLabel)) rows.push(...(await peer(storage)));
    rows.push(...(await runStandard()));
  } finally {
    await stopReferences();
  }
}
if (values.large) rows.push(...(await largeListCases({ seconds, wanted })));
// The event log download is judged by the server's peak RSS, not by latency: a table of its own.
const downloads = values.large ? await eventDownloadCases(wanted) : [];
const after = await helloWorld();
const hello = Math.round((before.requestsPerSecond + after.requestsPerSecond) / 2);
judge(rows, hello);

const machine = `${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}, server ${[...Object.entries(START.env).map(([key, value]) => `${key}=${value}`), ...START.flags, SERVER].join(' ')}`;
const report = `Run ${started.toISOString()} on ${machine}; ${databaseLabel}; ${seconds} s per case; hello-world ${before.requestsPerSecond} req/s before and ${after.requestsPerSecond} after.\n\n${table(rows, hello)}\n\n${downloads.length > 0 ? `${eventDownloadTable(downloads)}\n\n` : ''}${summary(rows)}\n`;
process.stdout.write(`\n${report}`);
mkdirSync('bench/results', { recursive: true });
const resultsFile = `bench/results/${started.toISOString().replace(/[:.]/g, '-')}-${databaseLabel}.md`;
writeFileSync(resultsFile, report);
process.stderr.write(`written to ${resultsFile} (Markdown; the runs of record are in docs/benchmarks.md)\n`);
if (rows.some((row) => (row.failed ?? 0) > 0)) {
  process.stderr.write('some requests failed: the figures of those cases are not valid\n');
  process.exitCode = 1;
}
