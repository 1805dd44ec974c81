// The token floors of issue 21 (bench/run.ts): the refresh_token and authorization_code grants of a
// server doing only the required work on the run's own database (token-floor-server.ts on SQLite,
// token-floor-pg-server.ts on PostgreSQL), measured like the service's token rows (no warm-up for
// single-use secrets, the same seconds and connections) over as many secrets as the service holds,
// minted for them in a database of the service's schema. Their verdicts show the floor against each
// peer, for information: whether 2 × the peer is reachable at all with the service's statements. The service's token rows then show their share
// of the floor.

import { type Database, type Grant, grantLoads, type Target } from './cases.ts';
import { mintSecrets, REDIRECT_URI } from './fixtures.ts';
import type { Figures, Load } from './measure.ts';
import { startProcess } from './processes.ts';

export const GRANTS: readonly Grant[] = ['authorization_code exchange', 'refresh_token grant'];
export const tokenFloorRowName = (database: Database, grant: Grant) =>
  `token floor: Fastify + pino line + rate limit + the grant's statements on raw ${database === 'SQLite' ? 'better-sqlite3' : 'node-postgres'}: ${grant}`;

interface FloorRow {
  name: string;
  connections: number;
  targets: Target[];
  informational: true;
  serverRssMiB: number;
}

export async function tokenFloorRows(options: {
  databaseUrl: string;
  /** Codes and refresh tokens to mint, as many as the service holds (bench/run.ts). */
  secretsCount: number;
  database: Database;
  seconds: number;
  connections: number;
  wanted: (name: string) => boolean;
  measure: (url: string, load: Load) => Promise<Figures>;
  targets: (grant: Grant) => Target[];
}): Promise<Array<FloorRow & Figures>> {
  const grants = GRANTS.filter(
    (grant) => options.wanted(tokenFloorRowName(options.database, grant)) || options.wanted(`v4 token: ${grant}`),
  );
  if (grants.length === 0) return [];
  const count = options.secretsCount;
  process.stderr.write(`token floor: minting ${count} codes and refresh tokens…\n`);
  const secrets = await mintSecrets(options.databaseUrl, count);
  // On SQLite with the service's group commit (token-floor-server.ts).
  const env: Record<string, string> = options.databaseUrl.startsWith('sqlite:')
    ? { DB: options.databaseUrl.slice('sqlite:'.length) }
    : { DATABASE_URL: options.databaseUrl };
  const entry = options.database === 'SQLite' ? './bench/token-floor-server.ts' : './bench/token-floor-pg-server.ts';
  const server = await startProcess(entry, env, '/');
  const loads = grantLoads('/v4/login', { ...secrets, redirectUri: REDIRECT_URI });
  try {
    const rows: Array<FloorRow & Figures> = [];
    for (const grant of grants) {
      const name = tokenFloorRowName(options.database, grant);
      process.stderr.write(`${name}…\n`);
      const figures = await options.measure(server.url, loads[grant]);
      rows.push({
        name,
        connections: options.connections,
        ...figures,
        targets: options.targets(grant),
        informational: true,
        serverRssMiB: server.memory().peakMiB,
      });
    }
    return rows;
  } finally {
    await server.stop();
  }
}

/** Appends to each service token row's verdict its share of the floor of the same grant. */
export function noteFloorShares(
  rows: Array<{ name: string; requestsPerSecond?: number; verdict?: string }>,
  database: Database,
): void {
  for (const grant of GRANTS) {
    const floor = rows.find((row) => row.name === tokenFloorRowName(database, grant))?.requestsPerSecond;
    const service = rows.find((row) => row.name === `v4 token: ${grant}`);
    if (!floor || service?.requestsPerSecond === undefined) continue;
    const share = `${(service.requestsPerSecond / floor).toFixed(2)} × token floor`;
    service.verdict = service.verdict ? `${service.verdict}; ${share}` : share;
  }
}
