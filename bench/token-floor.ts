// npx tsx bench/token-floor.ts [seconds] [postgres://… (PostgreSQL instead of SQLite, in a fresh schema)]
// An experiment behind issue 12's token target: in one run, the refresh_token grant of
// token-floor-server.ts (the least the grant can cost on our schema), of the service, and of
// node-oidc-provider 9 (in memory), each over its own single-use refresh tokens, 10 connections.
// If the floor is not twice the peer, no work on the service's JavaScript can make it so.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintSecrets } from './fixtures.ts';
import { type Load, measure } from './measure.ts';
import { freshSchema } from './postgres-schema.ts';
import { startProcess } from './processes.ts';

const seconds = Number(process.argv[2] ?? 5);
const postgres = process.argv[3];
const connections = 10;
const dir = mkdtempSync(join(tmpdir(), 'token-floor-'));
const form = { 'content-type': 'application/x-www-form-urlencoded' };

function refreshLoad(path: string, clientId: string, tokens: string[], cycle = false): Load {
  let next = 0;
  const token = () => (cycle ? tokens[next++ % tokens.length] : tokens[next++]) ?? 'exhausted';
  return {
    method: 'POST',
    path,
    headers: form,
    next: () => ({
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: clientId,
        refresh_token: token(),
      }).toString(),
    }),
  };
}

async function run(
  name: string,
  entry: string,
  env: Record<string, string>,
  probe: string,
  load: (path: string) => Load,
  path: string,
): Promise<void> {
  const server = await startProcess(entry, env, probe);
  try {
    await measure(server.url, load(path), { seconds: 1, connections });
    const figures = await measure(server.url, load(path), { seconds, connections });
    console.log(`| ${name} | ${figures.requestsPerSecond} | ${figures.p50} | ${figures.p99} | ${figures.failed} |`);
  } finally {
    await server.stop();
  }
}

const scoped = postgres ? await freshSchema(postgres) : undefined;
try {
  const database = join(dir, 'bench.db');
  const databaseUrl = scoped?.url ?? `sqlite:${database}`;
  const secrets = await mintSecrets(databaseUrl, Math.max(40_000, seconds * (postgres ? 30_000 : 36_000)));
  let used = 0;
  // Each measurement (a warm-up and a run per server) gets its own sixth of the single-use tokens.
  const slice = () => secrets.refreshTokens.slice(used, (used += secrets.refreshTokens.length / 6));
  const peerFile = join(dir, 'peer.json');
  console.log('| refresh_token grant | req/s | p50 ms | p99 ms | failed |\n|---|---:|---:|---:|---:|');
  if (scoped) {
    await run(
      'floor: Fastify + pino + node-postgres, one statement per grant',
      './bench/token-floor-pg-server.ts',
      { DATABASE_URL: scoped.url },
      '/',
      (path) => refreshLoad(path, secrets.clientId, slice()),
      '/v4/login',
    );
  } else {
    await run(
      'floor: Fastify + pino + raw SQLite, same statements',
      './bench/token-floor-server.ts',
      { DB: database },
      '/',
      (path) => refreshLoad(path, secrets.clientId, slice()),
      '/v4/login',
    );
    await run(
      'floor with a Map instead of SQLite (no storage cost)',
      './bench/token-floor-server.ts',
      { DB: database, STORE: 'memory' },
      '/',
      (path) => refreshLoad(path, secrets.clientId, slice(), true),
      '/v4/login',
    );
  }
  await run(
    'the service (dist/server.js)',
    'dist/server.js',
    {
      DATABASE_URL: databaseUrl,
      BASE_URL: 'https://bench.example',
      RATE_LIMIT_V1: '1000000000',
      RATE_LIMIT_V4: '1000000000',
      LOG_LEVEL: 'info',
    },
    '/healthz',
    (path) => refreshLoad(path, secrets.clientId, slice()),
    '/v4/login',
  );
  used = 0; // the peer's warm-up and run each take half of its own list
  await run(
    'node-oidc-provider 9, in memory',
    './bench/peer-oidc-provider.ts',
    { PEER_SECRETS_FILE: peerFile, PEER_MINT: String(Math.max(20_000, seconds * 20_000)) },
    '/.well-known/openid-configuration',
    (path) => {
      const peer = JSON.parse(readFileSync(peerFile, 'utf8')) as { clientId: string; refreshTokens: string[] };
      return refreshLoad(path, peer.clientId, peer.refreshTokens.slice(used, (used += peer.refreshTokens.length / 2)));
    },
    '/token',
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
  await scoped?.drop();
}
