import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export interface Running {
  url: string;
  pid: number;
  /** Milliseconds from spawning the process to its first answer on the probe path. */
  startMs: number;
  /** Resident memory now and at its peak, in MiB (Linux /proc). */
  memory(): { rssMiB: number; peakMiB: number };
  stop(): Promise<void>;
}

/** CPU milliseconds the process has used so far (user and system; /proc counts in 10 ms ticks). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function memoryOf(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rssMiB: Math.round(kib('VmRSS') / 1024), peakMiB: Math.round(kib('VmHWM') / 1024) };
}

async function waitUntilServing(
  url: string,
  child: ChildProcess,
  stderr: () => string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url} exited with ${child.exitCode}: ${stderr()}`);
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${url} did not start within ${timeoutMs / 1000} s: ${stderr()}`);
}

/**
 * How `npm start` runs the server: the environment variables set before `node` and the flags
 * between `node` and the entry point in package.json's start script, so the bench measures the
 * service as production starts it.
 */
export function productionStart(): { env: Record<string, string>; flags: string[] } {
  const script = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
  const words = script.split(/\s+/).filter(Boolean);
  const node = words.indexOf('node');
  const env = Object.fromEntries(
    words.slice(0, node).map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
  );
  const flags = words.slice(node + 1).filter((word) => word.startsWith('-'));
  return { env, flags };
}

/**
 * The server the bench measures: the production bundle (dist/server.js, when built) started as
 * `npm start` starts it, else the sources under tsx; BENCH_SERVER_ENTRY names another entry point.
 */
export function serverUnderTest(): { entry: string; env: Record<string, string>; flags: string[] } {
  const entry = process.env.BENCH_SERVER_ENTRY ?? (existsSync('dist/server.js') ? 'dist/server.js' : 'src/server.ts');
  return { entry, ...(entry.endsWith('.js') ? productionStart() : { env: {}, flags: [] }) };
}

/**
 * Starts an entry point as its own process and waits until it answers on `probePath`: compiled
 * JavaScript (`.js`) with plain node, as production runs it, TypeScript under tsx's loader.
 * `startTimeoutMs` is for processes that prepare data before they listen (the peers mint theirs).
 */
export async function startProcess(
  entry: string,
  env: Record<string, string>,
  probePath = '/',
  flags: string[] = [],
  startTimeoutMs = 30_000,
): Promise<Running> {
  const port = await freePort();
  // tsx runs the process as a child of its own; spawning node with tsx's loader keeps one process to measure.
  // BENCH_NODE_ARGS passes flags to the measured processes, e.g. --cpu-prof to see where time goes,
  // and BENCH_STDOUT names a file for their standard output (what --trace-opt and the like print).
  const nodeArgs = [...flags, ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
  const loader = entry.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const stdout = process.env.BENCH_STDOUT ? openSync(process.env.BENCH_STDOUT, 'w') : undefined;
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, ...loader, entry], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', stdout ?? 'ignore', 'pipe'],
  });
  if (stdout !== undefined) closeSync(stdout);
  let errors = '';
  child.stderr!.on('data', (chunk) => (errors = (errors + chunk).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntilServing(url + probePath, child, () => errors, startTimeoutMs);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const startMs = Math.round(performance.now() - spawnedAt);
  return {
    url,
    pid: child.pid!,
    startMs,
    memory: () => memoryOf(child.pid!),
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
