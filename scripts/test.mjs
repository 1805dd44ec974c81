// `npm test [-- files or folders… --test-name-pattern=…]`: runs the test files with node:test in a
// few long-lived worker processes (TEST_WORKERS, default one more than the cores) instead of one
// process per file.
//
// Why (docs/decisions/0045): loading the service's modules
// through tsx costs each process about 4 s of CPU, more than many files' tests take, and with one
// process per file the suite paid it 83 times per database. A worker loads them once and runs the
// files it is handed one after another, each as its own top-level suite, so a file's top-level
// hooks stay its own. Files are handed out from one queue, the slowest kinds first, so the workers
// finish together. A file that changes what the whole process shares (the purge test moves the
// clock 40 days ahead, and the UUIDv7 generator never goes back) says `npm test: own process` in
// its opening comment and gets a fresh worker to itself.
import { fork } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// One more worker than cores: the browser and process tests spend part of their time waiting.
const workerCount = Math.max(1, Number(process.env.TEST_WORKERS) || availableParallelism() + 1);

/** Every *.test.ts under a folder, or the file itself. */
function testFiles(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const child = join(path, entry.name);
      if (entry.isDirectory()) return testFiles(child);
      return entry.name.endsWith('.test.ts') ? [child] : [];
    });
}

// Files that drive a browser or start processes take the longest; handing them out first keeps
// one worker from starting a long file when the other has nothing left.
const SLOW_FIRST = ['test/browser/', 'test/cli/', 'test/client/', 'test/operations/', 'test/fuzz/', 'test/races/'];
const rank = (file) => {
  const index = SLOW_FIRST.findIndex((prefix) => file.startsWith(prefix));
  return index === -1 ? SLOW_FIRST.length : index;
};
// Options (`--test-name-pattern=…`, `--test-only`) go to node:test in every worker; the rest name files or folders.
const nodeOptions = process.argv.slice(2).filter((arg) => arg.startsWith('--'));
const paths = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const queue = [...new Set((paths.length ? paths : ['test']).flatMap((path) => testFiles(path)))]
  .map((file) => relative(root, join(process.cwd(), file)))
  .sort((a, b) => rank(a) - rank(b))
  .map((file) => ({
    file,
    ownProcess: readFileSync(join(root, file), 'utf8').slice(0, 4096).includes('npm test: own process'),
  }));

const totals = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
let failed = false;

/** One worker's life: files from the queue until it is empty, or until a file needs a process of its own. */
function runWorker() {
  return new Promise((resolve) => {
    const worker = fork(join(root, 'scripts/test-worker.mjs'), [], {
      cwd: root,
      // Under a `node --test` of its own (the runner's own test run alone), NODE_TEST_CONTEXT would
      // turn the workers' report into node:test's internal stream instead of the spec lines read here.
      env: { ...process.env, NODE_TEST_CONTEXT: undefined },
      execArgv: ['--import', 'tsx', '--test-reporter=spec', '--test-reporter-destination=stdout', ...nodeOptions],
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    // A file's report is written out whole, once its top-level line (`✔ test/…`, unindented) or
    // anything after the files (the worker's totals, its failures) comes, so that two workers'
    // reports do not interleave.
    let pending = '';
    let lines = '';
    worker.stdout.setEncoding('utf8').on('data', (chunk) => {
      const text = pending + chunk;
      const end = text.lastIndexOf('\n') + 1;
      pending = text.slice(end);
      for (const line of text.slice(0, end).split('\n').slice(0, -1)) {
        lines += `${line}\n`;
        if (!/^[\s▶]/.test(line)) {
          process.stdout.write(lines);
          lines = '';
        }
        const total = /^ℹ (tests|pass|fail|cancelled|skipped|todo) (\d+)$/.exec(line);
        if (total) totals[total[1]] += Number(total[2]);
      }
    });
    let lastOne = false;
    const files = [];
    let lingering;
    // A worker exits once its last file is done, unless something those files started is still
    // open (a server, a timer, a child): that fails the run rather than hanging it.
    const finish = () => {
      worker.disconnect();
      lingering = setTimeout(() => {
        process.stderr.write(
          `test worker ${worker.pid} did not exit after its last file: something one of these left open keeps it: ${files.join(', ')}\n`,
        );
        worker.kill('SIGKILL');
      }, Number(process.env.TEST_WORKER_EXIT_MS) || 30_000);
    };
    const next = () => {
      const item = queue[0];
      if (!item || lastOne || (item.ownProcess && files.length > 0)) return finish();
      queue.shift();
      lastOne = item.ownProcess;
      files.push(item.file);
      worker.send({ file: item.file });
    };
    worker.on('message', next);
    worker.on('exit', (code, signal) => {
      clearTimeout(lingering);
      if (lines || pending) process.stdout.write(lines + (pending ? `${pending}\n` : ''));
      if (code !== 0) {
        failed = true;
        process.stderr.write(`test worker ${worker.pid} exited with ${signal ?? code}\n`);
      }
      resolve();
    });
  });
}

const started = Date.now();
const slot = async () => {
  while (queue.length) await runWorker();
};
await Promise.all(Array.from({ length: Math.min(workerCount, queue.length) }, slot));
const summary = Object.entries(totals)
  .map(([key, value]) => `${key} ${value}`)
  .join(', ');
process.stdout.write(`\nall workers: ${summary}; ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
if (failed || totals.fail || totals.cancelled) process.exitCode = 1;
