/**
 * The token endpoint authenticates the client inside the grant's own statement on PostgreSQL
 * (token-endpoint.ts, FOLDED_GRANTS): a change to the client between two grants takes effect at
 * once, a failed client check consumes nothing, the errors and their order are those of the full
 * path, and the usual grant is one statement. Runs on SQLite too, where the full path serves
 * every grant and the same answers are expected.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { dialectOf } from '../../src/db/dialect.ts';
import { deleteApplication } from '../../src/oauth/clients.ts';
import { hashSecret, newSecret } from '../../src/secrets/random-secrets.ts';
import {
  assertOAuthError,
  authorize,
  newAccount,
  newApp,
  pkcePair,
  REDIRECT_URI,
  tokenRequest,
} from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

type App = Awaited<ReturnType<typeof newApp>>;

let database: TestDatabase;
let server: TestServer;
/** A second instance on the same database. */
let other: TestServer;
let account: Awaited<ReturnType<typeof newAccount>>;

before(async () => {
  database = await freshDatabase();
  server = await startServer({ database });
  other = await startServer({ database });
  account = await newAccount(server);
});
after(async () => {
  await server.close();
  await other.close();
  await database.drop();
});

/** A code for `app`, with the verifier that goes with it. */
async function codeFor(app: App) {
  const { verifier, challenge } = pkcePair();
  const back = await authorize(server, {
    clientId: app.clientId,
    challenge,
    username: account.username,
    password: account.password,
    scope: 'common users:read',
  });
  return { code: back.searchParams.get('code')!, verifier };
}

const exchange = (
  on: TestServer,
  app: App,
  secret: string | null,
  { code, verifier }: { code: string; verifier: string },
) =>
  tokenRequest(on, {
    grant_type: 'authorization_code',
    client_id: app.clientId,
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
    ...(secret ? { client_secret: secret } : {}),
  });

const refresh = (on: TestServer, app: App, secret: string | null, refreshToken: string) =>
  tokenRequest(on, {
    grant_type: 'refresh_token',
    client_id: app.clientId,
    refresh_token: refreshToken,
    ...(secret ? { client_secret: secret } : {}),
  });

/** A confidential app with tokens from one exchange. */
async function confidentialWithTokens() {
  const app = await newApp(server, { confidential: true });
  const reply = await exchange(server, app, app.clientSecret, await codeFor(app));
  assert.equal(reply.status, 200, reply.text);
  return { app, refreshToken: reply.body.refresh_token as string };
}

/** Gives the application a new secret, as /account/apps does; answers it. */
async function newSecretOf(app: App): Promise<string> {
  const secret = newSecret();
  await server.app.database.db
    .updateTable('applications')
    .set({ secret_hash: hashSecret(secret) })
    .where('client_id', '=', app.clientId)
    .execute();
  return secret;
}

const failedAuthentications = async (app: App) =>
  (
    await server.app.database.db
      .selectFrom('security_events')
      .select('event_id')
      .where('kind', '=', 'client_authentication_failed')
      .where('client_id', '=', app.clientId)
      .execute()
  ).length;

describe('the client check of the token grants', () => {
  test('a new secret: the old one is refused at once on both instances, and the refresh token it was refused with still works with the new one', async () => {
    const { app, refreshToken } = await confidentialWithTokens();
    const refreshed = await refresh(other, app, app.clientSecret, refreshToken);
    assert.equal(refreshed.status, 200, refreshed.text);
    const secret = await newSecretOf(app);
    for (const on of [server, other])
      assertOAuthError(await refresh(on, app, app.clientSecret, refreshed.body.refresh_token), 'invalid_client', 401);
    assert.equal((await refresh(other, app, secret, refreshed.body.refresh_token)).status, 200);
  });

  test('a new secret between the authorization and the exchange: the old secret is refused, and the code it was refused with is not used up', async () => {
    const app = await newApp(server, { confidential: true });
    const code = await codeFor(app);
    const secret = await newSecretOf(app);
    assertOAuthError(await exchange(other, app, app.clientSecret, code), 'invalid_client', 401);
    assertOAuthError(await exchange(server, app, null, code), 'invalid_client', 401);
    const exchanged = await exchange(other, app, secret, code);
    assert.equal(exchanged.status, 200, exchanged.text);
  });

  test('made public: its old secret is refused at once, and without a secret it gets tokens', async () => {
    const { app, refreshToken } = await confidentialWithTokens();
    await server.app.database.db
      .updateTable('applications')
      .set({ secret_hash: null })
      .where('client_id', '=', app.clientId)
      .execute();
    assertOAuthError(await refresh(other, app, app.clientSecret, refreshToken), 'invalid_client', 401);
    assert.equal((await refresh(other, app, null, refreshToken)).status, 200);
  });

  test('deleted between two grants: invalid_client at once on both instances', async () => {
    const app = await newApp(server);
    const code = await codeFor(app);
    const first = await exchange(server, app, null, await codeFor(app));
    assert.equal(first.status, 200, first.text);
    assert.ok(await deleteApplication(server.app.database.db, app.clientId));
    for (const on of [server, other]) {
      assertOAuthError(await refresh(on, app, null, first.body.refresh_token), 'invalid_client', 401);
      assertOAuthError(await exchange(on, app, null, code), 'invalid_client', 401);
    }
  });

  test('a wrong client and a wrong grant together: invalid_client comes first, as on the full path', async () => {
    const { app, refreshToken } = await confidentialWithTokens();
    assertOAuthError(await refresh(server, app, 'not-the-secret', 'not-a-refresh-token'), 'invalid_client', 401);
    assertOAuthError(
      await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        client_secret: 'not-the-secret',
      }),
      'invalid_client',
      401,
    );
    assertOAuthError(
      await tokenRequest(server, {
        grant_type: 'authorization_code',
        client_id: app.clientId,
        client_secret: 'not-the-secret',
        code: 'x',
      }),
      'invalid_client',
      401,
    );
    // The right client with a missing parameter: invalid_request, from the full path.
    assertOAuthError(
      await tokenRequest(server, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        client_secret: app.clientSecret!,
      }),
      'invalid_request',
    );
    assert.equal((await refresh(server, app, app.clientSecret, refreshToken)).status, 200);
  });

  test('a failed client authentication is recorded once per refused grant, the same on both paths', async () => {
    const app = await newApp(server, { confidential: true });
    const { refreshToken } = await (async () => {
      const reply = await exchange(server, app, app.clientSecret, await codeFor(app));
      return { refreshToken: reply.body.refresh_token as string };
    })();
    assertOAuthError(await refresh(server, app, 'wrong', refreshToken), 'invalid_client', 401);
    assert.equal(await failedAuthentications(app), 1);
    assert.equal((await refresh(server, app, app.clientSecret, refreshToken)).status, 200);
  });

  test('a device named in the exchange must be the one of the authorization request, when it named one', async () => {
    const app = await newApp(server);
    const { verifier, challenge } = pkcePair();
    const back = await authorize(server, {
      clientId: app.clientId,
      challenge,
      username: account.username,
      password: account.password,
      scope: 'common users:read',
      deviceId: 'device-1',
    });
    const code = { code: back.searchParams.get('code')!, verifier };
    const withDevice = (deviceId: string) =>
      tokenRequest(server, {
        grant_type: 'authorization_code',
        client_id: app.clientId,
        code: code.code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        device_id: deviceId,
      });
    assertOAuthError(await withDevice('device-2'), 'invalid_grant');
    assert.equal((await withDevice('device-1')).status, 200);
    // A code without a device accepts any.
    const plain = await codeFor(app);
    assert.equal(
      (
        await tokenRequest(server, {
          grant_type: 'authorization_code',
          client_id: app.clientId,
          code: plain.code,
          redirect_uri: REDIRECT_URI,
          code_verifier: plain.verifier,
          device_id: 'device-3',
        })
      ).status,
      200,
    );
  });

  test('a NUL in a parameter that reaches the statement as text is a 400, never a 500', async () => {
    const app = await newApp(server);
    const { code, verifier } = await codeFor(app);
    for (const extra of [{ redirect_uri: `${REDIRECT_URI}\0` }, { device_id: 'device\0' }] as Array<
      Record<string, string>
    >) {
      const reply = await tokenRequest(server, {
        grant_type: 'authorization_code',
        client_id: app.clientId,
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        ...extra,
      });
      assert.equal(reply.status, 400, reply.text);
    }
    assert.equal((await exchange(server, app, null, { code, verifier })).status, 200);
  });

  test('on PostgreSQL the usual refresh and code exchange are one statement each, client check included', async (t) => {
    if (dialectOf(server.app.database.db) !== 'postgres') return t.skip('PostgreSQL only');
    const app = await newApp(server, { confidential: true });
    const code = await codeFor(app);
    const statements: string[] = [];
    const query = pg.Client.prototype.query;
    // Only the queries of this server's pool between the two marks.
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const [config] = args as [string | { text: string }];
      statements.push(typeof config === 'string' ? config : config.text);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      const exchanged = await exchange(server, app, app.clientSecret, code);
      assert.equal(exchanged.status, 200, exchanged.text);
      assert.equal(statements.length, 1, statements.join('\n'));
      const refreshed = await refresh(server, app, app.clientSecret, exchanged.body.refresh_token);
      assert.equal(refreshed.status, 200, refreshed.text);
      assert.equal(statements.length, 2, statements.join('\n'));
      assert.match(statements.join('\n'), /from "applications"/);
    } finally {
      pg.Client.prototype.query = query;
    }
  });
});
