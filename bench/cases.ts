import { randomUUID } from 'node:crypto';
import type { LegacyData, Secrets } from './fixtures.ts';
import { REDIRECT_URI } from './fixtures.ts';
import type { Load } from './measure.ts';

/** What a row must reach, as issues 12 and 21 state it; judged against rows of the same run (`of` names that row). */
export type Target =
  | { kind: 'of reference'; value: number; of: string }
  | { kind: 'of peer'; value: number; of: string }
  | { kind: 'req/s'; value: number }
  | { kind: 'at most'; value: number }
  | { kind: 'p99 at most times'; value: number; of: string }
  /** Latency in milliseconds, for the one-connection rows of the large data sets. */
  | { kind: 'p50 at most ms'; value: number }
  | { kind: 'p99 under ms'; value: number }
  /** Not a target: the floor row `of` is measured around the case and shown beside it. */
  | { kind: 'beside floor'; of: string };

export interface Case {
  name: string;
  targets?: Target[];
  load: Load;
}

/** The reference rows (run.ts): the floor server, and the floor server plus the bearer lookup a v4 GET needs. */
export const REFERENCE = 'reference: bare Fastify + pino line + rate limit + raw SQLite lookup';
export const referenceWithBearer = (database: Database) =>
  `reference + bearer: the reference + one raw bearer-token lookup by hash (${database})`;

export type Database = 'SQLite' | 'PostgreSQL';

/** The v1 GETs judged against the reference: three single GETs, and the 304 of the engram list. */
export const V1_GETS = ['v1 GET /v1/user.php/<id>', 'v1 GET /v1/engram.php/<uid>', 'v1 document download'] as const;
export const V1_NOT_MODIFIED = 'v1 GET /v1/engram.php (10,000 engrams), If-None-Match → 304';
/**
 * On PostgreSQL, the floor of the v1 GETs: the reference making its one lookup on the service's
 * users table in PostgreSQL instead of on its own SQLite table (floor-server.ts). Every v1 GET of
 * the service makes at least that one round trip there; shown beside the v1 cases, not judged.
 */
export const v1Floor = (database: Database) =>
  `v1 floor: the reference looking up the user in the service's own database by a raw statement (${database})`;
/** The v1 cases judged against the reference (and on PostgreSQL shown beside the v1 floor). */
export const V1_JUDGED = [...V1_GETS, V1_NOT_MODIFIED];
/** A v1 GET's targets: 0.8 × the reference, and on PostgreSQL the v1 floor beside it. */
const v1Targets = (database: Database): Target[] => [
  { kind: 'of reference', value: 0.8, of: REFERENCE },
  ...(database === 'PostgreSQL' ? [{ kind: 'beside floor' as const, of: v1Floor(database) }] : []),
];

/** The 250-item page, and its floor: the reference + bearer serving the page by raw statements (floor-server.ts). */
export const V4_PAGE = 'v4 GET /v4/projects (250-item page)';
export const pageFloor = (database: Database) =>
  `page floor: the reference + bearer serving the 250-item page by raw statements (${database})`;
export const PAGE_PATH = '/v4/projects?pageSize=250';

/** The v4 single GETs, measured against the reference with the bearer lookup. */
export const V4_SINGLE_GETS = ['v4 GET /v4/user (bearer)', 'v4 GET /v4/projects/<id>'] as const;
/**
 * The floor of a v4 single GET: the reference + bearer reading the project from the service's own
 * database by a raw statement (floor-server.ts). On PostgreSQL that is the second round trip a v4
 * GET makes and the reference + bearer does not; shown beside the case, not judged.
 */
export const projectFloor = (database: Database) =>
  `single-GET floor: the reference + bearer reading the project by a raw statement (${database})`;

/**
 * The bulk POST of 250 new projects, and on PostgreSQL its floor: the reference + bearer inserting
 * them by raw statements in one transaction (floor-server.ts), measured around the case and shown
 * beside it. (On SQLite a second process writing the service's file waits on the service's
 * checkpoints: such a floor ran slower than the service.)
 */
export const V4_BULK_POST = 'v4 POST /v4/projects (250 new objects)';
export const bulkPostFloor = (database: Database) =>
  `bulk-POST floor: the reference + bearer inserting 250 projects by raw statements (${database})`;
/** The bulk POST's load, the service's and the floor's: 250 new projects a request, the server's ids unless the client's. */
export const bulkPostLoad = (accessToken: string, ids: 'server' | 'client' = 'server'): Load => ({
  method: 'POST',
  path: '/v4/projects',
  headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
  next: () => ({ body: bulkProjects(ids) }),
});

/** Where the peer keeps its records (bench/peer-adapters/). */
export type PeerStorage = 'memory' | 'sqlite' | 'redis' | 'postgres';
const STORAGE_LABEL: Record<PeerStorage, string> = {
  memory: 'in memory',
  sqlite: '+ SQLite',
  redis: '+ Redis',
  postgres: '+ PostgreSQL',
};
export type Grant = 'authorization_code exchange' | 'refresh_token grant';
export const PEER_ROW_PREFIX = 'peer node-oidc-provider 9 ';
export const peerRowName = (storage: PeerStorage, grant: Grant) =>
  `${PEER_ROW_PREFIX}${STORAGE_LABEL[storage]}: ${grant}`;

/** The single-use secrets a grant load spends, one per request (an exhausted list shows as failed requests). */
export interface GrantSecrets {
  clientId: string;
  redirectUri: string;
  codeVerifier: string;
  codes: string[];
  refreshTokens: string[];
}

/** Both grants as loads on a token endpoint at `path`, each request spending the next secret. */
export function grantLoads(path: string, secrets: GrantSecrets): Record<Grant, Load> {
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  const body = (params: Record<string, string>) =>
    new URLSearchParams({ client_id: secrets.clientId, ...params }).toString();
  let code = 0;
  let refresh = 0;
  return {
    'authorization_code exchange': {
      method: 'POST',
      path,
      headers,
      next: () => ({
        body: body({
          grant_type: 'authorization_code',
          code: secrets.codes[code++] ?? 'exhausted',
          redirect_uri: secrets.redirectUri,
          code_verifier: secrets.codeVerifier,
        }),
      }),
    },
    'refresh_token grant': {
      method: 'POST',
      path,
      headers,
      next: () => ({
        body: body({ grant_type: 'refresh_token', refresh_token: secrets.refreshTokens[refresh++] ?? 'exhausted' }),
      }),
    },
  };
}

/**
 * The peers a run measures and the factor our token rows must reach over each (issue 21): on SQLite
 * 2 × the peer on SQLite, 1.5 × on Redis, 1 × in memory; on PostgreSQL 2 × the peer on PostgreSQL
 * (the in-memory peer runs there too, for information).
 */
export function peersOf(database: Database): Array<{ storage: PeerStorage; factor?: number }> {
  return database === 'SQLite'
    ? [
        { storage: 'sqlite', factor: 2 },
        { storage: 'redis', factor: 1.5 },
        { storage: 'memory', factor: 1 },
      ]
    : [{ storage: 'memory' }, { storage: 'postgres', factor: 2 }];
}

export const peerTargets = (database: Database, grant: Grant): Target[] =>
  peersOf(database).flatMap(({ storage, factor }) =>
    factor === undefined ? [] : [{ kind: 'of peer', value: factor, of: peerRowName(storage, grant) } as const],
  );

const form = { 'content-type': 'application/x-www-form-urlencoded' };

/** Hands out each single-use secret once; an exhausted list shows up as failed requests. */
function oneEach(values: string[]): () => string {
  let next = 0;
  return () => values[next++] ?? 'exhausted';
}

export function standardCases(legacy: LegacyData, secrets: Secrets, projectId: string, database: Database): Case[] {
  const bearer = { authorization: `Bearer ${secrets.accessToken}` };
  const nextCode = oneEach(secrets.codes);
  const nextRefresh = oneEach(secrets.refreshTokens);
  const tokenBody = (params: Record<string, string>) =>
    new URLSearchParams({ client_id: secrets.clientId, ...params }).toString();
  const modList = '/v1/mod.php';
  // v1 GETs against the reference; v4 GETs, which also authenticate a bearer token, against the reference with that lookup.
  const reference = v1Targets(database);
  const referenceBearer: Target[] = [{ kind: 'of reference', value: 0.8, of: referenceWithBearer(database) }];
  return [
    { name: V1_GETS[0], targets: reference, load: { path: `/v1/user.php/${legacy.signer.userId}` } },
    {
      name: 'v1 signed GET /v1/mod.php (RSA SHA-256)',
      load: { path: modList, headers: legacy.signer.headers('GET', modList) },
    },
    { name: V1_GETS[1], targets: reference, load: { path: `/v1/engram.php/${legacy.engramUid}` } },
    { name: V1_GETS[2], targets: reference, load: { path: `/v1/document.php/${legacy.documentId}` } },
    {
      name: 'v4 token: authorization_code exchange',
      targets: peerTargets(database, 'authorization_code exchange'),
      load: {
        method: 'POST',
        path: '/v4/login',
        headers: form,
        next: () => ({
          body: tokenBody({
            grant_type: 'authorization_code',
            code: nextCode(),
            redirect_uri: REDIRECT_URI,
            code_verifier: secrets.codeVerifier,
          }),
        }),
      },
    },
    {
      name: 'v4 token: refresh_token grant',
      targets: peerTargets(database, 'refresh_token grant'),
      load: {
        method: 'POST',
        path: '/v4/login',
        headers: form,
        next: () => ({ body: tokenBody({ grant_type: 'refresh_token', refresh_token: nextRefresh() }) }),
      },
    },
    // /v4/user reads the caller's row after the bearer lookup, as /v4/projects/<id> reads the project: the same floor beside both.
    {
      name: V4_SINGLE_GETS[0],
      targets: [...referenceBearer, { kind: 'beside floor', of: projectFloor(database) }],
      load: { path: '/v4/user', headers: bearer },
    },
    {
      name: V4_SINGLE_GETS[1],
      targets: [...referenceBearer, { kind: 'beside floor', of: projectFloor(database) }],
      load: { path: `/v4/projects/${projectId}`, headers: bearer },
    },
    {
      name: V4_PAGE,
      targets: [
        { kind: 'req/s', value: 1500 },
        { kind: 'beside floor', of: pageFloor(database) },
      ],
      load: { path: PAGE_PATH, headers: bearer },
    },
    {
      name: V4_BULK_POST,
      targets: [
        { kind: 'req/s', value: 150 },
        ...(database === 'PostgreSQL' ? [{ kind: 'beside floor' as const, of: bulkPostFloor(database) }] : []),
      ],
      load: bulkPostLoad(secrets.accessToken),
    },
    {
      name: 'v4 POST /v4/projects (250 new objects, each with a random id of the client)',
      load: bulkPostLoad(secrets.accessToken, 'client'),
    },
  ];
}

/**
 * 250 new projects. Ids are the server's (UUIDv7, time-ordered) unless the client sends its own:
 * random v4 ids here, each of which lands on another leaf of the primary key (issue 21).
 */
const bulkProjects = (ids: 'server' | 'client') =>
  JSON.stringify(
    Array.from({ length: 250 }, (_, n) => ({
      ...(ids === 'client' ? { projectId: randomUUID() } : {}),
      title: `Bulk ${n}`,
      description: 'bench',
    })),
  );

/** The full engram list (10,000 engrams): as is, compressed, and revalidated by its ETag. */
export function engramListLoads(etag: string | undefined, database: Database): Case[] {
  return [
    // The two full bodies (5 MB, 400 KB) are fetched by a plain node:http client: autocannon's own
    // parsing of bodies this large capped the figure near 170 req/s whatever the server did (see
    // Load.client in measure.ts and docs/benchmarks.md).
    {
      name: 'v1 GET /v1/engram.php (10,000 engrams), no compression',
      load: { path: '/v1/engram.php', client: 'node' },
    },
    {
      name: 'v1 GET /v1/engram.php (10,000 engrams), Accept-Encoding: br, gzip',
      targets: [{ kind: 'req/s', value: 500 }],
      load: { path: '/v1/engram.php', headers: { 'accept-encoding': 'br, gzip' }, client: 'node' },
    },
    {
      name: V1_NOT_MODIFIED,
      targets: v1Targets(database),
      load: {
        path: '/v1/engram.php',
        headers: { 'if-none-match': etag ?? '"none"', 'accept-encoding': 'br, gzip' },
        expectStatus: 304,
      },
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
    // Sent by the node:http client, which times each answer to the microsecond (see run.ts, mixed).
    reads: { path: reads[0]!.path, client: 'node', next: () => ({ headers: {}, ...reads[turn++ % reads.length]! }) },
    writes: {
      method: 'POST',
      path: '/v4/projects',
      headers: { ...bearer, 'content-type': 'application/json' },
      next: () => ({ body: bulkProjects('server') }),
    },
  };
}
