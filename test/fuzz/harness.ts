import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { createSession } from '../../src/oauth/sessions.ts';
import { signedHeaders, type TestUser } from '../helpers/keys.ts';
import { FormClient, newAccount, newApp, startLogin } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { confirmedMod, registerUser, signed } from '../helpers/v1.ts';
import { FakeWorkshop } from '../helpers/workshop.ts';

/** How long one answer may take before the fuzz test calls it a hang. */
export const REQUEST_TIMEOUT_MS = 15_000;

/** A small seeded PRNG (mulberry32), so a failing run can be repeated with FUZZ_SEED. */
export class Random {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(below: number): number {
    return Math.floor(this.next() * below);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(probability: number): boolean {
    return this.next() < probability;
  }
}

export function fuzzSeed(): number {
  const given = process.env.FUZZ_SEED;
  return given ? Number(given) : Math.floor(Math.random() * 2 ** 31);
}

export interface Route {
  /** The path pattern, e.g. /v4/projects/:id */
  path: string;
  methods: string[];
}

/** Every route the app serves, read from its router (new routes are fuzzed without listing them). */
export function listRoutes(app: FastifyInstance): Route[] {
  const routes: Route[] = [];
  const parents: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const at = line.search(/[├└]── /);
    if (at < 0) continue;
    const depth = at / 4;
    const match = /^(.*?)(?: \(([^)]*)\))?$/.exec(line.slice(at + 4))!;
    const path = (parents[depth - 1] ?? '') + match[1]!;
    parents[depth] = path;
    parents.length = depth + 1;
    if (match[2]) routes.push({ path, methods: match[2].split(',').map((method) => method.trim()) });
  }
  return routes;
}

/** What the fuzz test knows about the server: valid credentials and ids, so it gets past the first checks. */
export interface Seeded {
  server: TestServer;
  workshop: FakeWorkshop;
  v1User: TestUser;
  accessToken: string;
  /** A token granting every scope of the seeded application. */
  fullToken: string;
  clientId: string;
  confidentialClientId: string;
  clientSecret: string;
  userId: string;
  username: string;
  projectId: string;
  documentId: string;
  engramUid: string;
  modId: string;
  interactionPath: string;
  /** A browser's cookies and the CSRF token of its forms. */
  cookie: string;
  csrf: string;
  /** A developer (two-step on) signed in to /account/apps: its browser's cookies, CSRF token and one of its applications. */
  developerCookie: string;
  developerCsrf: string;
  developerClientId: string;
}

export async function seededServer(): Promise<Seeded> {
  const workshop = await new FakeWorkshop().start();
  const server = await startServer({ env: { WORKSHOP_URL: workshop.template } });
  const db = server.app.database.db;
  const account = await newAccount(server);
  const scopes = ['common', 'users:read', 'users:update', 'users.private_key:read'];
  const app = await newApp(server, { scopes });
  const confidential = await newApp(server, { confidential: true });
  const { accessToken } = await createSession(db, { userId: account.userId, clientId: app.clientId, scope: 'common' });
  const { accessToken: fullToken } = await createSession(db, {
    userId: account.userId,
    clientId: app.clientId,
    scope: scopes.join(' '),
  });

  const project = await server.request('POST', '/v4/projects', {
    headers: { authorization: `Bearer ${fullToken}` },
    body: { title: 'Fuzz', description: 'seed', gameId: 'ark' },
  });
  const v1User = await registerUser(server);
  const mod = await confirmedMod(server, workshop, v1User);
  const engram = await signed(server, v1User, 'POST', '/v1/engram.php', {
    path: '/Game/Mods/Fuzz/PrimalItem_Fuzz.PrimalItem_Fuzz',
    label: 'Fuzz',
    mod_id: mod.mod_id,
    availability: 3,
    can_blueprint: true,
  });
  assert.equal(engram.status, 200, engram.text);
  const documentId = crypto.randomUUID();
  const document = await signed(server, v1User, 'POST', '/v1/document.php', {
    Identifier: documentId,
    Title: 'Fuzz',
    Description: 'seed',
    LootSources: [],
  });
  assert.equal(document.status, 200, document.text);

  const interactionPath = await startLogin(server, {
    client_id: app.clientId,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  });
  const browser = new FormClient(server);
  const page = await browser.fetch(interactionPath);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
  const cookie = page.headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .join('; ');
  const engrams = await server.request('GET', `/v1/engram.php?mod_id=${mod.mod_id}`);
  const developer = await signedInDeveloper(server);
  return {
    server,
    workshop,
    v1User,
    accessToken,
    fullToken,
    clientId: app.clientId,
    confidentialClientId: confidential.clientId,
    clientSecret: confidential.clientSecret ?? '',
    userId: account.userId,
    username: account.username,
    projectId: project.body?.projectId ?? crypto.randomUUID(),
    documentId,
    engramUid: engrams.body?.[0]?.uid ?? crypto.randomUUID(),
    modId: String(mod.mod_id),
    interactionPath,
    cookie,
    csrf,
    ...developer,
  };
}

/** A developer with two-step on, signed in to the account pages, with one application registered through the page. */
async function signedInDeveloper(server: TestServer) {
  const secret = newTotpSecret();
  const account = await newAccount(server, { totpSecret: secret });
  const browser = new FormClient(server);
  assert.equal(
    (await browser.submit('/account/sign-in', { username: account.username, password: account.password })).status,
    303,
  );
  const verified = await browser.submit('/account/sign-in', { code: totpCode(secret) });
  assert.equal(verified.status, 303, verified.text);
  const page = await browser.fetch('/account/apps');
  const created = await browser.submitOn(
    page.text,
    { name: 'Fuzz App', redirect_uri: 'http://127.0.0.1:9/callback', scope: 'users:read', confidential: 'yes' },
    /^\/account\/apps$/,
  );
  assert.equal(created.status, 200, created.text);
  const developerClientId = /id="client-id">([^<]+)</.exec(created.text)![1]!;
  const list = await browser.fetch('/account/apps');
  return {
    developerCookie: browser.cookieHeader(),
    developerCsrf: /name="_csrf" value="([^"]+)"/.exec(list.text)![1]!,
    developerClientId,
  };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/**
 * The body as the client that asked for it reads it: an answer compressed because the request
 * accepted it (an error echoing a large signed text, say) is checked after decoding.
 */
function decoded(coding: string | undefined, body: Buffer): Buffer {
  if (coding === undefined || coding === 'identity' || body.length === 0) return body;
  if (coding === 'gzip') return gunzipSync(body);
  if (coding === 'br') return brotliDecompressSync(body);
  if (coding === 'deflate') return inflateSync(body);
  throw new Error(`unknown coding ${coding}`);
}

/** One request through node:http, so the path and headers go out exactly as written. */
export function send(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
  label = '',
): Promise<RawAnswer & { previous?: string }> {
  const url = new URL(baseUrl);
  // Node's client frames a GET, DELETE or OPTIONS body only when told its length.
  if (body !== undefined) headers = { ...headers, 'content-length': String(body.length) };
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path, headers, agent, timeout: REQUEST_TIMEOUT_MS },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          try {
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: decoded(res.headers['content-encoding'], Buffer.concat(chunks)),
              previous,
            });
          } catch (error) {
            reject(
              new Error(
                `a body that does not decode as its Content-Encoding (${res.headers['content-encoding']}) says: ${(error as Error).message}`,
              ),
            );
          }
        });
        res.on('error', reject);
      },
    );
    let previous: string | undefined;
    req.on('socket', (socket: { lastRequest?: string }) => {
      previous = socket.lastRequest;
      socket.lastRequest = label;
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms (a hang)`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Sends bytes on a fresh socket and reads the answer until the server closes it or the
 * Content-Length is complete; for requests Node must refuse before Fastify sees them.
 */
export function sendRaw(baseUrl: string, bytes: Buffer, isHead = false): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms (a hang)`));
    }, REQUEST_TIMEOUT_MS);
    /** The bytes after any interim (1xx) answers, whose heads come before the final one. */
    const finalAnswer = () => {
      let data = Buffer.concat(chunks);
      while (/^HTTP\/1\.[01] 1\d\d /.test(data.subarray(0, 13).toString('latin1'))) {
        const end = data.indexOf('\r\n\r\n');
        if (end < 0) break;
        data = data.subarray(end + 4);
      }
      return data;
    };
    const finish = () => {
      clearTimeout(timer);
      const data = finalAnswer();
      const split = data.indexOf('\r\n\r\n');
      if (split < 0)
        return reject(new Error(`no complete answer: ${JSON.stringify(data.toString('latin1').slice(0, 200))}`));
      const [statusLine, ...lines] = data.subarray(0, split).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      socket.destroy();
      const length = headers['content-length'] === undefined ? Infinity : Number(headers['content-length']);
      const body = data.subarray(split + 4);
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: isHead ? body : body.subarray(0, length) });
    };
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      const data = finalAnswer();
      const split = data.indexOf('\r\n\r\n');
      if (split < 0) return;
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(data.subarray(0, split).toString('latin1'));
      if (length && (isHead || data.length - split - 4 >= Number(length[1]))) finish();
    });
    socket.on('end', finish);
    socket.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNRESET' && chunks.length > 0 ? finish() : reject(error),
    );
    socket.write(bytes);
  });
}

/** OAuth endpoints, answered in RFC 6749's error shape rather than {code,message}. */
const OAUTH_ENDPOINTS = new Set([
  'GET /v4/login',
  'POST /v4/login',
  'POST /v4/device',
  'POST /v4/revoke',
  'POST /v4/introspect',
  'GET /v4/jwks',
  'GET /v4/userinfo',
  'POST /v4/userinfo',
]);
/** Server-rendered pages: their errors are HTML pages (RP-initiated logout and the operator console are too). */
const PAGE_PREFIXES = ['/login/', '/device', '/account', '/spawn', '/assets/', '/v4/logout', '/admin/'];

/**
 * The failures in one answer: a 5xx, missing X-Request-Id or nosniff, a body on a HEAD answer,
 * or an error body outside the documented shapes. Empty when the answer is acceptable.
 */
export function problemsOf(method: string, path: string, answer: RawAnswer, headBytes = 0): string[] {
  const problems: string[] = [];
  const pathname = path.split('?', 1)[0]!.replace(/\/{2,}/g, '/');
  if (answer.status >= 500) problems.push(`status ${answer.status}`);
  if (!answer.headers['x-request-id']) problems.push('no X-Request-Id');
  if (answer.headers['x-content-type-options'] !== 'nosniff') problems.push('no X-Content-Type-Options: nosniff');
  if (method === 'HEAD' && answer.body.length > 0) problems.push(`HEAD answer with a ${answer.body.length}-byte body`);
  // Over Node's 64 KiB limit the method may be unknown, so the 431 has no body (DESIGN: a HEAD answer never has one).
  const bodylessOverflow = answer.status === 431 && answer.body.length === 0 && headBytes > 64 * 1024;
  if (answer.status >= 400 && method !== 'HEAD' && !bodylessOverflow) {
    const type = String(answer.headers['content-type'] ?? '');
    const isPage =
      pathname === '/' || pathname === '/admin' || PAGE_PREFIXES.some((prefix) => pathname.startsWith(prefix));
    if (isPage && type.startsWith('text/html')) return problems;
    if (!type.startsWith('application/json')) {
      problems.push(`error with Content-Type ${JSON.stringify(type)}`);
      return problems;
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.body.toString('utf8'));
    } catch {
      problems.push('error body is not JSON');
      return problems;
    }
    // A head over Node's limit is refused before any endpoint is chosen: the API's shape then.
    const isOauth = OAUTH_ENDPOINTS.has(`${method} ${pathname.replace(/\/+$/, '')}`);
    const fits = isOauth ? isOauthError(body) || (answer.status === 431 && isApiError(body)) : isApiError(body);
    if (!fits) problems.push(`error body outside the documented shape`);
  }
  return problems;
}

function isApiError(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const keys = Object.keys(body);
  const { code, message } = body as Record<string, unknown>;
  return (
    typeof code === 'string' &&
    typeof message === 'string' &&
    keys.every((key) => ['code', 'message', 'details'].includes(key))
  );
}

function isOauthError(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const keys = Object.keys(body);
  const { error, error_description: description } = body as Record<string, unknown>;
  return (
    typeof error === 'string' &&
    (description === undefined || typeof description === 'string') &&
    keys.every((key) => ['error', 'error_description', 'error_uri'].includes(key))
  );
}

export { signedHeaders };
