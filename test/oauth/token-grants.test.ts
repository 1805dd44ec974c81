/**
 * The token endpoint, POST /v4/login (DESIGN "v4 login", RFC 6749 §4.1.3/§5/§6, RFC 7636):
 * the authorization_code grant with its PKCE, redirect and client bindings, single use and
 * replay revocation; refresh with rotation, scope rules and reuse detection; client
 * authentication (body secret, HTTP Basic with form-encoding); and the error shape.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  assertOAuthError,
  authorize,
  FormClient,
  newAccount,
  newApp,
  pkcePair,
  REDIRECT_URI,
  tokenRequest,
} from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

/** RFC 7636 appendix B. */
const RFC_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const RFC_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
const OTHER_REDIRECT_URI = 'http://127.0.0.1:9/other-callback';
const SCOPE = 'common users:read';

type App = Awaited<ReturnType<typeof newApp>>;
type Account = Awaited<ReturnType<typeof newAccount>>;

let server: TestServer;
let account: Account;
/** Signed in once; later logins of `account` go straight to consent. */
let browser: FormClient;

const challengeOf = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url');
const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`,
});
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const whoAmI = (accessToken: string) => server.request('GET', '/v4/user', { headers: bearer(accessToken) });

/** An authorization code for `app`, bound to `challenge`, through the login and consent pages. */
async function codeFor(app: App, challenge: string, scope = SCOPE) {
  const back = await authorize(server, {
    clientId: app.clientId,
    challenge,
    username: account.username,
    password: account.password,
    scope,
    browser,
  });
  const code = back.searchParams.get('code');
  assert.ok(code, back.href);
  return code;
}

function exchange(
  app: App,
  code: string,
  verifier: string,
  extra: Record<string, string> = {},
  headers: Record<string, string> = {},
) {
  return tokenRequest(
    server,
    {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      ...extra,
    },
    headers,
  );
}

/** Tokens for `app` (public, or confidential with its secret in the body). */
async function tokensFor(app: App, scope = SCOPE) {
  const { verifier, challenge } = pkcePair();
  const code = await codeFor(app, challenge, scope);
  const reply = await exchange(app, code, verifier, app.clientSecret ? { client_secret: app.clientSecret } : {});
  assert.equal(reply.status, 200, reply.text);
  return reply.body as { access_token: string; refresh_token: string; scope: string; refresh_token_expiration: number };
}

const refresh = (
  app: App,
  refreshToken: string,
  extra: Record<string, string> = {},
  headers: Record<string, string> = {},
) =>
  tokenRequest(
    server,
    { grant_type: 'refresh_token', client_id: app.clientId, refresh_token: refreshToken, ...extra },
    headers,
  );

async function assertTokenDead(accessToken: string) {
  const reply = await whoAmI(accessToken);
  assert.equal(reply.status, 401, reply.text);
  assert.match(reply.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
}

async function assertTokenWorks(accessToken: string) {
  const reply = await whoAmI(accessToken);
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.body.userId, account.userId);
}

describe('POST /v4/login', () => {
  let app: App;
  before(async () => {
    server = await startServer();
    account = await newAccount(server);
    browser = new FormClient(server);
    app = await newApp(server, {
      scopes: ['common', 'users:read', 'users:update'],
      redirectUris: [REDIRECT_URI, OTHER_REDIRECT_URI],
    });
  });
  after(() => server.close());

  describe('grant_type=authorization_code', () => {
    test('the RFC 7636 appendix B verifier is accepted for its challenge: 200 with every spec field plus expires_in, not cached', async () => {
      assert.equal(challengeOf(RFC_VERIFIER), RFC_CHALLENGE);
      const code = await codeFor(app, RFC_CHALLENGE);
      const before = Date.now() / 1000;
      const reply = await exchange(app, code, RFC_VERIFIER);
      const after = Date.now() / 1000;
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.headers.get('cache-control'), 'no-store');
      assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
      const body = reply.body;
      assert.deepEqual(Object.keys(body).sort(), [
        'access_token',
        'access_token_expiration',
        'access_token_expires_in',
        'expires_in',
        'now',
        'refresh_token',
        'refresh_token_expiration',
        'refresh_token_expires_in',
        'scope',
        'token_type',
      ]);
      assert.equal(body.token_type, 'Bearer');
      assert.match(body.access_token, /^[A-Za-z0-9_-]{43}$/);
      assert.match(body.refresh_token, /^[A-Za-z0-9_-]{43}$/);
      assert.notEqual(body.access_token, body.refresh_token);
      assert.equal(body.scope, SCOPE);
      assert.equal(body.expires_in, 3600);
      assert.ok(body.now >= before - 1 && body.now <= after + 1, `now ${body.now}`);
      assert.ok(Number.isInteger(body.access_token_expiration));
      assert.ok(Number.isInteger(body.refresh_token_expiration));
      assert.ok(Math.abs(body.access_token_expiration - (body.now + 3600)) <= 1);
      assert.ok(Math.abs(body.refresh_token_expiration - (body.now + 30 * 24 * 3600)) <= 1);
      assert.ok(Math.abs(body.access_token_expires_in - 3600) < 0.001);
      assert.ok(Math.abs(body.refresh_token_expires_in - 30 * 24 * 3600) < 0.001);
      await assertTokenWorks(body.access_token);
    });

    test('a JSON body works like a form', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, challenge);
      const reply = await server.request('POST', '/v4/login', {
        body: {
          grant_type: 'authorization_code',
          client_id: app.clientId,
          code,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
        },
      });
      assert.equal(reply.status, 200, reply.text);
      await assertTokenWorks(reply.body.access_token);
    });

    test('a wrong code_verifier is invalid_grant and does not burn the code', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, challenge);
      assertOAuthError(await exchange(app, code, pkcePair().verifier), 'invalid_grant');
      // The challenge itself is not the verifier either.
      assertOAuthError(await exchange(app, code, challenge), 'invalid_grant');
      const reply = await exchange(app, code, verifier);
      assert.equal(reply.status, 200, reply.text);
    });

    test('a redirect_uri other than the one of the authorization request is invalid_grant, even when registered', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, challenge);
      assertOAuthError(await exchange(app, code, verifier, { redirect_uri: OTHER_REDIRECT_URI }), 'invalid_grant');
      assertOAuthError(await exchange(app, code, verifier, { redirect_uri: `${REDIRECT_URI}/` }), 'invalid_grant');
    });

    test('a code issued to another client is invalid_grant', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, challenge);
      const other = await newApp(server);
      assertOAuthError(await exchange(other, code, verifier), 'invalid_grant');
      // The rightful client can still use it.
      assert.equal((await exchange(app, code, verifier)).status, 200);
    });

    test('an unknown code is invalid_grant', async () => {
      assertOAuthError(await exchange(app, 'A'.repeat(43), pkcePair().verifier), 'invalid_grant');
    });

    for (const [name, verifier] of [
      ['42 characters (too short)', 'a'.repeat(42)],
      ['129 characters (too long)', 'a'.repeat(129)],
      ['a +', `${'a'.repeat(42)}+`],
      ['a /', `${'a'.repeat(42)}/`],
      ['a =', `${'a'.repeat(42)}=`],
      ['a space', `${'a'.repeat(21)} ${'a'.repeat(21)}`],
      ['a non-ASCII letter', `${'a'.repeat(42)}é`],
    ] as const) {
      test(`a code_verifier with ${name} is invalid_grant even when its SHA-256 is the challenge`, async () => {
        const code = await codeFor(app, challengeOf(verifier));
        assertOAuthError(await exchange(app, code, verifier), 'invalid_grant');
      });
    }

    test('code_verifiers of 43 and of 128 characters using every allowed character are accepted', async () => {
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~';
      for (const verifier of [alphabet.slice(0, 43), (alphabet + alphabet).slice(0, 128)]) {
        const code = await codeFor(app, challengeOf(verifier));
        const reply = await exchange(app, code, verifier);
        assert.equal(reply.status, 200, `${verifier.length}: ${reply.text}`);
      }
    });

    test('a replayed code is invalid_grant and the tokens issued from it stop working', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, challenge);
      const first = await exchange(app, code, verifier);
      assert.equal(first.status, 200, first.text);
      await assertTokenWorks(first.body.access_token);

      assertOAuthError(await exchange(app, code, verifier), 'invalid_grant');
      await assertTokenDead(first.body.access_token);
      assertOAuthError(await refresh(app, first.body.refresh_token), 'invalid_grant');
    });

    test('exchanges of one code racing: one gets tokens, the others invalid_grant, and the tokens issued end up revoked', async () => {
      for (const racers of [2, 2, 2, 4]) {
        const { verifier, challenge } = pkcePair();
        const code = await codeFor(app, challenge);
        const replies = await Promise.all(Array.from({ length: racers }, () => exchange(app, code, verifier)));
        const winners = replies.filter((reply) => reply.status === 200);
        assert.equal(winners.length, 1, replies.map((reply) => reply.text).join('\n'));
        for (const reply of replies) if (reply.status !== 200) assertOAuthError(reply, 'invalid_grant');
        await assertTokenDead(winners[0]!.body.access_token);
        assertOAuthError(await refresh(app, winners[0]!.body.refresh_token), 'invalid_grant');
      }
    });

    test('a replayed code revokes only its own session: other logins of the user keep working', async () => {
      const other = await tokensFor(app);
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, challenge);
      assert.equal((await exchange(app, code, verifier)).status, 200);
      assertOAuthError(await exchange(app, code, verifier), 'invalid_grant');
      await assertTokenWorks(other.access_token);
    });

    test('an expired code (older than 10 minutes) is invalid_grant', async () => {
      const client = await newApp(server);
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(client, challenge);
      // No API moves time: age the stored code through the database handle instead of waiting 10 minutes.
      const aged = await server.app.database.db
        .updateTable('authorization_codes')
        .set({ expires_at: Date.now() - 1 })
        .where('client_id', '=', client.clientId)
        .executeTakeFirst();
      assert.equal(aged.numUpdatedRows, 1n);
      assertOAuthError(await exchange(client, code, verifier), 'invalid_grant');
    });

    for (const missing of ['code', 'redirect_uri', 'code_verifier'] as const) {
      test(`a missing ${missing} is invalid_request`, async () => {
        const { verifier, challenge } = pkcePair();
        const code = await codeFor(app, challenge);
        const params: Record<string, string> = {
          grant_type: 'authorization_code',
          client_id: app.clientId,
          code,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
        };
        delete params[missing];
        assertOAuthError(await tokenRequest(server, params), 'invalid_request');
        // An empty value is missing too.
        assertOAuthError(await tokenRequest(server, { ...params, [missing]: '' }), 'invalid_request');
        // Neither burned the code.
        assert.equal((await exchange(app, code, verifier)).status, 200);
      });
    }
  });

  describe('grant_type=refresh_token', () => {
    test('rotates both tokens: the new pair works, the old access token does not', async () => {
      const tokens = await tokensFor(app);
      const reply = await refresh(app, tokens.refresh_token);
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.headers.get('cache-control'), 'no-store');
      assert.equal(reply.body.token_type, 'Bearer');
      assert.equal(reply.body.expires_in, 3600);
      assert.notEqual(reply.body.access_token, tokens.access_token);
      assert.notEqual(reply.body.refresh_token, tokens.refresh_token);
      assert.ok(
        reply.body.refresh_token_expiration >= tokens.refresh_token_expiration,
        'the new refresh token lives 30 days from now',
      );
      await assertTokenWorks(reply.body.access_token);
      await assertTokenDead(tokens.access_token);
    });

    test('scope omitted keeps the original scope', async () => {
      const tokens = await tokensFor(app, 'common users:update');
      const reply = await refresh(app, tokens.refresh_token);
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.scope, 'common users:update');
    });

    test('the original scope, in any order or without common, is accepted', async () => {
      const tokens = await tokensFor(app);
      const reordered = await refresh(app, tokens.refresh_token, { scope: 'users:read common' });
      assert.equal(reordered.status, 200, reordered.text);
      assert.equal(reordered.body.scope, SCOPE);
      const withoutCommon = await refresh(app, reordered.body.refresh_token, { scope: 'users:read' });
      assert.equal(withoutCommon.status, 200, withoutCommon.text);
      assert.equal(withoutCommon.body.scope, SCOPE);
    });

    test('a different scope, narrower or wider, is invalid_scope and leaves the tokens valid', async () => {
      const tokens = await tokensFor(app);
      assertOAuthError(await refresh(app, tokens.refresh_token, { scope: 'common' }), 'invalid_scope');
      assertOAuthError(
        await refresh(app, tokens.refresh_token, { scope: 'common users:read users:update' }),
        'invalid_scope',
      );
      assertOAuthError(await refresh(app, tokens.refresh_token, { scope: 'common users:read bogus' }), 'invalid_scope');
      await assertTokenWorks(tokens.access_token);
      assert.equal((await refresh(app, tokens.refresh_token)).status, 200);
    });

    test('reusing a rotated refresh token is invalid_grant and revokes the whole session, newest tokens included', async () => {
      const first = await tokensFor(app);
      const second = await refresh(app, first.refresh_token);
      assert.equal(second.status, 200, second.text);
      const third = await refresh(app, second.body.refresh_token);
      assert.equal(third.status, 200, third.text);
      await assertTokenWorks(third.body.access_token);

      assertOAuthError(await refresh(app, first.refresh_token), 'invalid_grant');
      await assertTokenDead(third.body.access_token);
      assertOAuthError(await refresh(app, third.body.refresh_token), 'invalid_grant');
    });

    test('refreshes of one token racing: one gets tokens, the others invalid_grant, and the session ends', async () => {
      for (const racers of [2, 2, 4]) {
        const tokens = await tokensFor(app);
        const replies = await Promise.all(Array.from({ length: racers }, () => refresh(app, tokens.refresh_token)));
        const winners = replies.filter((reply) => reply.status === 200);
        assert.equal(winners.length, 1, replies.map((reply) => reply.text).join('\n'));
        for (const reply of replies) if (reply.status !== 200) assertOAuthError(reply, 'invalid_grant');
        await assertTokenDead(winners[0]!.body.access_token);
        assertOAuthError(await refresh(app, winners[0]!.body.refresh_token), 'invalid_grant');
      }
    });

    test('reuse revokes only that session: another login of the same user keeps working', async () => {
      const other = await tokensFor(app);
      const tokens = await tokensFor(app);
      assert.equal((await refresh(app, tokens.refresh_token)).status, 200);
      assertOAuthError(await refresh(app, tokens.refresh_token), 'invalid_grant');
      await assertTokenWorks(other.access_token);
    });

    test("another client's refresh token is invalid_grant and stays usable by its own client", async () => {
      const tokens = await tokensFor(app);
      const other = await newApp(server);
      assertOAuthError(await refresh(other, tokens.refresh_token), 'invalid_grant');
      assert.equal((await refresh(app, tokens.refresh_token)).status, 200);
    });

    test('an unknown refresh token, or an access token, is invalid_grant', async () => {
      const tokens = await tokensFor(app);
      assertOAuthError(await refresh(app, 'B'.repeat(43)), 'invalid_grant');
      assertOAuthError(await refresh(app, tokens.access_token), 'invalid_grant');
    });

    test('a missing refresh_token is invalid_request', async () => {
      assertOAuthError(
        await tokenRequest(server, { grant_type: 'refresh_token', client_id: app.clientId }),
        'invalid_request',
      );
    });
  });

  describe('client authentication', () => {
    let confidential: App;
    before(async () => {
      confidential = await newApp(server, { confidential: true });
      assert.match(confidential.clientSecret!, /^[A-Za-z0-9_-]{43}$/);
    });

    test('a confidential client with client_secret in the body gets tokens', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(confidential, challenge);
      const reply = await exchange(confidential, code, verifier, { client_secret: confidential.clientSecret! });
      assert.equal(reply.status, 200, reply.text);
      await assertTokenWorks(reply.body.access_token);
    });

    test('a confidential client with HTTP Basic gets tokens, with or without client_id in the body', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(confidential, challenge);
      const reply = await tokenRequest(
        server,
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
        basic(confidential.clientId, confidential.clientSecret!),
      );
      assert.equal(reply.status, 200, reply.text);
      const refreshed = await refresh(
        confidential,
        reply.body.refresh_token,
        {},
        basic(confidential.clientId, confidential.clientSecret!),
      );
      assert.equal(refreshed.status, 200, refreshed.text);
    });

    test('Basic credentials are form-decoded after base64 (RFC 6749 §2.3.1), for the id and the secret', async () => {
      // The server makes the secret (base64url, nothing that must be encoded), so encode every
      // character: a client that form-encodes, as §2.3.1 asks, must still be recognised.
      const percentEncodeAll = (text: string) =>
        [...text].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('');
      const tokens = await tokensFor(confidential);
      const reply = await refresh(
        confidential,
        tokens.refresh_token,
        {},
        basic(percentEncodeAll(confidential.clientId), percentEncodeAll(confidential.clientSecret!)),
      );
      assert.equal(reply.status, 200, reply.text);
    });

    test('Basic credentials that are not valid form-encoding are 401 invalid_client with a Basic challenge', async () => {
      const reply = await refresh(
        confidential,
        'whatever',
        {},
        basic(confidential.clientId, `%zz${confidential.clientSecret}`),
      );
      assertOAuthError(reply, 'invalid_client', 401);
      assert.match(reply.headers.get('www-authenticate') ?? '', /^Basic realm="v4"/);
    });

    test('a wrong secret in the body is 401 invalid_client without a challenge', async () => {
      const reply = await refresh(confidential, 'whatever', { client_secret: 'C'.repeat(43) });
      assertOAuthError(reply, 'invalid_client', 401);
      assert.equal(reply.headers.get('www-authenticate'), null);
    });

    test('a wrong secret with Basic is 401 invalid_client with WWW-Authenticate: Basic', async () => {
      const reply = await refresh(
        confidential,
        'whatever',
        {},
        basic(confidential.clientId, `${confidential.clientSecret}x`),
      );
      assertOAuthError(reply, 'invalid_client', 401);
      assert.match(reply.headers.get('www-authenticate') ?? '', /^Basic realm="v4"/);
    });

    test('a confidential client without its secret is 401 invalid_client, and its code stays usable', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(confidential, challenge);
      assertOAuthError(await exchange(confidential, code, verifier), 'invalid_client', 401);
      assertOAuthError(await exchange(confidential, code, verifier, { client_secret: '' }), 'invalid_client', 401);
      assert.equal(
        (await exchange(confidential, code, verifier, { client_secret: confidential.clientSecret! })).status,
        200,
      );
    });

    test("another confidential client's secret is invalid_client", async () => {
      const other = await newApp(server, { confidential: true });
      assertOAuthError(
        await refresh(confidential, 'whatever', { client_secret: other.clientSecret! }),
        'invalid_client',
        401,
      );
    });

    test('a public client that sends a secret is 401 invalid_client, in the body or with Basic', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, challenge);
      assertOAuthError(await exchange(app, code, verifier, { client_secret: 'anything' }), 'invalid_client', 401);
      const withBasic = await tokenRequest(
        server,
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
        basic(app.clientId, 'anything'),
      );
      assertOAuthError(withBasic, 'invalid_client', 401);
      assert.match(withBasic.headers.get('www-authenticate') ?? '', /^Basic /);
    });

    test('an unknown client_id is 401 invalid_client', async () => {
      assertOAuthError(
        await refresh({ clientId: randomUUID(), clientSecret: null }, 'whatever'),
        'invalid_client',
        401,
      );
      assertOAuthError(
        await refresh({ clientId: 'not-a-uuid', clientSecret: null }, 'whatever'),
        'invalid_client',
        401,
      );
    });

    test('a missing client_id is invalid_request', async () => {
      assertOAuthError(
        await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: 'whatever' }),
        'invalid_request',
      );
    });

    test('Basic and client_secret in the body together are invalid_request', async () => {
      const reply = await refresh(
        confidential,
        'whatever',
        { client_secret: confidential.clientSecret! },
        basic(confidential.clientId, confidential.clientSecret!),
      );
      assertOAuthError(reply, 'invalid_request');
    });

    test('a body client_id that differs from the Basic one is invalid_request', async () => {
      const other = await newApp(server, { confidential: true });
      const reply = await refresh(other, 'whatever', {}, basic(confidential.clientId, confidential.clientSecret!));
      assertOAuthError(reply, 'invalid_request');
    });
  });

  describe('the request itself', () => {
    test('a missing grant_type is invalid_request', async () => {
      assertOAuthError(
        await tokenRequest(server, { client_id: app.clientId, refresh_token: 'whatever' }),
        'invalid_request',
      );
    });

    test('grant types other than authorization_code, refresh_token and device_code are unsupported_grant_type', async () => {
      for (const grantType of ['password', 'client_credentials', 'implicit', 'token', 'AUTHORIZATION_CODE']) {
        assertOAuthError(
          await tokenRequest(server, { grant_type: grantType, client_id: app.clientId }),
          'unsupported_grant_type',
        );
      }
    });

    test('a parameter given twice is invalid_request', async () => {
      const reply = await server.request('POST', '/v4/login', {
        body: `grant_type=refresh_token&client_id=${app.clientId}&refresh_token=a&refresh_token=b`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assertOAuthError(reply, 'invalid_request');
    });

    test('a malformed JSON body is invalid_request in the OAuth error shape', async () => {
      const reply = await server.request('POST', '/v4/login', {
        body: '{"grant_type":',
        headers: { 'content-type': 'application/json' },
      });
      assertOAuthError(reply, 'invalid_request');
    });
  });
});
