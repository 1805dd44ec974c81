/**
 * Back-channel logout to a receiver on loopback: the logout token's claims and signature (jose,
 * through /v4/jwks), the reasons that send one (the account page, a logout the application did not
 * prove to be its own, a password change, another application's DELETE /v4/sessions/<id>) and
 * those that do not (the application's own calls), a slow receiver that never slows the person, a
 * failing one that is retried, and a server process killed with a delivery queued, which another
 * process on the same database delivers.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { createSession } from '../../src/oauth/sessions.ts';
import { FormClient, newAccount } from '../helpers/oauth.ts';
import { isSignedIn, newRelyingParty, sessionExists, signInWith } from '../helpers/relying-party.ts';
import { submitForm } from '../helpers/self-service.ts';
import { freshDatabase, send, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

interface Received {
  path: string;
  token: string;
  contentType: string | undefined;
}

/** A relying party's back-channel endpoint: records every POST; `behave` decides each answer. */
class Receiver {
  readonly received: Received[] = [];
  behave: (path: string, count: number) => { status: number; delayMs?: number } = () => ({ status: 200 });
  #server: Server | undefined;
  port = 0;

  async start(port = 0): Promise<void> {
    this.#server = createServer(async (request: IncomingMessage, response) => {
      let body = '';
      for await (const chunk of request) body += chunk;
      const path = request.url ?? '';
      this.received.push({
        path,
        token: new URLSearchParams(body).get('logout_token') ?? '',
        contentType: request.headers['content-type'],
      });
      const { status, delayMs } = this.behave(path, this.received.filter((r) => r.path === path).length);
      if (delayMs) await new Promise((done) => setTimeout(done, delayMs));
      response.writeHead(status).end();
    });
    await new Promise<void>((done) => this.#server!.listen(port, '127.0.0.1', done));
    this.port = (this.#server.address() as AddressInfo).port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}/${path}`;
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === `/${path}`);
  }

  close(): Promise<void> {
    this.#server?.closeAllConnections();
    return new Promise((done) => (this.#server ? this.#server.close(() => done()) : done()));
  }
}

async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 25));
  }
}

let server: TestServer;
let receiver: Receiver;
let paths = 0;

before(async () => {
  receiver = new Receiver();
  await receiver.start();
  server = await startServer({ baseUrlIsOwnAddress: true, env: { BACKCHANNEL_LOGOUT_RETRY_DELAYS: '0.2,0.2,0.2' } });
});
after(async () => {
  await server.close();
  await receiver.close();
});

/** An application with its own back-channel path on the receiver. */
async function appWithBackchannel(name: string, idTokenAlg?: string) {
  const path = `rp${++paths}`;
  const clientId = await newRelyingParty(server, { name, backchannelLogoutUri: receiver.url(path), idTokenAlg });
  return { clientId, path };
}

/** Checks a logout token through the published keys and answers its claims. */
async function verifiedLogoutToken(token: string, clientId: string) {
  const jwks = createRemoteJWKSet(new URL(`${server.url}/v4/jwks`));
  const { payload, protectedHeader } = await jwtVerify(token, jwks, {
    issuer: server.url,
    audience: clientId,
    typ: 'logout+jwt',
    maxTokenAge: '5 minutes',
  });
  assert.equal(protectedHeader.typ, 'logout+jwt');
  return payload;
}

/** The outbox row of a session, if any. */
const queued = (sessionId: string) =>
  server.app.database.db
    .selectFrom('backchannel_logouts')
    .selectAll()
    .where('session_id', '=', sessionId)
    .executeTakeFirst();

describe('back-channel logout', () => {
  test('the account page ends a session: a signed logout token with iss, aud, sub, sid, events and no nonce', async () => {
    const account = await newAccount(server);
    const rp = await appWithBackchannel('Alpha Forum', 'ES256');
    const quiet = await newRelyingParty(server, { name: 'No Back Channel' });
    const browser = new FormClient(server);
    const signedIn = await signInWith(server, rp.clientId, browser, account);
    const other = await signInWith(server, quiet, browser, account);

    const page = await browser.fetch('/account');
    const ended = await submitForm(browser, page.text, { end_session: signedIn.sid }, /\/account\/sessions$/);
    assert.equal(ended.status, 303, ended.text);

    const [delivery] = await waitFor('the logout token', () => receiver.at(rp.path).length > 0 && receiver.at(rp.path));
    assert.equal(delivery!.contentType, 'application/x-www-form-urlencoded');
    assert.equal(decodeProtectedHeader(delivery!.token).alg, 'ES256', 'signed like its ID tokens');
    const claims = await verifiedLogoutToken(delivery!.token, rp.clientId);
    assert.equal(claims.iss, server.url);
    assert.equal(claims.aud, rp.clientId);
    assert.equal(claims.sub, account.userId);
    assert.equal(claims.sid, signedIn.sid);
    assert.equal(claims.sid, signedIn.tokens.claims()!.sid, 'sid as in the ID token');
    assert.deepEqual(claims.events, { [EVENT]: {} });
    assert.equal(typeof claims.jti, 'string');
    assert.equal(typeof claims.iat, 'number');
    assert.ok(typeof claims.exp === 'number' && claims.exp > claims.iat!);
    assert.equal(claims.nonce, undefined);
    await waitFor('the delivered notice to leave the queue', async () => !(await queued(signedIn.sid)));
    assert.equal(await queued(signedIn.sid), undefined);
    assert.ok(
      server.logs.some((line) => line.includes('back-channel logout delivered') && line.includes(signedIn.sid)),
    );
    assert.ok(await sessionExists(server, other.sid), 'the other application keeps its session');
  });

  test('a password change tells every application with a back channel; the application’s own calls tell no one', async () => {
    const account = await newAccount(server);
    const a = await appWithBackchannel('Alpha');
    const b = await appWithBackchannel('Beta');
    const browser = new FormClient(server);
    const sa = await signInWith(server, a.clientId, browser, account);
    const sb = await signInWith(server, b.clientId, browser, account);

    // The application revokes its own token (RFC 7009): no notice.
    const revoked = await send(server.url, 'POST', '/v4/revoke', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: b.clientId, token: sb.tokens.refresh_token! }).toString(),
    });
    assert.equal(revoked.status, 200);
    assert.equal(await sessionExists(server, sb.sid), false);
    const sb2 = await signInWith(server, b.clientId, browser, account);

    const page = await browser.fetch('/account');
    const changed = await submitForm(
      browser,
      page.text,
      { current_password: account.password, new_password: 'a-whole-new-password-42' },
      /\/account\/password$/,
    );
    assert.equal(changed.status, 303, changed.text);
    const tokenA = await waitFor('A’s token', () => receiver.at(a.path)[0]);
    const tokenB = await waitFor('B’s token', () => receiver.at(b.path)[0]);
    assert.equal((await verifiedLogoutToken(tokenA.token, a.clientId)).sid, sa.sid);
    assert.equal((await verifiedLogoutToken(tokenB.token, b.clientId)).sid, sb2.sid);
    await new Promise((done) => setTimeout(done, 300));
    assert.equal(receiver.at(b.path).length, 1, 'nothing for the revoked session');
  });

  test('a logout at /v4/logout named by client_id alone tells the application; one proven by its hint does not', async () => {
    const account = await newAccount(server);
    const a = await appWithBackchannel('Alpha');
    // Signed out through a link that named the application but did not prove it sent it.
    const browser = new FormClient(server);
    const first = await signInWith(server, a.clientId, browser, account);
    const page = await browser.fetch(`/v4/logout?client_id=${a.clientId}`);
    assert.equal(page.status, 200, page.text);
    const confirmed = await submitForm(browser, page.text, { logout: 'yes' }, /\/v4\/logout$/);
    assert.equal(confirmed.status, 200, confirmed.text);
    assert.equal(await isSignedIn(browser), false);
    const told = await waitFor('the logout token', () => receiver.at(a.path)[0]);
    assert.equal((await verifiedLogoutToken(told.token, a.clientId)).sid, first.sid);

    // The application's own logout request (its ID token as hint): it knows already.
    const second = await signInWith(server, a.clientId, browser, account);
    const own = await browser.fetch(`/v4/logout?id_token_hint=${second.idToken}`);
    assert.equal(own.status, 200, own.text);
    assert.equal(await sessionExists(server, second.sid), false);
    await new Promise((done) => setTimeout(done, 300));
    assert.equal(receiver.at(a.path).length, 1);
    assert.equal(await queued(second.sid), undefined);
  });

  test('DELETE /v4/sessions/<id> by another application tells the session’s application; its own does not', async () => {
    const account = await newAccount(server);
    const a = await appWithBackchannel('Alpha');
    const b = await appWithBackchannel('Beta');
    const browser = new FormClient(server);
    const sa = await signInWith(server, a.clientId, browser, account);
    const sb = await signInWith(server, b.clientId, browser, account);
    const byB = await send(server.url, 'DELETE', `/v4/sessions/${sa.sid}`, {
      headers: { authorization: `Bearer ${sb.tokens.access_token}` },
    });
    assert.ok(byB.status < 300, byB.text);
    const told = await waitFor('A’s token', () => receiver.at(a.path)[0]);
    assert.equal((await verifiedLogoutToken(told.token, a.clientId)).sid, sa.sid);

    const own = await send(server.url, 'DELETE', '/v4/session', {
      headers: { authorization: `Bearer ${sb.tokens.access_token}` },
    });
    assert.ok(own.status < 300, own.text);
    assert.equal(await sessionExists(server, sb.sid), false);
    await new Promise((done) => setTimeout(done, 300));
    assert.equal(receiver.at(b.path).length, 0);
  });

  test('a receiver that sleeps 10 s does not slow the sign-out', async () => {
    const account = await newAccount(server);
    const slow = await appWithBackchannel('Slow');
    receiver.behave = (path) => (path === `/${slow.path}` ? { status: 200, delayMs: 10_000 } : { status: 200 });
    try {
      const browser = new FormClient(server);
      const signedIn = await signInWith(server, slow.clientId, browser, account);
      const page = await browser.fetch('/account');
      const started = performance.now();
      const ended = await submitForm(browser, page.text, { end_session: signedIn.sid }, /\/account\/sessions$/);
      const took = performance.now() - started;
      assert.equal(ended.status, 303);
      assert.ok(took < 1000, `the sign-out took ${took} ms`);
      await waitFor('the call to the slow receiver', () => receiver.at(slow.path).length > 0);
      // The sender gives up on the call after 5 s and tries again later.
      await waitFor(
        'the timeout to be logged',
        () => server.logs.some((line) => line.includes('no answer within 5 s') && line.includes(signedIn.sid)),
        8_000,
      );
    } finally {
      receiver.behave = () => ({ status: 200 });
    }
  });

  test('a receiver failing twice (500) is tried again and gets it the third time; each outcome is logged', async () => {
    const account = await newAccount(server);
    const flaky = await appWithBackchannel('Flaky');
    receiver.behave = (path, count) => ({ status: path === `/${flaky.path}` && count <= 2 ? 500 : 200 });
    try {
      const browser = new FormClient(server);
      const signedIn = await signInWith(server, flaky.clientId, browser, account);
      const page = await browser.fetch('/account');
      await submitForm(browser, page.text, { end_session: signedIn.sid }, /\/account\/sessions$/);
      await waitFor('three tries', () => receiver.at(flaky.path).length >= 3);
      await waitFor('the delivery to be logged', () =>
        server.logs.some((line) => line.includes('back-channel logout delivered') && line.includes(signedIn.sid)),
      );
      const lines = server.logs.filter((line) => line.includes(signedIn.sid));
      assert.equal(lines.filter((line) => line.includes('the receiver answered 500')).length, 2, lines.join('\n'));
      assert.equal(receiver.at(flaky.path).length, 3);
      const tokens = receiver.at(flaky.path).map((r) => r.token);
      for (const token of tokens) assert.equal((await verifiedLogoutToken(token, flaky.clientId)).sid, signedIn.sid);
      assert.equal(await queued(signedIn.sid), undefined);
    } finally {
      receiver.behave = () => ({ status: 200 });
    }
  });
});

describe('back-channel logout after kill -9', () => {
  const ROOT = resolve(import.meta.dirname, '../..');
  const children = new Set<ChildProcess>();
  let database: TestDatabase;

  after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await database?.drop();
  });

  /** The server as a process of its own on `database`; answers it once it listens. */
  async function serverProcess() {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        WORKERS: '1',
        BASE_URL: 'https://api.test.example',
        DATABASE_URL: database.url,
        RATE_LIMIT_V4: '0',
        LOG_LEVEL: 'info',
        BACKCHANNEL_LOGOUT_RETRY_DELAYS: '2,2,2,2',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const url = await waitFor(
      'the server process to listen',
      () => {
        if (child.exitCode !== null) throw new Error(`server exited:\n${output}`);
        return /Server listening at (http:\/\/[^"\s]+)/.exec(output)?.[1];
      },
      60_000,
    );
    return { child, url, output: () => output };
  }

  test('a delivery queued by a killed process is sent by the next one on the same database', async () => {
    database = await freshDatabase();
    // The receiver's port, closed for now: the first process's tries fail.
    const down = new Receiver();
    await down.start();
    const port = down.port;
    await down.close();

    // Accounts, applications and sessions made beforehand (this setup server then stops).
    const setup = await startServer({ database });
    const account = await newAccount(setup);
    const a = await newRelyingParty(setup, {
      name: 'Alpha',
      backchannelLogoutUri: `http://127.0.0.1:${port}/alpha`,
    });
    const b = await newRelyingParty(setup, { name: 'Beta' });
    const db = setup.app.database.db;
    const sa = await createSession(db, { userId: account.userId, clientId: a, scope: 'common' });
    const sb = await createSession(db, { userId: account.userId, clientId: b, scope: 'common' });
    await setup.close();

    const first = await serverProcess();
    const ended = await send(first.url, 'DELETE', `/v4/sessions/${sa.sessionId}`, {
      headers: { authorization: `Bearer ${sb.accessToken}` },
    });
    assert.ok(ended.status < 300, ended.text);
    await waitFor('a failed try', () => first.output().includes('back-channel logout failed; trying again later'));
    first.child.kill('SIGKILL');
    await new Promise((done) => first.child.once('exit', done));

    const alive = new Receiver();
    await alive.start(port);
    try {
      const second = await serverProcess();
      const delivered = await waitFor('the delivery by the second process', () => alive.at('alpha')[0], 30_000);
      const claims = JSON.parse(Buffer.from(delivered.token.split('.')[1]!, 'base64url').toString());
      assert.equal(claims.sid, sa.sessionId);
      assert.equal(claims.aud, a);
      await waitFor('the delivery to be logged', () => second.output().includes('back-channel logout delivered'));
      second.child.kill('SIGTERM');
      await new Promise((done) => second.child.once('exit', done));
    } finally {
      await alive.close();
    }
  });
});
