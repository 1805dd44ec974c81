// The peer the token-endpoint targets are measured against: node-oidc-provider 9, configured as an
// application developer would for what our token endpoint does (a public client with PKCE, plain
// OAuth 2.0 scopes, rotating refresh tokens, opaque tokens), keeping its records in the storage
// PEER_STORAGE names: memory, sqlite, redis or postgres (bench/peer-adapters/, docs/benchmarks.md).
// It mints the single-use secrets the cases spend (one authorization code and one refresh token per
// request) through that storage before it listens, and writes them to PEER_SECRETS_FILE for the
// bench to hand out. On SIGTERM it closes the storage (Redis keys and the PostgreSQL schema are removed; the SQLite
// file lives in the bench's temporary directory) and exits.
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import Provider from 'oidc-provider';
import { openMemory } from './peer-adapters/memory.ts';
import { openPostgres } from './peer-adapters/postgres.ts';
import { openRedis } from './peer-adapters/redis.ts';
import { openSqlite } from './peer-adapters/sqlite.ts';
import type { PeerStorage } from './peer-adapters/storage.ts';

export const PEER_CLIENT_ID = 'bench-public-client';
export const PEER_REDIRECT_URI = 'http://127.0.0.1:9/callback';
export const PEER_SCOPE = 'api:read';

/** The storage the provider keeps its records in, chosen by PEER_STORAGE (bench/peer-adapters/). */
async function openStorage(): Promise<PeerStorage> {
  const kind = process.env.PEER_STORAGE ?? 'memory';
  switch (kind) {
    case 'memory':
      return openMemory();
    case 'sqlite':
      return openSqlite(required('PEER_SQLITE_FILE'));
    case 'redis':
      return openRedis(process.env.PEER_REDIS_URL ?? 'redis://127.0.0.1:6379');
    case 'postgres':
      return openPostgres(required('PEER_DATABASE_URL'));
    default:
      throw new Error(`PEER_STORAGE=${kind}: expected memory, sqlite, redis or postgres`);
  }
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required for PEER_STORAGE=${process.env.PEER_STORAGE}`);
  return value;
}

const storage = await openStorage();
const port = Number(process.env.PORT ?? 0);
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  adapter: storage.adapter,
  clients: [
    {
      client_id: PEER_CLIENT_ID,
      token_endpoint_auth_method: 'none',
      redirect_uris: [PEER_REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
  ],
  scopes: [PEER_SCOPE],
  pkce: { required: () => true },
  rotateRefreshToken: true,
  issueRefreshToken: async () => true,
  // Codes are minted when the peer starts and spent around our code exchange, which on a slow host
  // comes more than ten minutes later: an hour keeps them valid for the whole run (bench/fixtures.ts
  // gives ours the same). The TTL is stored with each code; it does not change the work of a grant.
  ttl: { AccessToken: 3600, AuthorizationCode: 3600, RefreshToken: 30 * 24 * 3600, Grant: 30 * 24 * 3600 },
  findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
  features: { devInteractions: { enabled: false } },
});
provider.proxy = false;

async function mint(count: number) {
  const codeVerifier = randomBytes(32).toString('base64url');
  const codeChallenge = createHash('sha256').update(codeVerifier).digest('base64url');
  const codes: string[] = new Array(count);
  const refreshTokens: string[] = new Array(count);
  const client = (await provider.Client.find(PEER_CLIENT_ID))!;
  const one = async (i: number) => {
    const grant = new provider.Grant({ accountId: `account-${i}`, clientId: PEER_CLIENT_ID });
    grant.addOIDCScope(PEER_SCOPE);
    const grantId = await grant.save();
    const common = { accountId: `account-${i}`, grantId, scope: PEER_SCOPE, client, gty: 'authorization_code' };
    codes[i] = await new provider.AuthorizationCode({
      ...common,
      redirectUri: PEER_REDIRECT_URI,
      codeChallenge,
      codeChallengeMethod: 'S256',
    }).save();
    refreshTokens[i] = await new provider.RefreshToken(common).save();
  };
  // Several grants at a time, so the network storages are not minted one round trip after another.
  const PARALLEL = 32;
  for (let from = 0; from < count; from += PARALLEL)
    await Promise.all(Array.from({ length: Math.min(PARALLEL, count - from) }, (_, k) => one(from + k)));
  return {
    clientId: PEER_CLIENT_ID,
    redirectUri: PEER_REDIRECT_URI,
    codeVerifier,
    codes,
    refreshTokens,
    storage: storage.describe,
  };
}

const secrets = await mint(Number(process.env.PEER_MINT ?? 1000));
if (process.env.PEER_SECRETS_FILE) writeFileSync(process.env.PEER_SECRETS_FILE, JSON.stringify(secrets));
const server = provider.listen(port, '127.0.0.1');
process.on('SIGTERM', () =>
  server.close(
    () =>
      void storage.close().then(
        () => process.exit(0),
        (error) => {
          process.stderr.write(`cleaning up the peer's storage failed: ${error}\n`);
          process.exit(1);
        },
      ),
  ),
);
