import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createAccount } from '../../src/accounts/accounts.ts';
import { createApplication } from '../../src/oauth/clients.ts';
import type { Reply, TestServer } from './server.ts';

export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

export function pkcePair() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export async function newApp(
  server: TestServer,
  options: { scopes?: string[]; confidential?: boolean; redirectUris?: string[]; name?: string } = {},
) {
  return createApplication(server.app.database.db, {
    name: options.name ?? 'Test App',
    redirectUris: options.redirectUris ?? [REDIRECT_URI],
    scopes: options.scopes ?? ['common', 'users:read', 'users:update'],
    confidential: options.confidential ?? false,
  });
}

let accounts = 0;
export async function newAccount(server: TestServer, options: { totpSecret?: string; password?: string } = {}) {
  const username = `user${process.pid}x${++accounts}${randomBytes(3).toString('hex')}`;
  const password = options.password ?? 'correct horse battery';
  const userId = await createAccount(
    server.app.database.db,
    {
      username,
      email: `${username}@example.com`,
      password,
      ...(options.totpSecret ? { totpSecret: options.totpSecret } : {}),
    },
    server.app.secrets,
  );
  return { userId, username, password, email: `${username}@example.com` };
}

/** A minimal browser: follows nothing by itself, keeps cookies, reads forms' CSRF tokens. */
export class FormClient {
  private cookies = new Map<string, string>();
  constructor(private readonly server: TestServer) {}

  /** `form` as URLSearchParams may repeat a field (checkboxes). */
  async fetch(
    pathOrUrl: string,
    init: { method?: string; form?: Record<string, string> | URLSearchParams; headers?: Record<string, string> } = {},
  ) {
    const url = pathOrUrl.startsWith('http') ? pathOrUrl : this.server.url + pathOrUrl;
    const headers: Record<string, string> = {
      ...init.headers,
      cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
    };
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const response = await fetch(url, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      headers,
      body,
      redirect: 'manual',
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, ...value] = pair!.split('=');
      if (/expires=Thu, 01 Jan 1970/i.test(line) || /max-age=0/i.test(line)) this.cookies.delete(name!.trim());
      else this.cookies.set(name!.trim(), value.join('='));
    }
    const text = await response.text();
    return { status: response.status, location: response.headers.get('location'), text, headers: response.headers };
  }

  /** The Cookie header this browser sends. */
  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** GETs a page and submits its form (the one whose action matches) with `fields`. */
  async submit(pagePath: string, fields: Record<string, string>, actionPattern?: RegExp) {
    const page = await this.fetch(pagePath);
    assert.equal(page.status, 200, page.text);
    return this.submitOn(page.text, fields, actionPattern);
  }

  /** `headers` are sent as well (X-Forwarded-For, to come from another address behind TRUST_PROXY). */
  submitOn(html: string, fields: Record<string, string>, actionPattern?: RegExp, headers?: Record<string, string>) {
    const forms = [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)];
    const form = forms.find(([, action]) => !actionPattern || actionPattern.test(action!));
    assert.ok(form, `no form${actionPattern ? ` matching ${actionPattern}` : ''} in ${html}`);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form[2]!)?.[1];
    assert.ok(csrf, 'form without CSRF token');
    return this.fetch(form[1]!.replace(/&amp;/g, '&'), {
      form: { _csrf: csrf, ...fields },
      ...(headers ? { headers } : {}),
    });
  }
}

/** Starts a login at GET /v4/login and answers the interaction path (/login/…). */
export async function startLogin(server: TestServer, params: Record<string, string>) {
  const query = new URLSearchParams({
    response_type: 'code',
    state: 'st4te',
    scope: 'common',
    code_challenge_method: 'S256',
    redirect_uri: REDIRECT_URI,
    ...params,
  });
  const reply = await server.request('GET', `/v4/login?${query}&no_redirect=true`);
  assert.equal(reply.status, 200, reply.text);
  return new URL(reply.body.login_url).pathname;
}

/**
 * Runs the whole browser flow through the forms and answers the redirect back to the client
 * (its URL), approving (or denying) consent.
 */
export async function authorize(
  server: TestServer,
  options: {
    clientId: string;
    challenge: string;
    username: string;
    password: string;
    scope?: string;
    totpCode?: () => string;
    deviceId?: string;
    decision?: 'approve' | 'deny';
    browser?: FormClient;
    redirectUri?: string;
  },
) {
  const browser = options.browser ?? new FormClient(server);
  const page = await startLogin(server, {
    client_id: options.clientId,
    code_challenge: options.challenge,
    ...(options.redirectUri ? { redirect_uri: options.redirectUri } : {}),
    ...(options.scope ? { scope: options.scope } : {}),
    ...(options.deviceId ? { device_id: options.deviceId } : {}),
  });
  let current = await browser.fetch(page);
  if (current.text.includes('name="password"')) {
    const signedIn = await browser.submitOn(current.text, { username: options.username, password: options.password });
    assert.equal(signedIn.status, 303, signedIn.text);
    current = await browser.fetch(page);
  }
  if (current.text.includes('name="code"')) {
    assert.ok(options.totpCode, 'a two-step code was asked for');
    const verified = await browser.submitOn(current.text, {
      code: options.totpCode(),
      ...(options.deviceId ? { trust_device: 'yes' } : {}),
    });
    assert.equal(verified.status, 303, verified.text);
    current = await browser.fetch(page);
  }
  assert.match(current.text, /name="decision"/, current.text);
  const decided = await browser.submitOn(current.text, { decision: options.decision ?? 'approve' }, /consent$/);
  assert.equal(decided.status, 303, decided.text);
  return new URL(decided.location!);
}

export async function tokenRequest(
  server: TestServer,
  params: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return server.request('POST', '/v4/login', {
    body: new URLSearchParams(params).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
}

/**
 * Signs `account` in to `app` through the login pages and the token endpoint (a confidential app
 * sends its client_secret); answers the token response.
 */
export async function tokensThroughPages(
  server: TestServer,
  app: { clientId: string; clientSecret?: string | null },
  account: { username: string; password: string },
  scope = 'common users:read',
) {
  const { verifier, challenge } = pkcePair();
  const back = await authorize(server, {
    clientId: app.clientId,
    challenge,
    username: account.username,
    password: account.password,
    scope,
  });
  const reply = await tokenRequest(server, {
    grant_type: 'authorization_code',
    client_id: app.clientId,
    code: back.searchParams.get('code')!,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
    ...(app.clientSecret ? { client_secret: app.clientSecret } : {}),
  });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as { access_token: string; refresh_token: string } & Record<string, any>;
}

/** Signs a new account in to a new public app and answers the token response. */
export async function signedInTokens(server: TestServer, scope = 'common users:read') {
  const app = await newApp(server, { scopes: scope.split(' ') });
  const account = await newAccount(server);
  return { app, account, tokens: await tokensThroughPages(server, app, account, scope) };
}

/** An RFC 6749 §5.2 error: exactly {error, error_description}, JSON, not cached (no WWW-Authenticate on a 400). */
export function assertOAuthError(reply: Reply, error: string, status = 400) {
  assert.equal(reply.status, status, reply.text);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(reply.headers.get('cache-control'), 'no-store');
  assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'error_description']);
  assert.equal(reply.body.error, error, reply.text);
  assert.equal(typeof reply.body.error_description, 'string');
  assert.ok(reply.body.error_description.length > 0);
  if (status === 400) assert.equal(reply.headers.get('www-authenticate'), null);
}
