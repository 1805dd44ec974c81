// npx tsx bench/rest-cpu.ts <name>=<server.js> [<name>='<server.js> <node flag>…' …] [--case page|post|mixed] [--connections n] [--rounds 4] [--seconds 3] [--fill n] [--database postgres://…/empty] [--profile]
//
// The REST engine's bulk cases, per build: the server's CPU milliseconds per request (utime + stime
// from /proc, as bench/compare-builds.ts reads them) for `GET /v4/projects?pageSize=250` (page, 10
// connections) or `POST /v4/projects` of 250 new objects with client ids (post, 2 connections, as the
// bench's mixed case posts). The builds run at once on one database and are measured in turn, the
// order turning each round, so the figures of a round share the machine's state. With --database
// the CPU of each server's PostgreSQL backends is added (and shown apart).
//
// --profile starts each server with `--cpu-prof` (100 µs samples) and, at the end, reads from each
// profile the synchronous stretches: runs of consecutive samples that are not idle, i.e. how long
// the event loop was held at a time, which is what delays a read waiting beside a bulk POST.
//
// mixed: the bench's mixed case (bench/cases.ts, mixedLoads: the five single-object GETs in turn on
// 8 connections, alone and beside 2 connections posting 250 new projects), on data made as the bench
// makes it. --fill n first posts n more projects to each build's table (the bench's table holds
// some 170,000 when its mixed case runs, after the 10-s bulk POST case).

import { randomBytes, randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { FakeWorkshop } from '../test/helpers/workshop.ts';
import { mixedLoads } from './cases.ts';
import { BENCH_HOST, type LegacyData, legacyData, mintSecrets, projects } from './fixtures.ts';
import { type Load, measure } from './measure.ts';
import { backendCpu, backendMsSince } from './pg-backends.ts';
import { productionStart, type Running, startProcess } from './processes.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    case: { type: 'string', default: 'page' },
    rounds: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '3' },
    database: { type: 'string' },
    profile: { type: 'boolean', default: false },
    connections: { type: 'string' },
    fill: { type: 'string', default: '0' },
  },
});
const builds = positionals.map((arg) => {
  const name = arg.slice(0, Math.max(0, arg.indexOf('=')));
  const [entry, ...extraFlags] = arg
    .slice(arg.indexOf('=') + 1)
    .split(' ')
    .filter(Boolean);
  if (!name || !entry) throw new Error(`expected <name>=<server.js>, got ${arg}`);
  return { name, entry, extraFlags };
});

/** The ms a thread has waited for a core while runnable so far (schedstat's second field). */
function runQueueMs(pid: number, tid = pid): number {
  return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
}

/** CPU milliseconds per thread of the process so far, by thread name and id. */
function threadCpuMs(pid: number): Map<string, number> {
  const threads = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      threads.set(`${name}#${tid}`, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // the thread ended meanwhile
    }
  }
  return threads;
}

function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Profile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The measured windows, in µs of the monotonic clock V8's profiles use too (CLOCK_MONOTONIC on Linux). */
const windows: Array<[number, number]> = [];
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** Runs of consecutive non-idle samples, in ms, and the busy share by function (self time). */
function stretches(profile: Profile): {
  runs: number[];
  busyMs: number;
  top: Array<[string, number]>;
  inclusive: Array<[string, number]>;
} {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes as Array<{ id: number; children?: number[] }>)
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  const runs: number[] = [];
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let current = 0;
  let busy = 0;
  let time = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i]!;
    const node = byId.get(profile.samples[i]!)!;
    const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const name = node.callFrame.functionName;
    const measured = windows.some(([from, to]) => time >= from && time <= to);
    if (name === '(idle)' || !measured) {
      if (current > 0) runs.push(current);
      current = 0;
      continue;
    }
    current += dt;
    busy += dt;
    const keyOf = (frame: Profile['nodes'][number]['callFrame']) =>
      `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-2).join('/')}:${frame.lineNumber}`;
    const key = keyOf(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + dt);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
      const frameKey = keyOf(byId.get(id)!.callFrame);
      if (seen.has(frameKey)) continue;
      seen.add(frameKey);
      total.set(frameKey, (total.get(frameKey) ?? 0) + dt);
    }
  }
  if (current > 0) runs.push(current);
  const top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40);
  const inclusive = [...total.entries()].sort((a, b) => b[1] - a[1]).slice(0, 60);
  return { runs, busyMs: busy, top, inclusive };
}

const dir = mkdtempSync(join(tmpdir(), 'rest-cpu-'));
const databaseUrl = values.database ?? `sqlite:${join(dir, 'bench.db')}`;
const servers: Running[] = [];
const profileDirs: string[] = [];
const counts: number[] = builds.map(() => 0);
const workshop = await new FakeWorkshop().start();
let admin: pg.Client | undefined;
try {
  const secrets = await mintSecrets(databaseUrl, 1);
  if (values.database) await (admin = new pg.Client({ connectionString: values.database })).connect();
  const start = productionStart();
  const env = {
    ...start.env,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    DATABASE_URL: databaseUrl,
    BASE_URL: `https://${BENCH_HOST}`,
    RATE_LIMIT_V1: '1000000000',
    RATE_LIMIT_V4: '1000000000',
    LOG_LEVEL: 'info',
    WORKSHOP_URL: workshop.template,
  };
  for (const [index, build] of builds.entries()) {
    const profileDir = join(dir, `profile-${index}`);
    profileDirs.push(profileDir);
    const flags = values.profile
      ? [...start.flags, '--cpu-prof', '--cpu-prof-interval', '100', '--cpu-prof-dir', profileDir]
      : start.flags;
    // On SQLite each build writes a copy of its own: two processes writing one file would wait on each other.
    let own = env;
    if (!values.database) {
      copyFileSync(join(dir, 'bench.db'), join(dir, `bench-${index}.db`));
      own = { ...env, DATABASE_URL: `sqlite:${join(dir, `bench-${index}.db`)}` };
    }
    // On PostgreSQL each server's connections carry an application_name of their own, so its backends' CPU counts too.
    servers.push(
      await startProcess(build.entry, { ...own, PGAPPNAME: `rest-cpu-${process.pid}-${index}` }, '/healthz', [
        ...flags,
        ...build.extraFlags,
      ]),
    );
  }
  const projectIds: string[] = [];
  for (const server of servers)
    projectIds.push(
      values.database && projectIds.length > 0 ? projectIds[0]! : await projects(server.url, secrets.accessToken, 300),
    );
  const headers = { authorization: `Bearer ${secrets.accessToken}` };
  const body = (count = 250) =>
    JSON.stringify(
      Array.from({ length: count }, (_, n) => ({ projectId: randomUUID(), title: `Bulk ${n}`, description: 'bench' })),
    );
  // The bench's table: its own projects posted in the largest arrays a POST takes.
  for (const server of values.database ? servers.slice(0, 1) : servers) {
    for (let made = 0; made < Number(values.fill); made += 1000) {
      const response = await fetch(`${server.url}/v4/projects`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: body(Math.min(1000, Number(values.fill) - made)),
      });
      if (!response.ok) throw new Error(`filling: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
    }
  }
  const load: Load =
    values.case === 'post'
      ? {
          method: 'POST',
          path: '/v4/projects',
          headers: { ...headers, 'content-type': 'application/json' },
          next: () => ({ body: body() }),
        }
      : { path: '/v4/projects?pageSize=250', headers };
  const connections = Number(values.connections ?? (values.case === 'post' ? 2 : 10));
  const options = { seconds: Number(values.seconds), connections };
  if (values.case === 'mixed') {
    const legacy: LegacyData[] = [];
    for (const server of values.database ? servers.slice(0, 1) : servers)
      legacy.push(await legacyData(server.url, workshop, 10_000));
    const loads = servers.map((_, index) =>
      mixedLoads(legacy[values.database ? 0 : index]!, secrets.accessToken, projectIds[index]!),
    );
    const reads = (index: number): Load => loads[index]!.reads;
    const writes = loads[0]!.writes;
    const seconds = Number(values.seconds);
    for (const [index, server] of servers.entries())
      await measure(server.url, reads(index), { seconds: 1, connections: 8 });
    for (let round = 1; round <= Number(values.rounds); round++) {
      for (const index of builds.map((_, index) => (index + round) % builds.length)) {
        const server = servers[index]!;
        const alone = await measure(server.url, reads(index), { seconds, connections: 8 });
        const before = cpuMs(server.pid);
        const threadsBefore = threadCpuMs(server.pid);
        const waitedBefore = runQueueMs(server.pid);
        const from = nowUs();
        const [under, writing] = await Promise.all([
          measure(server.url, reads(index), { seconds, connections: 8 }),
          measure(server.url, writes, { seconds, connections: 2 }),
        ]);
        const cpu = cpuMs(server.pid) - before;
        const waited = runQueueMs(server.pid) - waitedBefore;
        windows.push([from, nowUs()]);
        counts[index]! += writing.requests;
        const perThread = [...threadCpuMs(server.pid)]
          .map(([thread, ms]) => [thread, ms - (threadsBefore.get(thread) ?? 0)] as const)
          .filter(([, ms]) => ms > 0);
        console.log(`  request thread waited for a core ${Math.round(waited)} ms over ${seconds} s beside POSTs`);
        console.log(
          `  per POST by thread: ${perThread
            .sort((a, b) => b[1] - a[1])
            .map(([thread, ms]) => `${thread} ${(ms / Math.max(1, writing.requests)).toFixed(1)}`)
            .join(', ')} ms`,
        );
        console.log(
          `round ${round} ${builds[index]!.name}: alone p50 ${alone.p50} p99 ${alone.p99}; beside POSTs p50 ${under.p50} p99 ${under.p99} (${(under.p99 / alone.p99).toFixed(1)} ×); POSTs ${writing.requests} (${writing.failed} failed), server CPU ${(cpu / (writing.requests * 1 + under.requests * 0.05)).toFixed(1)} ms per POST-equivalent`,
        );
      }
    }
  }
  if (values.case !== 'mixed')
    for (const server of servers) await measure(server.url, load, { ...options, seconds: 1 }); // warm-up
  const perRequest: number[][] = builds.map(() => []);
  for (let round = 1; round <= (values.case === 'mixed' ? 0 : Number(values.rounds)); round++) {
    const order = builds.map((_, index) => (index + round) % builds.length);
    const line: string[] = [];
    for (const index of order) {
      const server = servers[index]!;
      const appName = `rest-cpu-${process.pid}-${index}`;
      const backendsBefore = await backendCpu(admin, appName);
      const before = cpuMs(server.pid);
      const from = nowUs();
      const measured = await measure(server.url, load, options);
      windows.push([from, nowUs()]);
      const serverMs = cpuMs(server.pid) - before;
      const backendMs = backendMsSince(backendsBefore, await backendCpu(admin, appName));
      if (measured.failed > 0) throw new Error(`${builds[index]!.name}: ${measured.failed} failed requests`);
      counts[index]! += measured.requests;
      perRequest[index]!.push((serverMs + backendMs) / measured.requests);
      const pgPart = admin
        ? ` (server ${(serverMs / measured.requests).toFixed(2)} + PostgreSQL ${(backendMs / measured.requests).toFixed(2)})`
        : '';
      line[index] =
        `${builds[index]!.name} ${measured.requestsPerSecond} req/s ${perRequest[index]!.at(-1)!.toFixed(2)} CPU ms${pgPart}`;
    }
    console.log(`round ${round}: ${line.join('; ')}`);
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  if (values.case !== 'mixed')
    for (const [index, build] of builds.entries())
      console.log(
        `${build.name}: CPU ms per request, median ${median(perRequest[index]!).toFixed(2)} (${perRequest[index]!.map((v) => v.toFixed(2)).join(' ')})`,
      );
} finally {
  for (const [index, server] of servers.entries())
    console.log(`${builds[index]!.name}: peak RSS ${server.memory().peakMiB} MiB`);
  for (const server of servers) await server.stop();
  await workshop.stop();
  await admin?.end();
  if (values.profile) {
    for (const [index, build] of builds.entries()) {
      const files = readdirSync(profileDirs[index]!).filter((file) => file.endsWith('.cpuprofile'));
      for (const file of files) {
        const { runs, busyMs, top, inclusive } = stretches(
          JSON.parse(readFileSync(join(profileDirs[index]!, file), 'utf8')) as Profile,
        );
        // A worker thread's profile (the checkpointer's, an idle batch writer's) may hold no busy sample in the windows.
        if (runs.length === 0) continue;
        runs.sort((a, b) => a - b);
        const at = (q: number) => runs[Math.min(runs.length - 1, Math.floor(q * runs.length))]!.toFixed(2);
        console.log(
          `\n${build.name}: busy ${busyMs.toFixed(0)} ms over the profile; synchronous stretches ≥ 1 ms: ${runs.filter((r) => r >= 1).length}; p50 ${at(0.5)} p90 ${at(0.9)} p99 ${at(0.99)} max ${at(1)} ms; busy per request ~${(busyMs / Math.max(1, counts[index]!)).toFixed(2)} ms`,
        );
        console.log('  self:');
        for (const [name, ms] of top) console.log(`  ${((100 * ms) / busyMs).toFixed(1).padStart(5)} %  ${name}`);
        console.log('  inclusive:');
        for (const [name, ms] of inclusive) console.log(`  ${((100 * ms) / busyMs).toFixed(1).padStart(5)} %  ${name}`);
      }
    }
  }
  rmSync(dir, { recursive: true, force: true });
}
