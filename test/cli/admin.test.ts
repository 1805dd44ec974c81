/**
 * The admin CLI (src/cli/admin.ts, DESIGN "Operational contract"), run as a process against a
 * fresh database; what it did is then checked through a server on that same database.
 * Each spawn costs a second or more, so there are few of them, and independent ones run side
 * by side.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { openAccountPrivateKey } from '../../src/accounts/key-pair.ts';
import { totpCode } from '../../src/accounts/totp.ts';
import { FormClient, pkcePair, REDIRECT_URI, startLogin, tokenRequest } from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** RFC 6238's seed "12345678901234567890" in base32. */
const RFC_SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
const OTHER_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
const HTTPS_REDIRECT = 'https://app.example/callback';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function admin(databaseUrl: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'node_modules/.bin/tsx',
      ['src/cli/admin.ts', ...args],
      { env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/**
 * Runs named commands, two at a time; answers their runs by name. Each command starts a process
 * that loads the service's modules through tsx (seconds of CPU): all at once, on a busy 2-core
 * machine, they ran into the timeout.
 */
async function runAll(databaseUrl: string, commands: Record<string, string[]>): Promise<Record<string, Run>> {
  const queue = Object.entries(commands);
  const runs: [string, Run][] = [];
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      for (let next = queue.shift(); next; next = queue.shift())
        runs.push([next[0], await admin(databaseUrl, ...next[1])]);
    }),
  );
  return Object.fromEntries(runs);
}

function assertOk(run: Run | undefined): string {
  assert.ok(run);
  assert.equal(run.code, 0, `exit ${run.code}: ${run.stderr}`);
  assert.equal(run.stderr, '');
  return run.stdout;
}

/** A failed command: non-zero, `error: <message>` on stderr, nothing on stdout, no stack trace. */
function assertFails(run: Run | undefined, message: RegExp) {
  assert.ok(run);
  assert.notEqual(run.code, 0, `expected a failure, got: ${run.stdout}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /^error: /);
  assert.match(run.stderr, message);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace for a known error');
}

/** The single JSON line a --json command prints. */
function jsonLine(stdout: string) {
  assert.match(stdout, /^[^\n]+\n$/, 'exactly one line');
  return JSON.parse(stdout);
}

describe('admin CLI', () => {
  let database: TestDatabase;
  let server: TestServer;
  const out: Record<string, Run> = {};
  /** The public app every sign-in below uses. */
  let publicApp: string;

  before(async () => {
    database = await freshDatabase();
    // The first command migrates the empty database; the others can then run at the same time.
    out.publicApp = await admin(
      database.url,
      'app',
      'create',
      '--name',
      'CLI Public',
      '--redirect-uri',
      REDIRECT_URI,
      '--redirect-uri',
      HTTPS_REDIRECT,
      '--scopes',
      'common users:read',
      '--json',
    );
    publicApp = JSON.parse(out.publicApp.stdout || '{}').client_id;
    Object.assign(
      out,
      await runAll(database.url, {
        confidentialApp: [
          'app',
          'create',
          '--name',
          'CLI Confidential',
          '--redirect-uri',
          REDIRECT_URI,
          '--scopes',
          'common users:read',
          '--confidential',
        ],
        alice: [
          'user',
          'create',
          '--username',
          'cli-alice',
          '--email',
          'Alice@Example.com',
          '--password',
          'first password',
          '--json',
        ],
        bob: [
          'user',
          'create',
          '--username',
          'cli_bob',
          '--email',
          'bob@example.com',
          '--password',
          'bob password kettle',
          '--totp-secret',
          RFC_SECRET,
        ],
        badRedirect: ['app', 'create', '--name', 'Bad', '--redirect-uri', 'http://evil.example/callback', '--json'],
      }),
    );
    const aliceId = JSON.parse(out.alice?.stdout || '{}').user_id ?? 'missing';
    Object.assign(
      out,
      await runAll(database.url, {
        list: ['app', 'list', '--json'],
        setPassword: ['user', 'set-password', 'CLI-ALICE', '--password', 'second password'],
        aliceTotp: ['user', 'totp', aliceId, '--secret', OTHER_SECRET.toLowerCase()],
        duplicate: [
          'user',
          'create',
          '--username',
          'CLI-Alice',
          '--email',
          'other@example.com',
          '--password',
          'other password',
        ],
        unknownUser: ['user', 'set-password', 'nobody-here', '--password', 'whatever password'],
        badSecret: ['user', 'totp', 'cli_bob', '--secret', 'not base32!'],
        deleteUnknown: ['app', 'delete', '00000000-0000-4000-8000-000000000000'],
        weakCreate: [
          'user',
          'create',
          '--username',
          'cli-weak',
          '--email',
          'weak@example.com',
          '--password',
          'password123',
        ],
        personalSet: ['user', 'set-password', 'cli-alice', '--password', 'cli-alice2024'],
        shortSet: ['user', 'set-password', 'cli-alice', '--password', 'Xk9#vq2!'],
      }),
    );
    server = await startServer({ database });
  });
  after(async () => {
    await server?.close();
    await database?.drop();
  });

  /**
   * Signs in through the pages (answering a two-step code when asked) and exchanges the code;
   * answers whether the password was accepted, whether a code was asked, and the token reply.
   */
  async function signIn(
    username: string,
    password: string,
    options: { secret?: string; clientId?: string; clientSecret?: string } = {},
  ) {
    const clientId = options.clientId ?? publicApp;
    const { verifier, challenge } = pkcePair();
    const page = await startLogin(server, {
      client_id: clientId,
      code_challenge: challenge,
      scope: 'common users:read',
    });
    const browser = new FormClient(server);
    const signedIn = await browser.submit(page, { username, password });
    if (signedIn.status !== 303)
      return {
        signedIn: false as const,
        status: signedIn.status,
        page: signedIn.text.replace(/[\s\S]*<main[^>]*>/, ''),
      };
    let current = await browser.fetch(page);
    const askedForCode = /name="code"/.test(current.text);
    if (askedForCode) {
      assert.ok(options.secret, 'a two-step code was asked for');
      // Each sign-in here answers the current code, and a time step is accepted only once per user
      // (tested in test/oauth/two-step.test.ts): forget the last one, so these need not wait 30 s.
      await server.app.database.db.updateTable('users').set({ totp_last_step: null }).execute();
      const verified = await browser.submitOn(current.text, { code: totpCode(options.secret) });
      assert.equal(verified.status, 303, verified.text);
      current = await browser.fetch(page);
    }
    const decided = await browser.submitOn(current.text, { decision: 'approve' }, /consent$/);
    assert.equal(decided.status, 303, decided.text);
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: clientId,
      code: new URL(decided.location!).searchParams.get('code')!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      ...(options.clientSecret ? { client_secret: options.clientSecret } : {}),
    });
    return { signedIn: true as const, askedForCode, tokens };
  }

  async function whoAmI(accessToken: string) {
    const reply = await server.request('GET', '/v4/user', { headers: { authorization: `Bearer ${accessToken}` } });
    assert.equal(reply.status, 200, reply.text);
    return reply.body as { userId: string; username: string };
  }

  test('app create --json prints only {client_id, client_secret: null} for a public app, with every redirect URI registered', async () => {
    const created = jsonLine(assertOk(out.publicApp));
    assert.deepEqual(Object.keys(created).sort(), ['client_id', 'client_secret']);
    assert.match(created.client_id, UUID);
    assert.equal(created.client_secret, null);
    for (const uri of [REDIRECT_URI, HTTPS_REDIRECT]) {
      const query = new URLSearchParams({
        client_id: created.client_id,
        redirect_uri: uri,
        response_type: 'code',
        scope: 'common users:read',
        state: 's',
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      });
      const reply = await server.request('GET', `/v4/login?${query}`);
      assert.equal(reply.status, 302, `${uri}: ${reply.text}`);
    }
  });

  test('app create --confidential prints the client id and a secret once; the secret authenticates the client', async () => {
    const match =
      /^client_id: ([0-9a-f-]{36})\nclient_secret: ([A-Za-z0-9_-]{43}) {2}\(shown once; store it now\)\n$/.exec(
        assertOk(out.confidentialApp),
      );
    assert.ok(match, out.confidentialApp!.stdout);
    const [, clientId, secret] = match;
    const good = await signIn('cli-alice', 'second password', { clientId, clientSecret: secret, secret: OTHER_SECRET });
    assert.ok(good.signedIn, `${good.status}: ${good.page}\n${JSON.stringify(out.setPassword)}`);
    assert.equal(good.tokens.status, 200, good.tokens.text);
    assert.equal((await whoAmI(good.tokens.body.access_token)).username, 'cli-alice');
    const wrong = await signIn('cli-alice', 'second password', {
      clientId,
      clientSecret: 'not-the-secret',
      secret: OTHER_SECRET,
    });
    assert.ok(wrong.signedIn);
    assert.equal(wrong.tokens.status, 401, wrong.tokens.text);
    assert.equal(wrong.tokens.body.error, 'invalid_client');
  });

  test('app list --json prints every application with its settings', () => {
    const list = jsonLine(assertOk(out.list)) as Array<Record<string, unknown>>;
    assert.equal(list.length, 2, 'the failed create added nothing');
    assert.deepEqual(
      list.find((app) => app.client_id === publicApp),
      {
        client_id: publicApp,
        name: 'CLI Public',
        redirect_uris: [REDIRECT_URI, HTTPS_REDIRECT],
        scopes: ['common', 'users:read'],
        confidential: false,
      },
    );
    const confidential = list.find((app) => app.client_id !== publicApp);
    assert.equal(confidential?.name, 'CLI Confidential');
    assert.equal(confidential?.confidential, true);
    assert.equal('client_secret' in confidential!, false, 'secrets are never listed');
  });

  test('user create --json prints only {user_id}; the user exists with that id', async () => {
    const created = jsonLine(assertOk(out.alice));
    assert.deepEqual(Object.keys(created), ['user_id']);
    assert.match(created.user_id, UUID);
    const signedIn = await signIn('alice@example.com', 'second password', { secret: OTHER_SECRET });
    assert.ok(signedIn.signedIn);
    assert.equal((await whoAmI(signedIn.tokens.body.access_token)).userId, created.user_id);
    // With its key pair, sealed under the key the server uses too (SECRETS_KEY, or the file beside SQLite).
    const row = await server.app.database.db
      .selectFrom('users')
      .select(['public_key', 'private_key'])
      .where('user_id', '=', created.user_id)
      .executeTakeFirstOrThrow();
    assert.equal((await server.request('GET', `/v1/user.php/${created.user_id}`)).body.public_key, row.public_key);
    assert.match(
      openAccountPrivateKey(row.private_key, created.user_id, row.public_key) ?? 'unreadable',
      /^-----BEGIN PRIVATE KEY-----/,
    );
  });

  test('user create --totp-secret (text mode prints "user_id: …") asks for codes of that secret', async () => {
    const bob = /^user_id: ([0-9a-f-]{36})\n$/.exec(assertOk(out.bob));
    assert.ok(bob, out.bob!.stdout);
    const signedIn = await signIn('cli_bob', 'bob password kettle', { secret: RFC_SECRET });
    assert.ok(signedIn.signedIn);
    assert.equal(signedIn.askedForCode, true);
    const me = await whoAmI(signedIn.tokens.body.access_token);
    assert.deepEqual(me.userId, bob[1]);
    assert.equal(me.username, 'cli_bob');
  });

  test('user set-password (by username, any case) replaces the password', async () => {
    assert.equal(assertOk(out.setPassword), 'password set\n');
    const old = await signIn('cli-alice', 'first password');
    assert.equal(old.signedIn, false);
    assert.equal(old.status, 401);
    const now = await signIn('cli-alice', 'second password', { secret: OTHER_SECRET });
    assert.ok(now.signedIn);
    assert.equal(now.tokens.status, 200);
  });

  test('user totp --secret (by user id) turns two-step on with that secret and prints its otpauth:// URI', async () => {
    const uri = new URL(assertOk(out.aliceTotp).trim());
    assert.equal(uri.protocol, 'otpauth:');
    assert.equal(uri.host, 'totp');
    assert.match(decodeURIComponent(uri.pathname), /cli-alice/);
    assert.equal(uri.searchParams.get('secret'), OTHER_SECRET, 'stored upper-case');
    const signedIn = await signIn('cli-alice', 'second password', { secret: OTHER_SECRET });
    assert.ok(signedIn.signedIn);
    assert.equal(signedIn.askedForCode, true);
    assert.equal(signedIn.tokens.status, 200);
  });

  test('bad input fails with a clear message and a non-zero exit code', () => {
    assertFails(out.badRedirect, /Redirect URI http:\/\/evil\.example\/callback must use https/);
    assertFails(out.duplicate, /That username or email address is taken/);
    assertFails(out.unknownUser, /No user nobody-here/);
    assertFails(out.badSecret, /--secret must be base32, at least 16 characters/);
    assertFails(out.deleteUnknown, /No application 00000000-0000-4000-8000-000000000000/);
  });

  test('user create and set-password refuse a commonly used, personal or short password (the password rules)', async () => {
    assertFails(out.weakCreate, /commonly used password\. Choose a password that is harder to guess/);
    assertFails(out.personalSet, /personal .*Choose a password that is harder to guess/);
    assertFails(out.shortSet, /at least 10 characters/);
    assert.equal(
      await server.app.database.db
        .selectFrom('users')
        .select('user_id')
        .where('username', '=', 'cli-weak')
        .executeTakeFirst(),
      undefined,
      'no account was created',
    );
  });

  test('user totp --disable (by email) turns two-step off', async () => {
    assert.equal(
      assertOk(await admin(database.url, 'user', 'totp', 'BOB@example.com', '--disable')),
      'two-step verification turned off\n',
    );
    const signedIn = await signIn('cli_bob', 'bob password kettle');
    assert.ok(signedIn.signedIn);
    assert.equal(signedIn.askedForCode, false);
    assert.equal(signedIn.tokens.status, 200);
  });

  test('app delete removes the application and its sessions; a bad DATABASE_URL is reported by name', async () => {
    const signedIn = await signIn('cli_bob', 'bob password kettle');
    assert.ok(signedIn.signedIn);
    const token = signedIn.tokens.body.access_token;
    assert.equal((await whoAmI(token)).username, 'cli_bob');
    const [deleted, badUrl] = await Promise.all([
      admin(database.url, 'app', 'delete', publicApp),
      admin('mysql://nowhere', 'app', 'list'),
    ]);
    assert.equal(assertOk(deleted), `deleted ${publicApp}\n`);
    assertFails(badUrl, /DATABASE_URL/);
    const query = new URLSearchParams({
      client_id: publicApp,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'common',
      state: 's',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    });
    const reply = await server.request('GET', `/v4/login?${query}`);
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.error, 'invalid_request');
    const refused = await server.request('GET', '/v4/user', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(refused.status, 401, 'the tokens issued to the deleted app are dead');
  });
  test('events lists security events newest first, by --user and --since; --json prints one JSON array', async () => {
    const later = new Date(Date.now() + 60_000).toISOString();
    const runs = await runAll(database.url, {
      all: ['events', '--json'],
      alice: ['events', '--user', 'CLI-ALICE', '--json'],
      future: ['events', '--since', later, '--json'],
      text: ['events', '--user', 'cli_bob', '--since', '2020-01-01'],
      badSince: ['events', '--since', 'yesterday'],
    });
    const all = jsonLine(assertOk(runs.all)) as Array<Record<string, any>>;
    const times = all.map((event) => Date.parse(event.time));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
      'newest first',
    );
    for (const event of all)
      assert.deepEqual(Object.keys(event).sort(), [
        'client_id',
        'details',
        'ip',
        'kind',
        'time',
        'user_id',
        'username',
      ]);
    const kinds = (kind: string) => all.filter((event) => event.kind === kind);
    assert.deepEqual(
      kinds('application_created')
        .map((event) => event.details.name)
        .sort(),
      ['CLI Confidential', 'CLI Public'],
    );
    assert.deepEqual(
      kinds('application_deleted').map((event) => event.client_id),
      [publicApp],
    );
    assert.equal(kinds('client_authentication_failed').length, 1, 'the wrong client secret above');
    assert.ok(kinds('sign_in_succeeded').every((event) => event.ip === '127.0.0.1' && event.client_id !== null));

    const aliceId = JSON.parse(out.alice!.stdout).user_id;
    const alice = jsonLine(assertOk(runs.alice)) as Array<Record<string, any>>;
    assert.ok(alice.length >= 3);
    assert.ok(alice.every((event) => event.user_id === aliceId && event.username === 'cli-alice'));
    assert.deepEqual(
      alice.filter((event) => event.kind === 'password_changed').map((event) => event.details),
      [{ via: 'admin' }],
    );
    assert.equal(alice.filter((event) => event.kind === 'two_step_enabled').length, 1);
    assert.deepEqual(jsonLine(assertOk(runs.future)), []);

    const lines = assertOk(runs.text).trimEnd().split('\n');
    assert.ok(
      lines.some((line) =>
        /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z {2}two_step_disabled user=cli_bob {2}\{"via":"admin"\}$/.test(
          line,
        ),
      ),
      lines.join('\n'),
    );
    assert.ok(lines.every((line) => line.includes(' user=cli_bob')));
    assertFails(runs.badSince, /--since must be an ISO 8601 time/);
  });
});
