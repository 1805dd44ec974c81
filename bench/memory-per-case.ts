// npx tsx bench/memory-per-case.ts [--seconds 2] [--rounds 2] [label='<node flags>' …]
//
// Where the server's RSS goes over the standard bench sequence (SQLite), for server variants that
// differ in node flags, environment variables or build (e.g. base='' capped='--max-old-space-size=512'
// arenas='MALLOC_ARENA_MAX=2' main='../main-build/dist/server.js'; a word ending in .js names the
// server's bundle, dist/server.js unless given), run in turn each round on a
// fresh database. Per step (making the data, each case, the first build of the engram list): RSS
// after it, the run's peak so far (VmHWM), how far RSS rose above where the step started (VmHWM is
// reset before each step through /proc/<pid>/clear_refs), and server CPU µs per request. The flags
// come after those of package.json's start script, as `npm run bench` runs the server, and the
// variables over its environment. Linux only.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FakeWorkshop } from '../test/helpers/workshop.ts';
import { type Case, engramListLoads, mixedLoads, standardCases } from './cases.ts';
import { BENCH_HOST, legacyData, mintSecrets, projects } from './fixtures.ts';
import { measure } from './measure.ts';
import { cpuMs, productionStart, startProcess } from './processes.ts';

const { values, positionals } = parseArgs({
  options: { seconds: { type: 'string', default: '2' }, rounds: { type: 'string', default: '2' } },
  allowPositionals: true,
});
const seconds = Number(values.seconds);
const variants = (positionals.length ? positionals : ['service=']).map((arg) => {
  const words = arg
    .slice(arg.indexOf('=') + 1)
    .split(' ')
    .filter(Boolean);
  const isEnv = (word: string) => /^[A-Z_][A-Z0-9_]*=/.test(word);
  const isEntry = (word: string) => word.endsWith('.js');
  return {
    entry: words.find(isEntry) ?? 'dist/server.js',
    label: arg.slice(0, arg.indexOf('=')),
    env: Object.fromEntries(
      words.filter(isEnv).map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
    ),
    flags: words.filter((word) => !isEnv(word) && !isEntry(word)),
  };
});

function memory(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (name: string) => Math.round(Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1]) / 1024);
  return { rss: mib('VmRSS'), hwm: mib('VmHWM') };
}

interface Step {
  cpuUs?: number;
  rss: number;
  peak: number;
  rise: number;
}
const start = productionStart();
const results = new Map<string, Map<string, Step[]>>();
for (let round = 0; round < Number(values.rounds); round++) {
  for (const variant of variants) {
    const dir = mkdtempSync(join(tmpdir(), 'bench-memory-'));
    const databaseUrl = `sqlite:${join(dir, 'bench.db')}`;
    const workshop = await new FakeWorkshop().start();
    const secrets = await mintSecrets(databaseUrl, Math.max(5000, seconds * 4000));
    const env = {
      ...start.env,
      DATABASE_URL: databaseUrl,
      BASE_URL: `https://${BENCH_HOST}`,
      WORKSHOP_URL: workshop.template,
      RATE_LIMIT_V1: '1000000000',
      RATE_LIMIT_V4: '1000000000',
      LOG_LEVEL: 'info',
      ...variant.env,
    };
    const server = await startProcess(variant.entry, env, '/healthz', [...start.flags, ...variant.flags]);
    const steps = results.get(variant.label) ?? new Map<string, Step[]>();
    results.set(variant.label, steps);
    let stepStart = 0;
    let peak = 0;
    const note = (name: string, work?: { requests: number; cpuMs: number }) => {
      const now = memory(server.pid);
      peak = Math.max(peak, now.hwm);
      const step: Step = {
        rss: now.rss,
        peak,
        rise: now.hwm - stepStart,
        cpuUs: work && Math.round((work.cpuMs * 1000) / Math.max(1, work.requests)),
      };
      steps.set(name, [...(steps.get(name) ?? []), step]);
      writeFileSync(`/proc/${server.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
      stepStart = memory(server.pid).rss;
    };
    const run = async (item: Case) => {
      if (!item.load.next) await measure(server.url, item.load, { seconds: 1, connections: 10 });
      const before = cpuMs(server.pid);
      const figures = await measure(server.url, item.load, { seconds, connections: 10 });
      note(item.name, { requests: figures.requests, cpuMs: cpuMs(server.pid) - before });
    };
    try {
      note('start');
      const legacy = await legacyData(server.url, workshop, 10_000);
      note('making the v1 data (two POSTs of 5,000 engrams)');
      const projectId = await projects(server.url, secrets.accessToken, 300);
      note('making 300 projects');
      for (const item of standardCases(legacy, secrets, projectId, 'SQLite')) await run(item);
      const first = await fetch(`${server.url}/v1/engram.php`);
      await first.arrayBuffer();
      note('first build of the 10,000-engram list');
      for (const item of engramListLoads(first.headers.get('etag') ?? undefined, 'SQLite')) await run(item);
      const { reads, writes } = mixedLoads(legacy, secrets.accessToken, projectId);
      const before = cpuMs(server.pid);
      const [read, written] = await Promise.all([
        measure(server.url, reads, { seconds, connections: 8 }),
        measure(server.url, writes, { seconds, connections: 2 }),
      ]);
      note('mixed: GETs while 2 connections POST', {
        requests: read.requests + written.requests,
        cpuMs: cpuMs(server.pid) - before,
      });
    } finally {
      await server.stop();
      await workshop.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    process.stderr.write(`${variant.label}, round ${round + 1}: peak ${peak} MiB\n`);
  }
}

const labels = [...results.keys()];
console.log(
  `| step | ${labels.map((label) => `${label}: RSS after / peak so far / rise MiB, CPU µs per request`).join(' | ')} |`,
);
console.log(`|---|${labels.map(() => '---|').join('')}`);
for (const name of results.get(labels[0]!)!.keys()) {
  const cells = labels.map((label) => {
    const steps = results.get(label)!.get(name) ?? [];
    const join = (pick: (step: Step) => number | undefined) => steps.map(pick).join('/');
    return `${join((s) => s.rss)} / ${join((s) => s.peak)} / ${join((s) => s.rise)}${steps[0]?.cpuUs === undefined ? '' : `, ${join((s) => s.cpuUs)} µs`}`;
  });
  console.log(`| ${name} | ${cells.join(' | ')} |`);
}
