import { randomUUID } from 'node:crypto';
import type { LegacyData, Secrets } from './fixtures.ts';
import { REDIRECT_URI } from './fixtures.ts';
import type { Load } from './measure.ts';

/** What a row must reach, as issue 12 states it; judged against rows of the same run. */
export type Target =
  | { kind: 'of reference'; value: number }
  | { kind: 'of peer'; value: number; of: string }
  | { kind: 'req/s'; value: number }
  | { kind: 'at most'; value: number }
  | { kind: 'p99 at most times'; value: number; of: string };

export interface Case {
  name: string;
  target?: Target;
  load: Load;
}

export const PEER_EXCHANGE = 'peer node-oidc-provider 9: authorization_code exchange';
export const PEER_REFRESH = 'peer node-oidc-provider 9: refresh_token grant';

const form = { 'content-type': 'application/x-www-form-urlencoded' };

/** Hands out each single-use secret once; an exhausted list shows up as failed requests. */
function oneEach(values: string[]): () => string {
  let next = 0;
  return () => values[next++] ?? 'exhausted';
}

export function standardCases(legacy: LegacyData, secrets: Secrets, projectId: string, database: 'SQLite' | 'PostgreSQL'): Case[] {
  const bearer = { authorization: `Bearer ${secrets.accessToken}` };
  const nextCode = oneEach(secrets.codes);
  const nextRefresh = oneEach(secrets.refreshTokens);
  const tokenBody = (params: Record<string, string>) => new URLSearchParams({ client_id: secrets.clientId, ...params }).toString();
  const modList = '/v1/mod.php';
  // ≥ 2 × the peer on SQLite, ≥ 1 × on PostgreSQL.
  const peerFactor = database === 'SQLite' ? 2 : 1;
  const reference = { kind: 'of reference', value: 0.8 } as const;
  return [
    { name: 'v1 GET /v1/user.php/<id>', target: reference, load: { path: `/v1/user.php/${legacy.signer.userId}` } },
    { name: 'v1 signed GET /v1/mod.php (RSA SHA-256)', load: { path: modList, headers: legacy.signer.headers('GET', modList) } },
    { name: 'v1 GET /v1/engram.php/<uid>', target: reference, load: { path: `/v1/engram.php/${legacy.engramUid}` } },
    { name: 'v1 document download', target: reference, load: { path: `/v1/document.php/${legacy.documentId}` } },
    {
      name: 'v4 token: authorization_code exchange',
      target: { kind: 'of peer', value: peerFactor, of: PEER_EXCHANGE },
      load: {
        method: 'POST',
        path: '/v4/login',
        headers: form,
        next: () => ({ body: tokenBody({ grant_type: 'authorization_code', code: nextCode(), redirect_uri: REDIRECT_URI, code_verifier: secrets.codeVerifier }) }),
      },
    },
    {
      name: 'v4 token: refresh_token grant',
      target: { kind: 'of peer', value: peerFactor, of: PEER_REFRESH },
      load: { method: 'POST', path: '/v4/login', headers: form, next: () => ({ body: tokenBody({ grant_type: 'refresh_token', refresh_token: nextRefresh() }) }) },
    },
    { name: 'v4 GET /v4/user (bearer)', target: reference, load: { path: '/v4/user', headers: bearer } },
    { name: 'v4 GET /v4/projects/<id>', target: reference, load: { path: `/v4/projects/${projectId}`, headers: bearer } },
    { name: 'v4 GET /v4/projects (250-item page)', target: { kind: 'req/s', value: 1500 }, load: { path: '/v4/projects?pageSize=250', headers: bearer } },
    {
      name: 'v4 POST /v4/projects (250 new objects)',
      target: { kind: 'req/s', value: 150 },
      load: { method: 'POST', path: '/v4/projects', headers: { ...bearer, 'content-type': 'application/json' }, next: () => ({ body: bulkProjects() }) },
    },
  ];
}

const bulkProjects = () => JSON.stringify(Array.from({ length: 250 }, (_, n) => ({ projectId: randomUUID(), title: `Bulk ${n}`, description: 'bench' })));

/** The full engram list (10,000 engrams): as is, compressed, and revalidated by its ETag. */
export function engramListLoads(etag: string | undefined): Case[] {
  return [
    // The two full bodies (5 MB, 400 KB) are fetched by a plain node:http client: autocannon's own
    // parsing of bodies this large capped the figure near 170 req/s whatever the server did (see
    // Load.client in measure.ts and docs/benchmarks.md).
    { name: 'v1 GET /v1/engram.php (10,000 engrams), no compression', load: { path: '/v1/engram.php', client: 'node' } },
    {
      name: 'v1 GET /v1/engram.php (10,000 engrams), Accept-Encoding: br, gzip',
      target: { kind: 'req/s', value: 500 },
      load: { path: '/v1/engram.php', headers: { 'accept-encoding': 'br, gzip' }, client: 'node' },
    },
    {
      name: 'v1 GET /v1/engram.php (10,000 engrams), If-None-Match → 304',
      target: { kind: 'of reference', value: 0.8 },
      load: { path: '/v1/engram.php', headers: { 'if-none-match': etag ?? '"none"', 'accept-encoding': 'br, gzip' }, expectStatus: 304 },
    },
  ];
}

/** The reads of the mixed case (the single-object GETs, in turn) and the bulk writes beside them. */
export function mixedLoads(legacy: LegacyData, accessToken: string, projectId: string): { reads: Load; writes: Load } {
  const bearer = { authorization: `Bearer ${accessToken}` };
  const reads: Array<{ path: string; headers?: Record<string, string> }> = [
    { path: `/v1/user.php/${legacy.signer.userId}` },
    { path: `/v1/engram.php/${legacy.engramUid}` },
    { path: `/v1/document.php/${legacy.documentId}` },
    { path: '/v4/user', headers: bearer },
    { path: `/v4/projects/${projectId}`, headers: bearer },
  ];
  let turn = 0;
  return {
    reads: { path: reads[0]!.path, next: () => ({ headers: {}, ...reads[turn++ % reads.length]! }) },
    writes: { method: 'POST', path: '/v4/projects', headers: { ...bearer, 'content-type': 'application/json' }, next: () => ({ body: bulkProjects() }) },
  };
}
