/**
 * OpenID Connect through real relying parties: openid-client 6 configured by discovery alone
 * (code flow with PKCE and nonce, the ID token checked through the JWKS, UserInfo, refresh), jose's
 * remote JWKS, key rotation through the admin CLI (one instance and two on one database), the
 * request parameters (nonce, prompt, max_age, login_hint, id_token_hint) and ES256 and EdDSA
 * applications.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createRemoteJWKSet, decodeProtectedHeader, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import * as openid from 'openid-client';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { authorize, FormClient, newAccount, newApp, pkcePair, REDIRECT_URI, tokenRequest } from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestServer } from '../helpers/server.ts';

type Account = Awaited<ReturnType<typeof newAccount>>;

let server: TestServer;
let account: Account;

before(async () => {
  server = await startServer({ baseUrlIsOwnAddress: true });
  account = await newAccount(server);
});
after(() => server.close());

function admin(databaseUrl: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'node_modules/.bin/tsx',
      ['src/cli/admin.ts', ...args],
      { env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/** OpenID Connect discovery; `oauth2`: RFC 8414's (a plain OAuth client, which expects no ID token). */
const discover = (clientId: string, algorithm: 'oidc' | 'oauth2' = 'oidc') =>
  openid.discovery(new URL(server.url), clientId, undefined, openid.None(), {
    execute: [openid.allowInsecureRequests],
    algorithm,
  });

/** The browser: signs in (unless already) and approves; answers the URL the application was sent back to. */
async function approve(browser: FormClient, authorizationUrl: string): Promise<URL> {
  const start = await browser.fetch(authorizationUrl);
  assert.equal(start.status, 302, start.text);
  const page = start.location!;
  assert.ok(page.includes('/login/'), page);
  let current = await browser.fetch(page);
  if (current.text.includes('name="password"')) {
    const signedIn = await browser.submitOn(current.text, { username: account.username, password: account.password });
    assert.equal(signedIn.status, 303, signedIn.text);
    current = await browser.fetch(page);
  }
  const decided = await browser.submitOn(current.text, { decision: 'approve' }, /consent$/);
  assert.equal(decided.status, 303, decided.text);
  return new URL(decided.location!);
}

/** A code flow of openid-client with PKCE and a nonce; answers the token response and the browser. */
async function codeFlow(clientId: string, scope = 'openid profile email', browser = new FormClient(server)) {
  const signsIn = scope.split(' ').includes('openid');
  const config = await discover(clientId, signsIn ? 'oidc' : 'oauth2');
  const verifier = openid.randomPKCECodeVerifier();
  const state = openid.randomState();
  const nonce = signsIn ? openid.randomNonce() : undefined;
  const url = openid.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope,
    state,
    ...(nonce ? { nonce } : {}),
    code_challenge: await openid.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const callback = await approve(browser, url.href);
  const tokens = await openid.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    ...(nonce ? { expectedNonce: nonce } : {}),
    idTokenExpected: signsIn,
  });
  return { config, tokens, nonce, browser };
}

/** The query of an authorization request, with a fresh PKCE challenge. */
function authorizationQuery(clientId: string, extra: Record<string, string>) {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: 'openid',
    state: 'st4te',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    ...extra,
  });
}

/** The error an authorization request is answered with at the redirect URI. */
async function redirectedError(browser: FormClient, clientId: string, extra: Record<string, string>) {
  const reply = await browser.fetch(`/v4/login?${authorizationQuery(clientId, extra)}`);
  assert.equal(reply.status, 302, reply.text);
  const location = new URL(reply.location!);
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
  assert.equal(location.searchParams.get('code'), null, 'nothing issued');
  assert.equal(location.searchParams.get('state'), 'st4te');
  return location.searchParams;
}

describe('OpenID Connect with openid-client 6', () => {
  test('discovery: the OpenID metadata is the RFC 8414 document plus OpenID fields', async () => {
    const oidc = await server.request('GET', '/.well-known/openid-configuration');
    const oauth = await server.request('GET', '/.well-known/oauth-authorization-server');
    assert.equal(oidc.status, 200);
    for (const [name, value] of Object.entries(oauth.body)) assert.deepEqual(oidc.body[name], value, name);
    assert.equal(oidc.body.jwks_uri, `${server.url}/v4/jwks`);
    assert.equal(oidc.body.userinfo_endpoint, `${server.url}/v4/userinfo`);
    assert.equal(oidc.body.end_session_endpoint, `${server.url}/v4/logout`);
    assert.deepEqual(oidc.body.id_token_signing_alg_values_supported, ['RS256', 'ES256', 'EdDSA']);
    assert.deepEqual(oidc.body.subject_types_supported, ['public']);
    assert.deepEqual(oidc.body.prompt_values_supported, ['none', 'login', 'consent']);
    for (const scope of ['openid', 'profile', 'email']) assert.ok(oidc.body.scopes_supported.includes(scope));
    for (const claim of ['sub', 'sid', 'at_hash', 'auth_time', 'amr', 'nonce', 'email', 'preferred_username'])
      assert.ok(oidc.body.claims_supported.includes(claim), claim);
    assert.equal(oidc.body.backchannel_logout_supported, true);
    assert.equal(oidc.body.backchannel_logout_session_supported, true);
    assert.equal(oidc.body.claims_parameter_supported, false);
    assert.equal(oidc.body.request_parameter_supported, false);
    assert.equal(oidc.body.request_uri_parameter_supported, false);

    const jwks = await server.request('GET', '/v4/jwks');
    assert.equal(jwks.status, 200);
    assert.match(jwks.headers.get('cache-control') ?? '', /max-age=\d+/);
    assert.deepEqual(
      new Set(jwks.body.keys.map((key: { alg: string }) => key.alg)),
      new Set(['RS256', 'ES256', 'EdDSA']),
    );
    for (const key of jwks.body.keys) {
      assert.equal(key.use, 'sig');
      assert.equal(typeof key.kid, 'string');
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) assert.equal(key[secret], undefined, secret);
    }
  });

  test('code flow with nonce: ID token checked through the JWKS, UserInfo, refresh keeps auth_time', async () => {
    const app = await newApp(server, { scopes: ['common'] });
    const before = Math.floor(Date.now() / 1000);
    const { config, tokens, nonce } = await codeFlow(app.clientId);
    const claims = tokens.claims()!;
    assert.equal(claims.iss, server.url);
    assert.equal(claims.sub, account.userId);
    assert.equal(claims.aud, app.clientId);
    assert.equal(claims.azp, app.clientId);
    assert.equal(claims.nonce, nonce);
    assert.ok(typeof claims.auth_time === 'number' && claims.auth_time >= before - 1);
    assert.ok(claims.exp <= Math.floor(Date.now() / 1000) + (tokens.expires_in ?? 0) + 1);
    assert.deepEqual(claims.amr, ['pwd']);
    assert.equal(claims.preferred_username, account.username);
    assert.equal(claims.email, account.email);
    assert.equal(claims.email_verified, true);
    assert.equal(typeof claims.updated_at, 'number');
    // sid is the v4 session id: the introspection-free way to tell, the session list of the user.
    assert.match(String(claims.sid), /^[0-9a-f-]{36}$/);
    assert.equal(decodeProtectedHeader(tokens.id_token!).alg, 'RS256');
    const expectedAtHash = createHash('sha256')
      .update(tokens.access_token)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
    assert.equal(claims.at_hash, expectedAtHash);

    // jose's remote JWKS verifies it on its own.
    const jwks = createRemoteJWKSet(new URL(`${server.url}/v4/jwks`));
    const verified = await jwtVerify(tokens.id_token!, jwks, { issuer: server.url, audience: app.clientId });
    assert.equal(verified.payload.sub, account.userId);

    const info = await openid.fetchUserInfo(config, tokens.access_token, account.userId);
    assert.deepEqual(info, {
      sub: account.userId,
      preferred_username: account.username,
      updated_at: claims.updated_at,
      email: account.email,
      email_verified: true,
    });
    const posted = await server.request('POST', '/v4/userinfo', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    assert.equal(posted.status, 200);
    assert.equal(posted.body.sub, account.userId);

    const refreshed = await openid.refreshTokenGrant(config, tokens.refresh_token!);
    const again = refreshed.claims()!;
    assert.ok(refreshed.id_token);
    assert.equal(again.auth_time, claims.auth_time);
    assert.equal(again.sid, claims.sid);
    assert.equal(again.nonce, undefined);
    assert.equal(again.sub, account.userId);
  });

  test('UserInfo: a token without openid is 403 insufficient_scope, a bad one 401, each with WWW-Authenticate', async () => {
    const app = await newApp(server, { scopes: ['common'] });
    const { tokens } = await codeFlow(app.clientId, 'common');
    assert.equal(tokens.id_token, undefined);
    const noOpenId = await server.request('GET', '/v4/userinfo', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    assert.equal(noOpenId.status, 403);
    assert.equal(noOpenId.body.error, 'insufficient_scope');
    assert.match(noOpenId.headers.get('www-authenticate') ?? '', /^Bearer error="insufficient_scope"/);
    const bad = await server.request('GET', '/v4/userinfo', { headers: { authorization: 'Bearer not-a-token' } });
    assert.equal(bad.status, 401);
    assert.match(bad.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
  });

  test('only the scopes granted give claims: openid alone is sub', async () => {
    const app = await newApp(server, { scopes: ['common'] });
    const { config, tokens } = await codeFlow(app.clientId, 'openid');
    const claims = tokens.claims()!;
    assert.equal(claims.email, undefined);
    assert.equal(claims.preferred_username, undefined);
    assert.deepEqual(await openid.fetchUserInfo(config, tokens.access_token, account.userId), { sub: account.userId });
  });

  test('a sign-in with a two-step code gives amr pwd, otp and mfa', async () => {
    const secret = newTotpSecret();
    const person = await newAccount(server, { totpSecret: secret });
    const app = await newApp(server, { scopes: ['common'] });
    const { verifier, challenge } = pkcePair();
    const back = await authorize(server, {
      clientId: app.clientId,
      challenge,
      username: person.username,
      password: person.password,
      scope: 'openid',
      totpCode: () => totpCode(secret),
    });
    const reply = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      code: back.searchParams.get('code')!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    assert.equal(reply.status, 200, reply.text);
    const claims = JSON.parse(Buffer.from(reply.body.id_token.split('.')[1], 'base64url').toString());
    assert.deepEqual(claims.amr, ['pwd', 'otp', 'mfa']);
    assert.equal(claims.sub, person.userId);
  });

  for (const [alg, hash] of [
    ['ES256', 'sha256'],
    ['EdDSA', 'sha512'],
  ] as const) {
    test(`an application that chose ${alg} gets ID tokens signed ${alg}, at_hash by ${hash}`, async () => {
      const created = await admin(
        server.config.database.kind === 'sqlite' ? `sqlite:${server.config.database.path}` : server.config.database.url,
        'app',
        'create',
        '--name',
        `${alg} app`,
        '--redirect-uri',
        REDIRECT_URI,
        '--id-token-alg',
        alg,
        '--json',
      );
      assert.equal(created.code, 0, created.stderr);
      const app = { clientId: JSON.parse(created.stdout).client_id as string };
      const config = await discover(app.clientId);
      assert.ok(config.serverMetadata().id_token_signing_alg_values_supported?.includes(alg));
      const { tokens } = await codeFlow(app.clientId, 'openid');
      assert.equal(decodeProtectedHeader(tokens.id_token!).alg, alg);
      const digest = createHash(hash).update(tokens.access_token).digest();
      assert.equal(tokens.claims()!.at_hash, digest.subarray(0, digest.length / 2).toString('base64url'));
      const jwks = createRemoteJWKSet(new URL(`${server.url}/v4/jwks`));
      await jwtVerify(tokens.id_token!, jwks, { issuer: server.url, audience: app.clientId, algorithms: [alg] });
    });
  }
});

describe('authorization request parameters', () => {
  let clientId: string;
  before(async () => {
    clientId = (await newApp(server, { scopes: ['common'] })).clientId;
  });

  test('a nonce of 300 characters, an unknown prompt, prompt=none with login: invalid_request, nothing issued', async () => {
    const browser = new FormClient(server);
    for (const extra of [
      { nonce: 'n'.repeat(300) },
      { prompt: 'select_account' },
      { prompt: 'none login' },
      { max_age: 'soon' },
    ] as Record<string, string>[]) {
      const error = await redirectedError(browser, clientId, extra);
      assert.equal(error.get('error'), 'invalid_request', JSON.stringify(extra));
      assert.ok(error.get('error_description'));
    }
  });

  test('prompt=none: login_required when signed out, consent_required before any grant, a code once granted', async () => {
    const browser = new FormClient(server);
    assert.equal((await redirectedError(browser, clientId, { prompt: 'none' })).get('error'), 'login_required');

    const other = (await newApp(server, { scopes: ['common'] })).clientId;
    const { tokens } = await codeFlow(clientId, 'openid', browser);
    assert.equal((await redirectedError(browser, other, { prompt: 'none' })).get('error'), 'consent_required');
    // The browser is signed in and has granted openid: a code at once, whose ID token names the same sign-in.
    const { verifier, challenge } = pkcePair();
    const reply = await browser.fetch(
      `/v4/login?${authorizationQuery(clientId, { prompt: 'none', nonce: 'silent', code_challenge: challenge })}`,
    );
    assert.equal(reply.status, 302);
    const code = new URL(reply.location!).searchParams.get('code');
    assert.ok(code, reply.location!);
    const exchanged = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: clientId,
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    assert.equal(exchanged.status, 200, exchanged.text);
    const silent = JSON.parse(Buffer.from(exchanged.body.id_token.split('.')[1], 'base64url').toString());
    assert.equal(silent.nonce, 'silent');
    assert.equal(silent.auth_time, tokens.claims()!.auth_time);
    assert.notEqual(silent.sid, tokens.claims()!.sid);

    // max_age=0 asks for a sign-in newer than the request: prompt=none cannot give that.
    assert.equal(
      (await redirectedError(browser, clientId, { prompt: 'none', max_age: '0' })).get('error'),
      'login_required',
    );
  });

  test('prompt=login and max_age show the sign-in page again, pre-filled by login_hint', async () => {
    const { browser, tokens } = await codeFlow(clientId, 'openid');
    const first = tokens.claims()!.auth_time!;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    for (const extra of [{ prompt: 'login' }, { max_age: '0' }] as Record<string, string>[]) {
      const start = await browser.fetch(
        `/v4/login?${authorizationQuery(clientId, { ...extra, login_hint: 'hinted-name' })}`,
      );
      assert.equal(start.status, 302);
      const page = await browser.fetch(start.location!);
      assert.match(page.text, /name="password"/, JSON.stringify(extra));
      assert.match(page.text, /value="hinted-name"/);
    }
    // Without prompt or max_age the same sign-in serves: the same auth_time.
    const again = await codeFlow(clientId, 'openid', browser);
    assert.equal(again.tokens.claims()!.auth_time, first, 'no prompt: the same sign-in');
  });

  test('id_token_hint: ours is accepted (expired or not); a forged or foreign one is invalid_request', async () => {
    const { browser, tokens } = await codeFlow(clientId, 'openid');
    const { verifier, challenge } = pkcePair();
    const accepted = await browser.fetch(
      `/v4/login?${authorizationQuery(clientId, { prompt: 'none', id_token_hint: tokens.id_token!, code_challenge: challenge })}`,
    );
    assert.ok(new URL(accepted.location!).searchParams.get('code'), accepted.location!);
    const exchanged = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: clientId,
      code: new URL(accepted.location!).searchParams.get('code')!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    assert.equal(exchanged.status, 200, exchanged.text);

    const header = decodeProtectedHeader(tokens.id_token!);
    const [h, p] = tokens.id_token!.split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url')}.${tokens.id_token!.split('.')[2]}`;
    const { privateKey } = await generateKeyPair('RS256');
    const foreignKey = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: header.kid! })
      .sign(privateKey);
    const foreignIssuer = await new SignJWT({ ...claims, iss: 'https://elsewhere.example' })
      .setProtectedHeader({ alg: 'RS256', kid: 'other' })
      .sign(privateKey);
    const otherApp = (await newApp(server, { scopes: ['common'] })).clientId;
    for (const [name, hint, client] of [
      ['tampered', tampered, clientId],
      ['signed by another key', foreignKey, clientId],
      ['another issuer', foreignIssuer, clientId],
      ['not a JWT', 'abc', clientId],
      ['issued to another application', tokens.id_token!, otherApp],
    ] as const) {
      const error = await redirectedError(browser, client, { id_token_hint: hint });
      assert.equal(error.get('error'), 'invalid_request', name);
    }
  });
});

describe('registration', () => {
  const databaseUrl = () =>
    server.config.database.kind === 'sqlite' ? `sqlite:${server.config.database.path}` : server.config.database.url;

  test('admin app create stores post-logout redirect URIs, the back-channel URI and the algorithm; bad ones are refused', async () => {
    const created = await admin(
      databaseUrl(),
      ...['app', 'create', '--name', 'Logout app', '--redirect-uri', REDIRECT_URI, '--json'],
      ...[
        '--post-logout-redirect-uri',
        'https://app.example/bye',
        '--post-logout-redirect-uri',
        'http://127.0.0.1/bye',
      ],
      ...['--backchannel-logout-uri', 'https://app.example/backchannel', '--id-token-alg', 'EdDSA'],
    );
    assert.equal(created.code, 0, created.stderr);
    const clientId = JSON.parse(created.stdout).client_id;
    const row = await server.app.database.db
      .selectFrom('applications')
      .select(['post_logout_redirect_uris', 'backchannel_logout_uri', 'id_token_signed_response_alg'])
      .where('client_id', '=', clientId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(row.post_logout_redirect_uris!), ['https://app.example/bye', 'http://127.0.0.1/bye']);
    assert.equal(row.backchannel_logout_uri, 'https://app.example/backchannel');
    assert.equal(row.id_token_signed_response_alg, 'EdDSA');

    for (const [bad, message] of [
      [['--id-token-alg', 'HS256'], /RS256, ES256, EdDSA/],
      [['--backchannel-logout-uri', 'http://app.example/bc'], /https/],
      [['--post-logout-redirect-uri', 'https://app.example/#x'], /fragment/],
    ] as const) {
      const refused = await admin(
        databaseUrl(),
        ...['app', 'create', '--name', 'Bad', '--redirect-uri', REDIRECT_URI],
        ...bad,
      );
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, message);
    }
  });
});

describe('key rotation', () => {
  test('keys rotate --now: tokens from before and after verify through the JWKS fetched afterwards; without --now the new key waits', async () => {
    const database = await freshDatabase();
    const instance = await startServer({ database, baseUrlIsOwnAddress: true, keyReloadIntervalMs: 500 });
    const other = await startServer({ database, keyReloadIntervalMs: 500 });
    try {
      const app = await newApp(instance, { scopes: ['common'] });
      const person = await newAccount(instance);
      const signIn = async () => {
        const { verifier, challenge } = pkcePair();
        const browser = new FormClient(instance);
        const start = await browser.fetch(
          `/v4/login?${authorizationQuery(app.clientId, { code_challenge: challenge })}`,
        );
        const page = start.location!;
        await browser.submitOn((await browser.fetch(page)).text, {
          username: person.username,
          password: person.password,
        });
        const decided = await browser.submitOn((await browser.fetch(page)).text, { decision: 'approve' }, /consent$/);
        const reply = await tokenRequest(instance, {
          grant_type: 'authorization_code',
          client_id: app.clientId,
          code: new URL(decided.location!).searchParams.get('code')!,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
        });
        assert.equal(reply.status, 200, reply.text);
        return reply.body.id_token as string;
      };
      const list = async () => {
        const run = await admin(database.url, 'keys', 'list', '--json');
        assert.equal(run.code, 0, run.stderr);
        return JSON.parse(run.stdout) as Array<{ kid: string; alg: string; state: string; created: string }>;
      };
      const kidsOf = async (server: TestServer) =>
        new Set(((await server.request('GET', '/v4/jwks')).body.keys as Array<{ kid: string }>).map((k) => k.kid));

      const before = await signIn();
      const initial = await list();
      assert.equal(initial.length, 3);
      assert.ok(initial.every((key) => key.state === 'current' && !Number.isNaN(Date.parse(key.created))));

      const rotated = await admin(database.url, 'keys', 'rotate', '--now');
      assert.equal(rotated.code, 0, rotated.stderr);
      const afterRotation = await list();
      assert.equal(afterRotation.filter((key) => key.state === 'current').length, 3);
      assert.equal(afterRotation.filter((key) => key.state === 'retired').length, 3);
      const newRs256 = afterRotation.find((key) => key.alg === 'RS256' && key.state === 'current')!.kid;

      // Both instances see the rotation without a restart, within the reload interval.
      const deadline = Date.now() + 60_000;
      while (!(await kidsOf(other)).has(newRs256) || !(await kidsOf(instance)).has(newRs256)) {
        assert.ok(Date.now() < deadline, 'the rotation was not seen within 60 s');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const after = await signIn();
      assert.equal(decodeProtectedHeader(after).kid, newRs256);
      assert.notEqual(decodeProtectedHeader(before).kid, newRs256);
      const jwks = createRemoteJWKSet(new URL(`${instance.url}/v4/jwks`));
      for (const token of [before, after])
        await jwtVerify(token, jwks, { issuer: instance.url, audience: app.clientId });

      // Without --now: published at once, signing only after an hour.
      const announced = await admin(database.url, 'keys', 'rotate');
      assert.equal(announced.code, 0, announced.stderr);
      const withNext = await list();
      const next = withNext.filter((key) => key.state === 'next');
      assert.equal(next.length, 3);
      const nextRs256 = next.find((key) => key.alg === 'RS256')!.kid;
      while (!(await kidsOf(instance)).has(nextRs256)) {
        assert.ok(Date.now() < deadline, 'the announced key was not published');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      assert.equal(decodeProtectedHeader(await signIn()).kid, newRs256, 'the announced key does not sign yet');
    } finally {
      await other.close();
      await instance.close();
      await database.drop();
    }
  });
});
