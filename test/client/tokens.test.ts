/**
 * Tokens in the client library, against the real server: refresh shortly before expiry, ten
 * concurrent calls sharing one refresh, a revoked session surfacing as one clear error,
 * sign-out revoking at the service, the file token store, and the error class.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ContentServiceClient, ContentServiceError, FileTokenStore } from '../../client/src/index.ts';
import { countingFetch, newClient, signInQuickly } from '../helpers/client.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startServer({ baseUrlIsOwnAddress: true });
});
after(() => server.close());

const REFRESH = 'POST /v4/login refresh_token';

/** A client whose clock the test moves. */
async function clientWithClock() {
  const clock = { offset: 0 };
  const counter = countingFetch();
  const made = await newClient(server, { fetch: counter.fetch, now: () => Date.now() + clock.offset });
  await signInQuickly(server, made.client, made.account);
  return { ...made, clock, counter };
}

describe('refresh', () => {
  test('an access token is used as is until shortly before it expires, then refreshed (rotating both tokens)', async () => {
    const { client, clock, counter, account } = await clientWithClock();
    const first = await client.tokenStore.get(client.storeKey);
    assert.ok(first?.refreshToken);
    assert.equal((await client.user.get()).username, account.username);
    clock.offset = 58 * 60_000; // 2 minutes left of the hour: no refresh yet
    await client.user.get();
    assert.equal(counter.count(REFRESH), 0);
    clock.offset = 59.5 * 60_000; // 30 s left, inside the 60 s margin
    assert.equal((await client.user.get()).username, account.username);
    assert.equal(counter.count(REFRESH), 1);
    const second = await client.tokenStore.get(client.storeKey);
    assert.notEqual(second!.accessToken, first!.accessToken);
    assert.notEqual(second!.refreshToken, first!.refreshToken);
    assert.ok(second!.expiresAt > first!.expiresAt);
  });

  test('ten concurrent calls near expiry share one refresh, and all succeed', async () => {
    const { client, clock, counter, account } = await clientWithClock();
    clock.offset = 59.5 * 60_000;
    const users = await Promise.all(Array.from({ length: 10 }, () => client.user.get()));
    assert.deepEqual(new Set(users.map((user) => user.username)), new Set([account.username]));
    assert.equal(counter.count(REFRESH), 1);
    // The server treats a second refresh with the same token as reuse and ends the session; it did not.
    assert.equal((await client.user.get()).username, account.username);
  });

  test('a session revoked elsewhere surfaces as a sessionEnded error, and the tokens are forgotten', async () => {
    const { client } = await clientWithClock();
    const tokens = await client.tokenStore.get(client.storeKey);
    const ended = await server.request('DELETE', '/v4/session', {
      headers: { authorization: `Bearer ${tokens!.accessToken}` },
    });
    assert.equal(ended.status, 204);
    const failure = await client.projects.listPage().catch((error) => error);
    assert.ok(failure instanceof ContentServiceError, String(failure));
    assert.equal(failure.status, 401);
    assert.equal(failure.code, 'sessionEnded');
    assert.equal(failure.error, 'invalid_grant');
    assert.match(failure.message, /session has ended.*sign in again/);
    assert.equal(await client.isSignedIn(), false);
    const again = await client.user.get().catch((error) => error);
    assert.equal(again.code, 'notSignedIn');
  });
});

describe('sign-out', () => {
  test('revokes the session at the service (RFC 7009) and forgets the tokens', async () => {
    const { client } = await clientWithClock();
    const tokens = (await client.tokenStore.get(client.storeKey))!;
    await client.signOut();
    assert.equal(await client.isSignedIn(), false);
    const access = await server.request('GET', '/v4/user', {
      headers: { authorization: `Bearer ${tokens.accessToken}` },
    });
    assert.equal(access.status, 401);
    const refresh = await server.request('POST', '/v4/login', {
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: tokens.refreshToken!,
        client_id: client.client.client_id,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(refresh.status, 400);
    assert.equal(refresh.body.error, 'invalid_grant');
    await client.signOut(); // signed out already: nothing to do
  });
});

describe('token stores', () => {
  test('the file store keeps tokens in a 0600 file in a 0700 directory and survives a new client', async () => {
    const directory = join(mkdtempSync(join(tmpdir(), 'client-tokens-')), 'content-service');
    const path = join(directory, 'tokens.json');
    const { client, account, app } = await newClient(server, { tokenStore: new FileTokenStore(path) });
    await signInQuickly(server, client, account);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(directory).mode & 0o777, 0o700);
    const saved = JSON.parse(readFileSync(path, 'utf8'));
    assert.ok(saved[client.storeKey].accessToken);
    const later = await ContentServiceClient.discover({
      issuer: server.url,
      clientId: app.clientId,
      tokenStore: new FileTokenStore(path),
    });
    assert.equal((await later.user.get()).username, account.username);
    await later.signOut();
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), {});
  });
});

describe('errors', () => {
  test('API errors keep status, code, message and details', async () => {
    const { client, account } = await newClient(server);
    await signInQuickly(server, client, account);
    const missing = await client.projects.get('00000000-0000-4000-8000-000000000000').catch((error) => error);
    assert.ok(missing instanceof ContentServiceError);
    assert.equal(missing.status, 404);
    assert.equal(missing.code, 'notFound');
    assert.ok(missing.message.length > 0);
    const invalid = await client.projects.save({ title: '' }).catch((error) => error);
    assert.equal(invalid.status, 400);
    assert.equal(invalid.code, 'badRequest');
    const unknown = await client.projects.save({ title: 'x', colour: 'red' } as never).catch((error) => error);
    assert.equal(unknown.status, 400);
    assert.ok(unknown.details !== undefined || /colour/.test(unknown.message), JSON.stringify(unknown));
  });

  test('OAuth errors keep error and error_description', async () => {
    const client = await ContentServiceClient.discover({
      issuer: server.url,
      clientId: '00000000-0000-4000-8000-000000000000',
    });
    const failure = await client
      .signInWithDevice({ onCode: () => assert.fail('no code for an unknown client') })
      .catch((error) => error);
    assert.ok(failure instanceof ContentServiceError, String(failure));
    assert.equal(failure.status, 401);
    assert.equal(failure.error, 'invalid_client');
    assert.equal(failure.code, 'invalid_client');
    assert.equal(typeof failure.error_description, 'string');
    assert.equal(failure.message, failure.error_description);
  });

  test('discovery of something that is not the service is a clear error', async () => {
    const failure = await ContentServiceClient.discover({ issuer: `${server.url}/elsewhere`, clientId: 'x' }).catch(
      (error) => error,
    );
    assert.ok(failure instanceof ContentServiceError);
    assert.equal(failure.code, 'discoveryFailed');
    assert.match(failure.message, /OAuth metadata/);
  });

  test('not signed in is a notSignedIn error, without a request', async () => {
    const counter = countingFetch();
    const { client } = await newClient(server, { fetch: counter.fetch });
    assert.deepEqual(counter.sent, ['GET /.well-known/oauth-authorization-server']);
    const failure = await client.projects.listPage().catch((error) => error);
    assert.equal(failure.code, 'notSignedIn');
    assert.equal(failure.status, 401);
    assert.equal(counter.sent.length, 1);
  });
});
