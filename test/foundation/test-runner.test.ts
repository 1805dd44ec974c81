/**
 * `npm test` itself (scripts/test.mjs): files share a worker and keep their own hooks, a file that
 * asks for its own process gets one, failures fail the run with every count added up, and a file
 * that leaves something open fails the run instead of hanging it. Runs the runner on the files in
 * test/fixtures/runner, which are not test files of the suite.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const fixture = (name: string) => `test/fixtures/runner/${name}.ts`;

function runTests(args: string[]): Promise<{ code: number; stdout: string; stderr: string; seconds: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['scripts/test.mjs', ...args],
      { cwd: ROOT, env: { ...process.env, TEST_WORKERS: '1', TEST_WORKER_EXIT_MS: '1000' }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          stdout,
          stderr,
          seconds: (Date.now() - started) / 1000,
        }),
    );
  });
}

test('files share a worker in the order given, each with its own hooks; a file that asks for its own process gets a fresh one', async () => {
  const run = await runTests([fixture('first'), fixture('second'), fixture('own-process')]);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^all workers: tests 3, pass 3, fail 0, cancelled 0, skipped 0, todo 0;/m);
  // Each file is a top-level suite of the report, named by its path.
  for (const name of ['first', 'second', 'own-process'])
    assert.match(run.stdout, new RegExp(`^✔ ${fixture(name).replaceAll('.', '\\.')} \\(`, 'm'));
});

test('a failing test fails the run, and the counts add up', async () => {
  const run = await runTests([fixture('failing'), fixture('first')]);
  assert.equal(run.code, 1);
  assert.match(run.stdout, /^all workers: tests 3, pass 2, fail 1,/m);
  assert.match(run.stdout, /✖ failing: fails/);
});

test('options go to node:test in the workers: a name pattern leaves the failing test out', async () => {
  const run = await runTests([fixture('failing'), '--test-name-pattern=passes']);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  // Node 20 counts the filtered-out test as skipped; Node 22 and later leave it out of the report.
  assert.match(run.stdout, /^all workers: tests [12], pass 1, fail 0, cancelled 0, skipped [01],/m);
  assert.match(run.stdout, /✔ failing: passes/);
  assert.doesNotMatch(run.stdout, /✖ failing: fails/);
});

test('a file that leaves a timer running fails the run, naming the files of that worker, instead of hanging it', async () => {
  const run = await runTests([fixture('leaky'), fixture('first')]);
  assert.equal(run.code, 1);
  // Both files ran; the worker's own totals never came, since it never reached its end.
  assert.match(run.stdout, /^✔ test\/fixtures\/runner\/leaky\.ts \(/m);
  assert.match(run.stdout, /^✔ test\/fixtures\/runner\/first\.ts \(/m);
  assert.match(
    run.stderr,
    /did not exit after its last file: .*test\/fixtures\/runner\/leaky\.ts, test\/fixtures\/runner\/first\.ts/,
  );
  assert.ok(run.seconds < 30, `took ${run.seconds} s`);
});
