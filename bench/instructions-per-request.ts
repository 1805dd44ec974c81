// npx tsx bench/instructions-per-request.ts [--cases v4user,v4project,user,engram,download] [--requests 2000] [--warm-up 30000]
//   [--history] [<label>=<entry.js>[:<node flag>,<node flag>…] …]   (default: service=dist/server.js)
//
// Instructions per request, counted by valgrind's callgrind, of the main thread of the reference
// (floor-server.ts; with the bearer lookup for the v4 cases) and of each build named, on one SQLite
// database. On a shared machine req/s and CPU time move by a third between rounds; an instruction
// count moves by a few per cent, so a change of 2 % to a request's work shows in one run. What it
// leaves out: the kernel (the socket's send and receive, the same for every server here), V8's
// background threads (concurrent compilation and marking, which under valgrind go on longer than
// in a real run), and how fast the instructions run (cache misses, allocation).
//
// Each server runs under callgrind with instrumentation off; after --warm-up requests (so that the
// hot code is compiled) it is switched on (callgrind_control -i on) for --requests requests on 4
// keep-alive connections, then off. Only thread 1 (the main thread) is counted; the other threads'
// counts are printed too. Started with --perf-basic-prof, a process writes /tmp/perf-<pid>.map, by
// which the JIT code in its callgrind file (/tmp/ipr-*/) can be named (a scratch step, not here).
//
// --history N: each measured service process first makes data itself, as the service of
// `npm run bench` does before its GETs (there 10,000 engrams by signed POSTs and 300 projects;
// here N engrams, under valgrind, and 300 projects), so that its code has served other requests
// (see docs/benchmarks.md). Without it the measured processes serve only the GETs, like the reference.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FakeWorkshop } from '../test/helpers/workshop.ts';
import { BENCH_HOST, legacyData, mintSecrets, projects } from './fixtures.ts';
import { freePort, startProcess } from './processes.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    cases: { type: 'string', default: 'v4user' },
    requests: { type: 'string', default: '2000' },
    'warm-up': { type: 'string', default: '30000' },
    history: { type: 'string' },
  },
});
const requests = Number(values.requests);
const warmUp = Number(values['warm-up']);
const builds = (positionals.length > 0 ? positionals : ['service=dist/server.js']).map((spec) => {
  // At the first '=' only: a node flag may carry one too (--max-semi-space-size=4).
  const label = spec.slice(0, spec.indexOf('='));
  const rest = spec.slice(spec.indexOf('=') + 1);
  const [entry, flags] = rest.split(':') as [string, string | undefined];
  return { label, entry, flags: flags ? flags.split(',') : [] };
});

const dir = mkdtempSync(join(tmpdir(), 'ipr-'));
const databaseUrl = `sqlite:${join(dir, 'bench.db')}`;
const workshop = await new FakeWorkshop().start();
const serviceEnv = {
  DATABASE_URL: databaseUrl,
  BASE_URL: `https://${BENCH_HOST}`,
  WORKSHOP_URL: workshop.template,
  RATE_LIMIT_V1: '1000000000',
  RATE_LIMIT_V4: '1000000000',
  LOG_LEVEL: 'info',
};
// callgrind_control finds a process by files named after the user and host (HOST is also the servers' listen address).
const valgrindEnv = { USER: process.env.USER || 'root', LOGNAME: process.env.LOGNAME || 'root', HOST: '127.0.0.1' };
const FLOOR_PATH = '/v1/user.php/00000000-0000-4000-8000-000000000000';
/** Each history's mod is a mod of its own (legacyData). */
let historyCount = 0;

try {
  const secrets = await mintSecrets(databaseUrl, 10);
  const bearer = { authorization: `Bearer ${secrets.accessToken}` };
  const maker = await startProcess('dist/server.js', serviceEnv, '/healthz');
  let projectId: string;
  let userId: string;
  let legacy: Awaited<ReturnType<typeof legacyData>>;
  try {
    legacy = await legacyData(maker.url, workshop, 100, '900000099');
    projectId = await projects(maker.url, secrets.accessToken, 20);
    userId = ((await (await fetch(`${maker.url}/v4/user`, { headers: bearer })).json()) as { userId: string }).userId;
  } finally {
    await maker.stop();
  }
  const cases: Record<string, { path: string; v4: boolean }> = {
    v4user: { path: '/v4/user', v4: true },
    v4project: { path: `/v4/projects/${projectId}`, v4: true },
    user: { path: `/v1/user.php/${userId}`, v4: false },
    engram: { path: `/v1/engram.php/${legacy.engramUid}`, v4: false },
    download: { path: `/v1/document.php/${legacy.documentId}`, v4: false },
  };
  for (const name of values.cases.split(',')) {
    const item = cases[name];
    if (!item) throw new Error(`unknown case ${name}: ${Object.keys(cases).join(', ')}`);
    const headers = item.v4 ? bearer : undefined;
    const referenceEnv: Record<string, string> = item.v4 ? { FLOOR_BEARER_DATABASE: databaseUrl } : {};
    const reference = await counted(
      `reference-${name}`,
      './bench/floor-server.ts',
      [],
      referenceEnv,
      FLOOR_PATH,
      FLOOR_PATH,
      headers,
    );
    const parts = [`${item.v4 ? 'reference + bearer' : 'reference'} ${reference}`];
    for (const build of builds) {
      const history =
        values.history === undefined
          ? undefined
          : async (url: string) => {
              await legacyData(url, workshop, Number(values.history), String(900_000_100 + historyCount++));
              await projects(url, secrets.accessToken, 300);
            };
      const count = await counted(
        `${build.label}-${name}`,
        build.entry,
        build.flags,
        serviceEnv,
        '/healthz',
        item.path,
        headers,
        history,
      );
      parts.push(`${build.label} ${count} (reference ${(reference / count).toFixed(3)} × it)`);
    }
    console.log(`${name}: main-thread instructions per request: ${parts.join(' | ')}`);
  }
} finally {
  await workshop.stop();
  if (!process.env.IPR_KEEP) rmSync(dir, { recursive: true, force: true });
}

/** `count` GETs of `path` on 4 keep-alive connections, each answered 200. */
async function send(
  url: string,
  path: string,
  headers: Record<string, string> | undefined,
  count: number,
): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const { hostname, port } = new URL(url);
  let left = count;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const sent = request({ host: hostname, port, path, headers, agent }, (answer) => {
        answer.resume();
        answer.on('end', () =>
          answer.statusCode === 200 ? resolve() : reject(new Error(`${path}: status ${answer.statusCode}`)),
        );
      });
      sent.on('error', reject);
      sent.end();
    });
  try {
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (left-- > 0) await one();
      }),
    );
  } finally {
    agent.destroy();
  }
}

/** The main thread's instructions per request of `entry` under callgrind, serving GET `path`. */
async function counted(
  label: string,
  entry: string,
  flags: string[],
  env: Record<string, string>,
  probe: string,
  path: string,
  headers?: Record<string, string>,
  history?: (url: string) => Promise<void>,
): Promise<number> {
  const port = await freePort();
  const out = join(dir, `callgrind.${label}`);
  const loader = entry.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const args = [
    '--tool=callgrind',
    '--instr-atstart=no',
    '--separate-threads=yes',
    `--callgrind-out-file=${out}`,
    process.execPath,
    ...flags,
    ...loader,
    entry,
  ];
  const child = spawn('valgrind', args, {
    env: { ...process.env, ...env, ...valgrindEnv, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (chunk) => (errors = (errors + chunk).slice(-4000)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const control = (...command: string[]) =>
    execFileSync('callgrind_control', [...command, String(child.pid)], {
      env: { ...process.env, ...valgrindEnv },
      stdio: 'ignore',
    });
  try {
    const url = `http://127.0.0.1:${port}`;
    for (let attempt = 0; ; attempt++) {
      try {
        await (await fetch(url + probe, { headers })).arrayBuffer();
        break;
      } catch {
        if (child.exitCode !== null || attempt > 600)
          throw new Error(`${label} did not start under valgrind:\n${errors}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    await history?.(url);
    await send(url, path, headers, warmUp);
    control('-i', 'on');
    await send(url, path, headers, requests);
    control('-i', 'off');
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  const threads: string[] = [];
  let main = 0;
  for (const file of readdirSync(dir)
    .filter((name) => name.startsWith(`callgrind.${label}-`))
    .sort()) {
    const total = Number(/^totals:\s*(\d+)/m.exec(readFileSync(join(dir, file), 'utf8'))?.[1] ?? 0);
    const thread = file.slice(file.lastIndexOf('-') + 1);
    threads.push(`${thread}: ${Math.round(total / requests)}`);
    if (thread === '01') main = total;
  }
  console.error(`${label}, instructions per request by thread: ${threads.join(', ')}`);
  return Math.round(main / requests);
}
