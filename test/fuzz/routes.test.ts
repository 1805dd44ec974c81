import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  fuzzSeed,
  listRoutes,
  problemsOf,
  Random,
  type Route,
  type Seeded,
  seededServer,
  send,
  signedHeaders,
} from './harness.ts';

/**
 * Fuzzes every route the app serves with hostile input (repeated parameters, Object.prototype
 * names, NUL, bad percent-encoding, huge and deeply nested bodies, wrong content types, numbers
 * past 2^53, bad UUIDs, wrong and right credentials) and fails on any 5xx, hang, error body
 * outside the documented shapes, HEAD answer with a body, or answer without X-Request-Id or
 * nosniff. FUZZ_SEED repeats a run; FUZZ_REQUESTS changes its length.
 */

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 5000);
const CONCURRENCY = 6;
const seed = fuzzSeed();

let seeded: Seeded;
before(async () => {
  seeded = await seededServer();
});
after(async () => {
  await seeded.server.close();
  await seeded.workshop.stop();
});

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND'];

const PARAM_NAMES = [
  'mod_id',
  'simple',
  'count',
  'offset',
  'sort',
  'direction',
  'user_id',
  'page',
  'pageSize',
  'sortedColumn',
  'sortDirection',
  'title',
  'gameId',
  'client_id',
  'response_type',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'no_redirect',
  'device_id',
  'user_code',
  'action',
  'grant_type',
  'code',
  'code_verifier',
  'refresh_token',
  'device_code',
  'token',
  'token_type_hint',
  'client_secret',
  'username',
  'password',
  'email',
  'new_email',
  'two_step_code',
  'decision',
  '_csrf',
  'trust_device',
  'end_session',
  'end_trust',
  'current_password',
  'new_password',
  'two_step',
  'backup_codes',
  'return_to',
  'next',
  'name',
  'website',
  'confidential',
  'new_secret',
  'delete_app',
  'Identifier',
  'Title',
  'Description',
  'LootSources',
  'Version',
  'path',
  'label',
  'availability',
  'environments',
  'can_blueprint',
  'public_key',
  'pull_url',
  'description',
  'publicKey',
  'projectId',
  'userId',
  'revision',
  'createdAt',
  'updatedAt',
  'sessionId',
  'privateKey',
  '__proto__',
  'constructor',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '',
  'a\0b',
  '€',
  'x'.repeat(300),
];

const UUID_SHAPED = [
  '00000000-0000-0000-0000-000000000000',
  'ZZZZZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZZZZZZZZZ',
  '0000000-0000-0000-0000-0000000000000',
  '{00000000-0000-0000-0000-000000000000}',
];

const HOSTILE_STRINGS = [
  '',
  ' ',
  ',',
  ',,',
  ' , ',
  '__proto__',
  'constructor',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'prototype',
  '\0',
  'a\0b',
  '\u0000\u0000',
  '€',
  '😀',
  '\ud800',
  '\udfff',
  'é',
  '\u202e',
  '\r\nX-Injected: 1',
  'a\nb',
  '\t',
  '9007199254740991',
  '9007199254740992',
  '9007199254740993',
  '18446744073709551615',
  '18446744073709551616',
  '-1',
  '0',
  '-0',
  '1e308',
  '1e-400',
  'NaN',
  'Infinity',
  '1.5',
  '0x1f',
  '00012',
  '+1',
  'true',
  'null',
  '[]',
  '{}',
  'x'.repeat(300),
  'y'.repeat(20_000),
  "' OR '1'='1",
  '"; DROP TABLE users; --',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '%',
  '%zz',
  '%00',
  '%ff',
  'common',
  'code',
  'authorization_code',
  'refresh_token',
  'device_code',
  'urn:ietf:params:oauth:grant-type:device_code',
  'S256',
  'plain',
  'http://127.0.0.1:9/callback',
  'javascript:alert(1)',
  'approve',
  'deny',
  'confirm',
  'title',
  'updatedAt',
  'asc',
  'desc',
  'last_updated',
  'download_count',
  'ABCD-EFGH',
  'abcdefgh',
  ...UUID_SHAPED,
];

/** Pieces put into a URL exactly as written: percent-encoding that is invalid or decodes to something hostile. */
const RAW_URL_PIECES = [
  '%',
  '%z',
  '%zz',
  '%00',
  '%ff',
  '%FE%FF',
  '%c3%28',
  '%E2%82%AC',
  '%ED%A0%80',
  '%2e%2e',
  '%2F',
  '%u0000',
  '%%30%30',
  '%0d%0a',
  '%20',
  '+',
  '&',
  '=',
  ';',
  '..',
  '%2C%2C',
  '%5B%5D',
];

/** Names of body fields per area, so bodies reach past "unknown property" checks. */
function fieldNamesFor(path: string): string[] {
  if (path.startsWith('/v1/user')) return ['user_id', 'public_key'];
  if (path.startsWith('/v1/mod')) return ['mod_id', 'pull_url'];
  if (path.startsWith('/v1/engram'))
    return ['path', 'label', 'mod_id', 'availability', 'environments', 'can_blueprint'];
  if (path.startsWith('/v1/document'))
    return ['Identifier', 'Title', 'Description', 'LootSources', 'Version', 'Map', 'Difficulty'];
  if (path.startsWith('/v4/projects')) return ['projectId', 'title', 'description', 'gameId', 'revision', 'userId'];
  if (path.startsWith('/v4/user')) return ['userId', 'username', 'publicKey', 'privateKey'];
  if (path.startsWith('/v4/session')) return ['sessionId', 'scopes'];
  if (
    path.startsWith('/v4/login') ||
    path.startsWith('/v4/device') ||
    path.startsWith('/v4/revoke') ||
    path.startsWith('/v4/introspect')
  ) {
    return [
      'grant_type',
      'client_id',
      'client_secret',
      'code',
      'code_verifier',
      'redirect_uri',
      'refresh_token',
      'device_code',
      'scope',
      'code_challenge',
      'code_challenge_method',
      'token',
      'token_type_hint',
      'response_type',
      'state',
    ];
  }
  if (path.startsWith('/account/apps'))
    return ['_csrf', 'name', 'website', 'redirect_uri', 'scope', 'confidential', 'new_secret', 'delete_app'];
  if (path.startsWith('/login') || path.startsWith('/device') || path.startsWith('/account')) {
    return [
      '_csrf',
      'username',
      'password',
      'code',
      'trust_device',
      'decision',
      'user_code',
      'end_session',
      'end_trust',
      'current_password',
      'new_password',
      'two_step',
      'backup_codes',
      // Self-service accounts: sign-up, reset, e-mail change and their links.
      'email',
      'new_email',
      'two_step_code',
      'token',
      'return_to',
    ];
  }
  return PARAM_NAMES.slice(0, 20);
}

class RequestMaker {
  constructor(
    private readonly random: Random,
    private readonly seeded: Seeded,
  ) {}

  /** A random UUID from the seeded generator. */
  private uuid(): string {
    const hex = Array.from({ length: 32 }, () => this.random.int(16).toString(16)).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20)}`;
  }

  /** A plausible value for a field, so requests get past the first check now and then. */
  private plausible(name: string): unknown {
    const s = this.seeded;
    const r = this.random;
    const byName: Record<string, unknown[]> = {
      client_id: [s.clientId, s.confidentialClientId],
      client_secret: [s.clientSecret],
      grant_type: [
        'authorization_code',
        'refresh_token',
        'urn:ietf:params:oauth:grant-type:device_code',
        'device_code',
      ],
      redirect_uri: ['http://127.0.0.1:9/callback', 'http://127.0.0.1:65535/callback'],
      response_type: ['code'],
      code_challenge: ['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'],
      code_challenge_method: ['S256'],
      code_verifier: ['dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'],
      _csrf: [s.csrf, s.developerCsrf],
      name: ['Fuzz App 2', 'ab', 'x'.repeat(65)],
      website: ['https://fuzz.example', 'javascript:alert(1)'],
      scope: ['common', 'common users:read', 'users.private_key:read', ['common', 'users:read'], ['users:update']],
      confidential: ['yes'],
      new_secret: [s.developerClientId],
      delete_app: [s.developerClientId],
      username: [s.username],
      email: ['fuzz@example.com', `${s.username}@example.com`],
      new_email: ['fuzz-new@example.com'],
      decision: ['approve', 'deny'],
      user_code: ['BCDF-GHJK'],
      mod_id: [s.modId, Number(s.modId)],
      path: ['/Game/Mods/Fuzz/PrimalItem_Fuzz.PrimalItem_Fuzz'],
      Identifier: [s.documentId, this.uuid()],
      LootSources: [[], [{}]],
      user_id: [s.v1User.userId],
      public_key: [s.v1User.publicPem],
      projectId: [s.projectId],
      userId: [s.userId],
      availability: [3, ['Island'], 31],
      environments: [['Scorched']],
      can_blueprint: [true],
      Version: [1],
    };
    const known = Object.hasOwn(byName, name) ? byName[name]! : ['Fuzz', 'a'];
    return r.pick(known);
  }

  /** A hostile JSON value: wrong types, extreme numbers, big and deep structures. */
  hostileValue(depth = 0): unknown {
    const r = this.random;
    switch (r.int(12)) {
      case 0:
        return r.pick([2 ** 53, 2 ** 53 + 2, 2 ** 64, -(2 ** 63), 1e308, -1, 0, 1.5, -0, 4294967296]);
      case 1:
        return r.pick([null, true, false]);
      case 2:
        return depth < 2 ? [this.hostileValue(depth + 1), this.hostileValue(depth + 1)] : [];
      case 3:
        return depth < 2 ? { __proto__: null, [r.pick(PARAM_NAMES)]: this.hostileValue(depth + 1) } : {};
      case 4:
        return 'z'.repeat(r.pick([1000, 70_000]));
      case 5:
        return JSON.parse('{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}');
      default:
        return r.pick(HOSTILE_STRINGS);
    }
  }

  private fieldValue(name: string): unknown {
    return this.random.chance(0.55) ? this.plausible(name) : this.hostileValue();
  }

  private object(path: string): Record<string, unknown> {
    const names = fieldNamesFor(path);
    const out: Record<string, unknown> = {};
    for (const name of names) if (this.random.chance(0.6)) out[name] = this.fieldValue(name);
    if (this.random.chance(0.2)) out[this.random.pick(PARAM_NAMES)] = this.hostileValue();
    return out;
  }

  /** A URL-safe rendering of a value: encoded, or hostile percent-encoding as is. */
  private urlPiece(value: string): string {
    if (this.random.chance(0.15)) return this.random.pick(RAW_URL_PIECES);
    return encodeURIComponent(wellFormed(value)).replace(
      /%25(?=[0-9a-fA-F]{2})/g,
      this.random.chance(0.3) ? '%' : '%25',
    );
  }

  private pathValue(name: string): string {
    const s = this.seeded;
    const r = this.random;
    const valid: Record<string, string[]> = {
      id: [s.projectId, s.userId, this.uuid(), s.projectId.toUpperCase()],
      ids: [
        s.documentId,
        s.engramUid,
        s.modId,
        s.v1User.userId,
        `${s.documentId},${s.documentId}`,
        `${s.modId},x`,
        s.engramUid.toUpperCase(),
      ],
      interaction: [s.interactionPath.split('/').pop()!],
      clientId: [s.developerClientId, s.developerClientId.toUpperCase(), s.clientId],
    };
    if (r.chance(0.45) && Object.hasOwn(valid, name)) return r.pick(valid[name]!);
    const parts = Array.from({ length: r.pick([1, 1, 1, 2, 5]) }, () => this.urlPiece(String(r.pick(HOSTILE_STRINGS))));
    return parts.join(r.pick([',', ',', '%2C', ',%20']));
  }

  private path(route: Route): string {
    let path = route.path.replace(/:(\w+)/g, (_, name: string) => this.pathValue(name));
    path = path.replace(/\*$/, () => this.urlPiece(String(this.random.pick(HOSTILE_STRINGS))));
    if (this.random.chance(0.05)) path += '/';
    if (this.random.chance(0.03)) path = path.replace('/', '//');
    return path || '/';
  }

  private query(path: string): string {
    const r = this.random;
    const names = [...fieldNamesFor(path), ...PARAM_NAMES];
    const pairs: string[] = [];
    for (let i = r.pick([0, 0, 1, 2, 3, 6]); i > 0; i--) {
      const name = r.chance(0.8) ? r.pick(names) : r.pick(HOSTILE_STRINGS);
      const value = r.chance(0.5) ? String(this.plausible(name)) : String(r.pick(HOSTILE_STRINGS));
      const pair = r.chance(0.1) ? this.urlPiece(name) : `${this.urlPiece(name)}=${this.urlPiece(value)}`;
      pairs.push(pair);
      if (r.chance(0.15)) pairs.push(pair); // a repeated parameter
    }
    if (r.chance(0.05)) pairs.push(r.pick(['', '=', '&', '==', 'a=b=c']));
    return pairs.length > 0 ? `?${pairs.join('&')}` : r.chance(0.05) ? '?' : '';
  }

  private body(path: string): { type?: string; body?: Buffer } {
    const r = this.random;
    const json = (value: unknown) => Buffer.from(JSON.stringify(value));
    switch (r.int(16)) {
      case 0:
        return {};
      case 1:
        return { type: 'application/json', body: Buffer.alloc(0) };
      case 2: {
        const depth = r.pick([100, 5000, 20_000]);
        const key = r.pick(fieldNamesFor(path));
        return {
          type: 'application/json',
          body: Buffer.from(`{${JSON.stringify(key)}:${'['.repeat(depth)}1${']'.repeat(depth)}}`),
        };
      }
      case 3:
        return {
          type: r.pick(['application/json', 'text/plain']),
          body: Buffer.alloc(r.pick([1024 * 1024 + 1, 300_000]), 'a'),
        };
      case 4:
        return {
          type: 'application/json',
          body: Buffer.from(
            r.pick([
              '{',
              '[',
              '{"a":}',
              'nul',
              '"\\u0000"',
              '{"a":"\\ud800"}',
              '1e99999',
              '[1,]',
              '\u0000',
              '{"a":1}{"b":2}',
            ]),
          ),
        };
      case 5:
        return {
          type: r.pick(['application/json', 'application/x-www-form-urlencoded', 'text/plain']),
          body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x00, 0x22, 0x7d]),
        };
      case 6:
        // Many elements, or a few hostile ones (a thousand elements with 70 KB strings would only test the 1 MiB limit).
        return {
          type: 'application/json',
          body: json(
            r.chance(0.2)
              ? Array.from({ length: 1200 }, () => ({
                  [r.pick(fieldNamesFor(path))]: this.plausible(r.pick(fieldNamesFor(path))),
                }))
              : Array.from({ length: r.pick([0, 1, 3]) }, () => this.object(path)),
          ),
        };
      case 7: {
        const form = new URLSearchParams();
        for (const [name, value] of Object.entries(this.object(path))) {
          form.append(name, typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
          if (r.chance(0.15)) form.append(name, 'again');
        }
        return { type: 'application/x-www-form-urlencoded', body: Buffer.from(form.toString()) };
      }
      case 8:
        return {
          type: 'text/plain',
          body: Buffer.from(
            Array.from({ length: r.pick([0, 1, 3, 2000]) }, () => this.pathValue('ids')).join(
              r.pick([',', ', ', '\n']),
            ),
          ),
        };
      case 9:
        return {
          type: r.pick([
            'application/xml',
            'multipart/form-data; boundary=x',
            'text/html',
            'application/json; charset=utf-16',
            'application/json; charset=latin1',
            'application/octet-stream',
            '*/*',
            'application/json, text/plain',
            'application/x-www-form-urlencoded; charset=utf-7',
            ';;',
            'application/JSON',
            'text/plain; charset=utf-8',
          ]),
          body: json(this.object(path)),
        };
      case 10:
        return { body: json(this.object(path)) };
      case 11:
        return { type: 'application/json', body: json(this.hostileValue()) };
      default:
        return { type: 'application/json', body: json(this.object(path)) };
    }
  }

  make(route: Route): { method: string; path: string; headers: Record<string, string>; body?: Buffer } {
    const r = this.random;
    const s = this.seeded;
    const method = r.chance(0.85) ? r.pick(route.methods) : r.pick(METHODS);
    const path = this.path(route) + this.query(route.path);
    const headers: Record<string, string> = {};
    const { type, body } =
      method === 'GET' || method === 'HEAD' ? (r.chance(0.1) ? this.body(route.path) : {}) : this.body(route.path);
    if (type) headers['content-type'] = type;
    if (r.chance(0.1))
      headers['accept-encoding'] = r.pick([
        'br',
        'gzip',
        'deflate',
        'identity;q=0',
        '*',
        'gzip;q=abc',
        'x'.repeat(500),
      ]);
    if (r.chance(0.05)) headers['if-none-match'] = r.pick(['*', '"x"', 'W/"1"', '"\u00ff"', ',,,']);
    if (r.chance(0.05))
      headers['x-forwarded-for'] = r.pick(['1.2.3.4', 'garbage', '::1, 2001:db8::1', '999.999.999.999']);
    if (r.chance(0.03)) headers['content-encoding'] = r.pick(['gzip', 'br', 'identity', 'bogus']);
    if (r.chance(0.03)) headers.origin = 'https://evil.example';
    if (
      route.path.startsWith('/login') ||
      route.path.startsWith('/device') ||
      route.path.startsWith('/account') ||
      r.chance(0.05)
    ) {
      const browserCookie = route.path.startsWith('/account/apps') ? s.developerCookie : s.cookie;
      if (r.chance(0.8))
        headers.cookie = r.chance(0.9)
          ? browserCookie
          : r.pick(['sid=%00', 'sid=__proto__', '_csrf=; sid=', 'a'.repeat(3000)]);
    }
    const isV1 = route.path.startsWith('/v1/');
    // Never sign the deletion of the seeded v1 user, nor end the full token's session: later requests need them.
    const protectedWrite =
      (isV1 && method === 'DELETE' && route.path.startsWith('/v1/user')) ||
      (method === 'DELETE' && route.path.startsWith('/v4/session'));
    const auth = r.int(10);
    if (isV1 && auth < 6 && !protectedWrite && method !== 'HEAD') {
      Object.assign(headers, signedHeaders(s.v1User, method, path, body?.toString('utf8'), type));
      if (!type) delete headers['content-type'];
    } else if (auth < 4) {
      headers.authorization = `Bearer ${protectedWrite ? s.accessToken : r.pick([s.fullToken, s.fullToken, s.accessToken])}`;
    } else if (auth === 4) {
      headers['x-service-token'] = protectedWrite ? 'nope' : s.fullToken;
    } else if (auth === 5) {
      headers.authorization = r.pick([
        'Bearer',
        'Bearer x',
        'Basic',
        'Basic !!!',
        `Basic ${Buffer.from(`${s.confidentialClientId}:${s.clientSecret}`).toString('base64')}`,
        `Basic ${Buffer.from(`${s.confidentialClientId}\0:x`).toString('base64')}`,
        `Basic ${Buffer.from('__proto__:toString').toString('base64')}`,
        `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0xc3, 0x28]).toString('base64')}`,
        `Basic ${Buffer.from(`${s.v1User.userId}:zz`).toString('base64')}`,
        `Basic ${Buffer.from('nocolon').toString('base64')}`,
        'Digest username="x"',
        `Bearer ${'t'.repeat(4000)}`,
      ]);
    }
    return { method, path, headers, body };
  }
}

test(`every route answers hostile input with a 4xx in a documented shape (seed ${seed})`, {
  timeout: 600_000,
}, async () => {
  console.log(`fuzz seed ${seed} (repeat with FUZZ_SEED=${seed}); ${REQUESTS} requests`);
  const routes = listRoutes(seeded.server.app);
  assert.ok(routes.length > 20, `too few routes found: ${routes.map((route) => route.path).join(' ')}`);
  // Unknown paths are part of the surface too.
  routes.push(
    { path: '/no/such/path', methods: ['GET'] },
    { path: '/v1/', methods: ['GET'] },
    { path: '/v4/:id', methods: ['GET', 'POST'] },
  );
  const random = new Random(seed);
  const maker = new RequestMaker(random, seeded);
  // Requests go round the routes, so every route gets its share.
  // One example per kind of failure (problem, route, method), so one bug does not hide the others.
  const failures = new Map<string, { example: string; count: number }>();
  const statuses = new Map<number, number>();
  let next = 0;
  const started = Date.now();
  async function worker() {
    while (next < REQUESTS) {
      const index = next++;
      // Made when sent, in index order (each make() is synchronous), so the seed alone repeats the run.
      const route = routes[index % routes.length]!;
      const request = { route, ...maker.make(route) };
      const label = `#${index} ${request.method} ${request.path.slice(0, 200)} [${request.headers['content-type'] ?? 'no type'}, ${request.body?.length ?? 0} bytes${request.headers.authorization ? `, ${request.headers.authorization.split(' ')[0]}` : ''}]`;
      let problems: string[];
      let example: string;
      try {
        const answer = await send(
          seeded.server.url,
          request.method,
          request.path,
          request.headers,
          request.body,
          label,
        );
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        const headBytes =
          request.path.length +
          Object.entries(request.headers).reduce((sum, [name, value]) => sum + name.length + value.length + 4, 0);
        problems = problemsOf(request.method, request.path, answer, headBytes);
        example = `${label} -> ${answer.status} ${answer.body.toString('utf8').slice(0, 300)} (after ${answer.previous ?? 'nothing'} on that connection)`;
      } catch (error) {
        problems = [(error as Error).message];
        example = label;
      }
      for (const problem of problems) {
        const key = `${problem.replace(/\d+-byte/, 'n-byte')} on ${request.method === 'HEAD' ? 'HEAD' : 'any'} ${request.route.path}`;
        const seen = failures.get(key);
        if (seen) seen.count++;
        else failures.set(key, { example, count: 1 });
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  console.log(
    `${next} requests in ${Date.now() - started} ms; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
  );
  const report = [...failures].map(([key, { example, count }]) => `${key} (${count}x), e.g. ${example}`);
  assert.deepEqual(report, [], `fuzz seed ${seed}: ${failures.size} kinds of failing answers`);
});

/** The string with lone surrogates replaced, as its UTF-8 bytes would carry it. */
function wellFormed(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}
