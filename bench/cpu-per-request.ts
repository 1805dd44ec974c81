// npx tsx bench/cpu-per-request.ts [seconds]: the refresh_token grant's server CPU time per request
// (user + system, from /proc, all threads), which a busy machine disturbs less than req/s. An A/B
// aid: ENTRIES=dist/server.js,/tmp/other-build/server.js compares builds, alternating twice.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintSecrets } from './fixtures.ts';
import { measure } from './measure.ts';
import { startProcess } from './processes.ts';

const seconds = Number(process.argv[2] ?? 4);
const variants = (process.env.ENTRIES ?? 'dist/server.js').split(',');
const ticks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (1/100 s)
};
const dir = mkdtempSync(join(tmpdir(), 'cpu-'));
try {
  const database = join(dir, 'bench.db');
  const secrets = await mintSecrets(`sqlite:${database}`, 40_000 * variants.length * 2);
  let used = 0;
  for (const round of [1, 2]) {
    for (const variant of variants) {
      const server = await startProcess(variant, { DATABASE_URL: `sqlite:${database}`, BASE_URL: 'https://bench.example', RATE_LIMIT_V1: '1000000000', RATE_LIMIT_V4: '1000000000', LOG_LEVEL: 'info' }, '/healthz');
      const tokens = secrets.refreshTokens.slice(used, (used += 40_000));
      let next = 0;
      const load = { method: 'POST', path: '/v4/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, next: () => ({ body: new URLSearchParams({ grant_type: 'refresh_token', client_id: secrets.clientId, refresh_token: tokens[next++] ?? 'x' }).toString() }) };
      await measure(server.url, load, { seconds: 1, connections: 10 });
      const before = ticks(server.pid);
      const figures = await measure(server.url, load, { seconds, connections: 10 });
      const cpuMs = (ticks(server.pid) - before) * 10;
      console.log(`round ${round} ${variant}: ${figures.requestsPerSecond} req/s, ${((cpuMs * 1000) / figures.requests).toFixed(0)} µs CPU per request, failed ${figures.failed}`);
      await server.stop();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
