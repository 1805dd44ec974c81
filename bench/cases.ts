import { randomUUID } from 'node:crypto';
import type { LegacyData, Secrets } from './fixtures.ts';
import { REDIRECT_URI } from './fixtures.ts';
import type { Load } from './measure.ts';

export interface Case {
  name: string;
  /** The floor for requests/s as a share of hello-world, when it sets one. */
  target?: number;
  load: Load;
}

const form = { 'content-type': 'application/x-www-form-urlencoded' };

/** Hands out each single-use secret once; an exhausted list shows up as failed requests. */
function oneEach(values: string[]): () => string {
  let next = 0;
  return () => values[next++] ?? 'exhausted';
}

export function standardCases(legacy: LegacyData, secrets: Secrets, projectId: string): Case[] {
  const bearer = { authorization: `Bearer ${secrets.accessToken}` };
  const nextCode = oneEach(secrets.codes);
  const nextRefresh = oneEach(secrets.refreshTokens);
  const tokenBody = (params: Record<string, string>) => new URLSearchParams({ client_id: secrets.clientId, ...params }).toString();
  const modList = '/v1/mod.php';
  return [
    { name: 'v1 GET /v1/user.php/<id>', target: 0.5, load: { path: `/v1/user.php/${legacy.signer.userId}` } },
    { name: 'v1 signed GET /v1/mod.php (RSA SHA-256)', load: { path: modList, headers: legacy.signer.headers('GET', modList) } },
    { name: 'v1 GET /v1/engram.php/<uid>', target: 0.5, load: { path: `/v1/engram.php/${legacy.engramUid}` } },
    { name: 'v1 GET /v1/engram.php (10,000 engrams)', load: { path: '/v1/engram.php' } },
    { name: 'v1 document download', target: 0.5, load: { path: `/v1/document.php/${legacy.documentId}` } },
    {
      name: 'v4 token: authorization_code exchange',
      load: {
        method: 'POST',
        path: '/v4/login',
        headers: form,
        next: () => ({ body: tokenBody({ grant_type: 'authorization_code', code: nextCode(), redirect_uri: REDIRECT_URI, code_verifier: secrets.codeVerifier }) }),
      },
    },
    {
      name: 'v4 token: refresh_token grant',
      load: { method: 'POST', path: '/v4/login', headers: form, next: () => ({ body: tokenBody({ grant_type: 'refresh_token', refresh_token: nextRefresh() }) }) },
    },
    { name: 'v4 GET /v4/user (bearer)', target: 0.5, load: { path: '/v4/user', headers: bearer } },
    { name: 'v4 GET /v4/projects/<id>', target: 0.5, load: { path: `/v4/projects/${projectId}`, headers: bearer } },
    { name: 'v4 GET /v4/projects (250-item page)', load: { path: '/v4/projects?pageSize=250', headers: bearer } },
    {
      name: 'v4 POST /v4/projects (250 new objects)',
      load: {
        method: 'POST',
        path: '/v4/projects',
        headers: { ...bearer, 'content-type': 'application/json' },
        next: () => ({
          body: JSON.stringify(Array.from({ length: 250 }, (_, n) => ({ projectId: randomUUID(), title: `Bulk ${n}`, description: 'bench' }))),
        }),
      },
    },
  ];
}
