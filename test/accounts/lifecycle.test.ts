/**
 * The account lifecycle (DESIGN "Operating a public service"): locking refuses every way in and
 * acts on every instance at once, unlocking restores sign-in only, erasure removes every row about
 * the account (walking the schema's tables), the export holds no secret, the last operator stays,
 * suspended applications, the admin CLI's commands and shapes, and idempotence.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { setTotpSecret } from '../../src/accounts/accounts.ts';
import {
  endAllSessions,
  eraseAccount,
  exportData,
  type LifecycleContext,
  lockAccount,
  makeOperator,
  removeTwoStep,
  revokeOperator,
  sendReset,
  unlockAccount,
} from '../../src/accounts/lifecycle.ts';
import { completeReset } from '../../src/accounts/self-service.ts';
import { totpCode } from '../../src/accounts/totp.ts';
import { issueRequest } from '../../src/accounts/verification-requests.ts';
import { newUser, signedHeaders } from '../helpers/keys.ts';
import {
  FormClient,
  newAccount,
  newApp,
  pkcePair,
  startLogin,
  tokenRequest,
  tokensThroughPages,
} from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';

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

describe('account lifecycle', () => {
  let database: TestDatabase;
  let server: TestServer;
  let other: TestServer;
  const ctx = (): LifecycleContext => ({
    db: server.app.database.db,
    applicationSessions: server.app.applicationSessions,
    erasers: server.app.accountErasers,
    via: 'web',
    actorId: null,
  });
  const bearer = (instance: TestServer, token: string) =>
    instance.request('GET', '/v4/users?pageSize=1', { headers: { authorization: `Bearer ${token}` } });
  const eventsOf = (userId: string, kind: string) =>
    server.app.database.db
      .selectFrom('security_events')
      .selectAll()
      .where('user_id', '=', userId)
      .where('kind', '=', kind)
      .execute();

  before(async () => {
    database = await freshDatabase();
    server = await startServer({ database });
    other = await startServer({ database });
  });
  after(async () => {
    await other?.close();
    await server?.close();
    await database?.drop();
  });

  test('a lock refuses every way in, on both instances at once; unlocking restores sign-in, not sessions', async () => {
    const app = await newApp(server, { confidential: true });
    const account = await newAccount(server);
    const tokens = await tokensThroughPages(server, app, account);
    assert.equal((await bearer(other, tokens.access_token)).status, 200);

    // A device authorization approved before the lock.
    const { verifier, challenge } = pkcePair();
    const started = await server.request('POST', '/v4/device', {
      body: new URLSearchParams({
        client_id: app.clientId,
        client_secret: app.clientSecret!,
        scope: 'common',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(started.status, 201, started.text);
    const browser = new FormClient(server);
    const entered = await browser.submit('/device', { user_code: started.body.user_code });
    const signIn = await browser.fetch(entered.location!);
    await browser.submitOn(signIn.text, { username: account.username, password: account.password });
    const consent = await browser.fetch(entered.location!);
    assert.equal((await browser.submitOn(consent.text, { decision: 'approve' }, /consent$/)).status, 200);

    // A browser signed in to the account page.
    const accountPage = new FormClient(server);
    const signedIn = await accountPage.submit('/account/sign-in', {
      username: account.username,
      password: account.password,
    });
    assert.equal(signedIn.status, 303);

    // Locked on the first instance: the second refuses the token at once.
    assert.deepEqual(await lockAccount(ctx(), account.userId, 'spam from this account'), { kind: 'done' });
    const refused = await bearer(other, tokens.access_token);
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /invalid_token/);
    assert.equal((await bearer(server, tokens.access_token)).status, 401);

    const refresh = await tokenRequest(other, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    });
    assert.equal(refresh.status, 400);
    assert.equal(refresh.body.error, 'invalid_grant');

    const device = await tokenRequest(other, {
      grant_type: DEVICE_GRANT,
      device_code: started.body.device_code,
      code_verifier: verifier,
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    });
    assert.equal(device.status, 400, device.text);
    assert.equal(device.body.error, 'invalid_grant');

    // The browser's sign-in ended.
    assert.equal((await accountPage.fetch('/account')).status, 303);

    // Password sign-in: the page says locked and to contact the operator, never the reason.
    const loginPage = await startLogin(other, { client_id: app.clientId, code_challenge: challenge });
    const again = new FormClient(other);
    const page = await again.fetch(loginPage);
    const denied = await again.submitOn(page.text, { username: account.username, password: account.password });
    assert.equal(denied.status, 403);
    assert.match(denied.text, /locked/);
    assert.match(denied.text, /operator/);
    assert.doesNotMatch(denied.text, /spam/);
    const deniedOnAccount = await new FormClient(other).submit('/account/sign-in', {
      username: account.username,
      password: account.password,
    });
    assert.equal(deniedOnAccount.status, 403);
    assert.doesNotMatch(deniedOnAccount.text, /spam/);
    // A wrong password still says only that: the lock is told to whoever knows the password.
    const wrong = await new FormClient(other).submit('/account/sign-in', {
      username: account.username,
      password: 'not the password',
    });
    assert.equal(wrong.status, 401);
    assert.doesNotMatch(wrong.text, /locked/);

    // A reset proven after the lock does not complete.
    const issued = await issueRequest(server.app.database.db, {
      purpose: 'reset',
      address: account.email,
      userId: account.userId,
    });
    await server.app.database.db
      .updateTable('verification_requests')
      .set({ stage: 'verified' })
      .where('request_id', '=', issued.requestId)
      .execute();
    const reset = await completeReset(
      {
        db: server.app.database.db,
        ip: '127.0.0.1',
        limits: server.app.signInLimits,
        page: 'forgot',
        applicationSessions: server.app.applicationSessions,
        secrets: server.app.secrets,
        send: async () => 'sent',
        links: { baseUrl: server.config.baseUrl },
      },
      { flowToken: issued.flowToken, password: 'a-new-password-for-this-account-42', twoStepCode: '' },
    );
    assert.equal(reset.kind, 'locked');

    // Locking again does nothing more: one event.
    assert.deepEqual(await lockAccount(ctx(), account.userId, 'again'), { kind: 'unchanged' });
    const locked = await eventsOf(account.userId, 'account_locked');
    assert.equal(locked.length, 1);
    assert.equal(JSON.parse(locked[0]!.details).via, 'web');

    // Unlocked: sign-in works again, the ended sessions stay ended.
    assert.deepEqual(await unlockAccount(ctx(), account.userId), { kind: 'done' });
    assert.deepEqual(await unlockAccount(ctx(), account.userId), { kind: 'unchanged' });
    assert.equal((await eventsOf(account.userId, 'account_unlocked')).length, 1);
    assert.equal((await bearer(other, tokens.access_token)).status, 401);
    const back = await new FormClient(other).submit('/account/sign-in', {
      username: account.username,
      password: account.password,
    });
    assert.equal(back.status, 303);
    const fresh = await tokensThroughPages(other, app, account);
    assert.equal((await bearer(server, fresh.access_token)).status, 200);
  });

  test('a lock refuses v1 signatures; an unlock lets them through again', async () => {
    const user = newUser();
    const created = await server.request('POST', '/v1/user.php', {
      body: { user_id: user.userId, public_key: user.publicPem },
    });
    assert.equal(created.status, 200, created.text);
    await lockAccount(ctx(), user.userId, 'abuse');
    const path = `/v1/user.php/${user.userId}`;
    const refused = await other.request('DELETE', path, { headers: signedHeaders(user, 'DELETE', path) });
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.text, /Signature rejected/);
    assert.equal((await other.request('GET', path)).status, 200, 'nothing was deleted');
    await unlockAccount(ctx(), user.userId);
    const deleted = await other.request('DELETE', path, { headers: signedHeaders(user, 'DELETE', path) });
    assert.equal(deleted.status, 200, deleted.text);
  });

  test('operators: the last one can be neither demoted, locked nor deleted; each change records one event', async () => {
    const first = await newAccount(server);
    const second = await newAccount(server);
    // Whatever operators earlier tests left: none here, so these two are the only ones.
    await server.app.database.db.updateTable('users').set({ operator: 0 }).execute();
    assert.deepEqual(await makeOperator(ctx(), first.userId), { kind: 'done' });
    assert.deepEqual(await makeOperator(ctx(), first.userId), { kind: 'unchanged' });
    assert.equal((await eventsOf(first.userId, 'operator_granted')).length, 1);
    assert.deepEqual(await revokeOperator(ctx(), first.userId), { kind: 'last operator' });
    assert.deepEqual(await lockAccount(ctx(), first.userId, 'x'), { kind: 'last operator' });
    assert.deepEqual(await eraseAccount(ctx(), first.userId), { kind: 'last operator' });
    await makeOperator(ctx(), second.userId);
    // Two demotions at once: one wins, the other finds the last operator.
    const outcomes = await Promise.all([revokeOperator(ctx(), first.userId), revokeOperator(ctx(), second.userId)]);
    assert.deepEqual(outcomes.map((outcome) => outcome.kind).sort(), ['done', 'last operator']);
  });

  test('ending sessions and removing two-step by an operator act once', async () => {
    const app = await newApp(server);
    const account = await newAccount(server);
    const tokens = await tokensThroughPages(server, app, account);
    await setTotpSecret(server.app.database.db, account.userId, SECRET);
    const results = await Promise.all([endAllSessions(ctx(), account.userId), endAllSessions(ctx(), account.userId)]);
    assert.deepEqual(results.map((result) => result.kind).sort(), ['done', 'unchanged']);
    assert.equal((await bearer(server, tokens.access_token)).status, 401);
    assert.equal((await eventsOf(account.userId, 'sessions_ended_by_operator')).length, 1);
    assert.deepEqual(await removeTwoStep(ctx(), account.userId), { kind: 'done' });
    assert.deepEqual(await removeTwoStep(ctx(), account.userId), { kind: 'unchanged' });
    assert.equal((await eventsOf(account.userId, 'two_step_removed_by_operator')).length, 1);

    // A reset mail sent by an operator: once for a double submit, never to a locked account.
    const sent: string[] = [];
    const mailing = {
      ...ctx(),
      send: async (to: string) => {
        sent.push(to);
        return 'sent' as const;
      },
      links: { baseUrl: server.config.baseUrl },
    };
    assert.deepEqual(await sendReset(mailing, account.userId), { kind: 'done' });
    assert.deepEqual(await sendReset(mailing, account.userId), { kind: 'unchanged' });
    assert.deepEqual(sent, [account.email]);
    assert.equal((await eventsOf(account.userId, 'reset_sent_by_operator')).length, 1);
    await lockAccount(ctx(), account.userId, 'x');
    await server.app.database.db.deleteFrom('verification_requests').where('user_id', '=', account.userId).execute();
    assert.deepEqual(await sendReset(mailing, account.userId), { kind: 'unchanged' });
    assert.equal(sent.length, 1);
  });

  test('erasure removes every row about the account in every table, and the events keep only the user id', async () => {
    const db = server.app.database.db;
    const account = await newAccount(server, { totpSecret: SECRET });
    const bystander = await newAccount(server);
    // The account's own application, signed in to by someone else.
    const owned = await newApp(server, { name: `${account.username}'s app` });
    await db
      .updateTable('applications')
      .set({ owner_id: account.userId })
      .where('client_id', '=', owned.clientId)
      .execute();
    const bystanderTokens = await tokensThroughPages(server, owned, bystander);
    // What it published: a project, a document, a mod with an engram; a passkey, backup codes, a device trust.
    const now = Date.now();
    await db
      .insertInto('projects')
      .values({
        project_id: crypto.randomUUID(),
        user_id: account.userId,
        title: 't',
        description: 'd',
        game_id: 'Ark',
        revision: 1,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await db
      .insertInto('documents')
      .values({
        document_id: crypto.randomUUID(),
        user_id: account.userId,
        name: 'n',
        description: '',
        revision: 1,
        download_count: 0,
        content: '{}',
        created_at: now,
        last_updated: now,
      })
      .execute();
    await db
      .insertInto('mods')
      .values({
        mod_id: '123456',
        user_id: account.userId,
        name: 'm',
        confirmed: 1,
        confirmation_code: 'c',
        pull_url: null,
        created_at: now,
      })
      .execute();
    await db
      .insertInto('engrams')
      .values({
        uid: 'a'.repeat(32),
        path: '/Game/x',
        class: 'X_C',
        label: 'x',
        availability: 1,
        can_blueprint: 0,
        mod_id: '123456',
        user_id: account.userId,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await db
      .insertInto('passkeys')
      .values({
        credential_id: 'credential-of-the-account',
        user_id: account.userId,
        public_key: 'pk',
        counter: 0,
        transports: '[]',
        name: 'Phone',
        created_at: now,
        last_used_at: null,
      })
      .execute();
    await db.insertInto('backup_codes').values({ user_id: account.userId, code_hash: 'h', created_at: now }).execute();
    await db
      .insertInto('trusted_devices')
      .values({ device_hash: 'dh', user_id: account.userId, created_at: now })
      .execute();
    await setTotpSecret(db, account.userId, SECRET);
    await issueRequest(db, { purpose: 'reset', address: account.email, userId: account.userId });
    // An event naming the person in its details.
    await db
      .insertInto('security_events')
      .values({
        event_id: crypto.randomUUID(),
        kind: 'sign_in_failed',
        user_id: account.userId,
        client_id: null,
        ip: '127.0.0.1',
        details: JSON.stringify({ login: account.username, note: `by ${account.email}`, page: 'sign_in' }),
        created_at: now,
      })
      .execute();

    assert.deepEqual(await eraseAccount(ctx(), account.userId), { kind: 'done' });
    assert.deepEqual(await eraseAccount(ctx(), account.userId), { kind: 'unknown' });

    // Every table of the schema: no column holds the user's id, name or address (events: only the id).
    // PostgreSQL: the introspection sees every schema of the database; only this server's counts.
    const ownSchema =
      server.config.database.kind === 'postgres'
        ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
        : undefined;
    const tables = (await db.introspection.getTables()).filter((table) => table.schema === ownSchema);
    assert.ok(tables.length >= 19, 'the schema was read');
    for (const table of tables) {
      if (table.name.startsWith('kysely_')) continue;
      for (const column of table.columns) {
        if (!/char|text/i.test(column.dataType)) continue;
        const found = await sql<{
          n: number;
        }>`select count(*) as n from ${sql.table(table.name)} where lower(${sql.ref(column.name)}) like ${`%${account.username.toLowerCase()}%`} or ${sql.ref(column.name)} = ${account.userId} or ${sql.ref(column.name)} = ${owned.clientId}`.execute(
          db,
        );
        const count = Number(found.rows[0]?.n ?? 0);
        if (table.name === 'security_events' && (column.name === 'user_id' || column.name === 'client_id')) continue;
        assert.equal(count, 0, `${table.name}.${column.name} still names the erased account`);
      }
    }
    const events = await db.selectFrom('security_events').selectAll().where('user_id', '=', account.userId).execute();
    assert.ok(events.some((event) => event.kind === 'account_deleted'));
    for (const event of events) {
      assert.ok(!event.details.includes(account.username), event.details);
      assert.ok(!event.details.includes(account.email), event.details);
    }
    // The views of the user are gone at once; the application's sessions ended with it.
    assert.equal((await other.request('GET', `/v1/user.php/${account.userId}`)).status, 404);
    assert.equal((await bearer(other, bystanderTokens.access_token)).status, 401);
  });

  test('the export holds the data and no secret; a person deletes their own account', async () => {
    const app = await newApp(server);
    const account = await newAccount(server, { totpSecret: SECRET });
    const browser = new FormClient(server);
    await browser.submit('/account/sign-in', { username: account.username, password: account.password });
    const code = await browser.submit('/account/sign-in', { code: totpCode(SECRET) });
    assert.equal(code.status, 303, code.text);
    const page = await browser.fetch('/account');
    assert.match(page.text, /href="\/account\/data"[^>]*>Download your data/);
    assert.match(page.text, /href="\/account\/delete"[^>]*>Delete your account/);
    await server.app.database.db
      .updateTable('applications')
      .set({ owner_id: account.userId })
      .where('client_id', '=', app.clientId)
      .execute();

    const data = await browser.fetch('/account/data');
    assert.equal(data.status, 200);
    assert.match(data.headers.get('content-disposition') ?? '', /^attachment/);
    const exported = JSON.parse(data.text);
    assert.equal(exported.email, account.email);
    assert.equal(exported.profile.username, account.username);
    assert.equal(exported.applications[0].client_id, app.clientId);
    assert.ok(Array.isArray(exported.security_events) && exported.security_events.length > 0);
    const keys = new Set<string>();
    const walk = (value: unknown) => {
      if (Array.isArray(value)) value.forEach(walk);
      else if (value && typeof value === 'object')
        for (const [key, inner] of Object.entries(value)) {
          keys.add(key);
          walk(inner);
        }
    };
    walk(exported);
    for (const key of keys) assert.doesNotMatch(key, /hash|secret|private|public_key|token|credential/i, key);
    assert.ok(!data.text.includes(SECRET), 'no two-step secret');
    assert.ok(!data.text.includes('$argon2'), 'no password hash');
    assert.equal((await eventsOf(account.userId, 'data_exported')).length, 1);
    // Through the service as well: the same document.
    assert.equal((await exportData(ctx(), account.userId))?.email, account.email);

    // Deleting: the typed username, the password and the code.
    const form = await browser.fetch('/account/delete');
    assert.equal(form.status, 200);
    const unconfirmed = await browser.submitOn(form.text, {
      confirm: 'someone else',
      password: account.password,
      code: totpCode(SECRET),
    });
    assert.equal(unconfirmed.status, 400);
    const wrongPassword = await browser.submitOn(form.text, {
      confirm: account.username,
      password: 'wrong',
      code: totpCode(SECRET),
    });
    assert.equal(wrongPassword.status, 401);
    const deleted = await browser.submitOn(form.text, {
      confirm: account.username,
      password: account.password,
      code: totpCode(SECRET, Date.now() + 30_000),
    });
    assert.equal(deleted.status, 200, deleted.text);
    assert.match(deleted.text, /deleted/);
    const rows = await server.app.database.db
      .selectFrom('users')
      .select('user_id')
      .where('user_id', '=', account.userId)
      .execute();
    assert.equal(rows.length, 0);
    assert.equal((await findApplicationRow(app.clientId)).length, 0, 'its applications went with it');
    const event = (await eventsOf(account.userId, 'account_deleted'))[0];
    assert.equal(JSON.parse(event!.details).by, 'self');
  });

  const findApplicationRow = (clientId: string) =>
    server.app.database.db.selectFrom('applications').select('client_id').where('client_id', '=', clientId).execute();

  test('the admin CLI: list and show as JSON, lock acting on a running instance, suspend and restore, delete', async () => {
    const app = await newApp(server, { confidential: true });
    const account = await newAccount(server);
    const tokens = await tokensThroughPages(server, app, account);
    const prefix = account.username.slice(0, -3).toUpperCase();

    const [listed, shown, unknown] = await Promise.all([
      admin(database.url, 'user', 'list', '--search', prefix, '--json'),
      admin(database.url, 'user', 'show', account.email, '--json'),
      admin(database.url, 'user', 'show', 'nobody-at-all', '--json'),
    ]);
    assert.equal(listed.code, 0, listed.stderr);
    const accounts = JSON.parse(listed.stdout);
    const created = String(accounts[0]?.created);
    assert.deepEqual(accounts, [
      {
        user_id: account.userId,
        username: account.username,
        email: account.email,
        created,
        locked: false,
        operator: false,
      },
    ]);
    assert.ok(!Number.isNaN(Date.parse(created)));
    assert.equal(shown.code, 0, shown.stderr);
    const one = JSON.parse(shown.stdout);
    assert.equal(one.user_id, account.userId);
    assert.equal(one.sessions.length, 1);
    assert.equal(one.sessions[0].client_id, app.clientId);
    assert.deepEqual(one.applications, []);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No user/);

    // Locked by the CLI while both servers run: each refuses the token at once.
    const [locked, suspended] = await Promise.all([
      admin(database.url, 'user', 'lock', account.username, '--reason', 'chargeback'),
      admin(database.url, 'app', 'suspend', app.clientId),
    ]);
    assert.equal(locked.code, 0, locked.stderr);
    assert.equal(suspended.code, 0, suspended.stderr);
    assert.equal((await bearer(other, tokens.access_token)).status, 401);
    assert.equal((await bearer(server, tokens.access_token)).status, 401);
    const lockEvent = (await eventsOf(account.userId, 'account_locked'))[0];
    assert.equal(JSON.parse(lockEvent!.details).via, 'cli');
    const lockedList = JSON.parse(
      (await admin(database.url, 'user', 'list', '--state', 'locked', '--search', prefix, '--json')).stdout,
    );
    assert.deepEqual(
      lockedList.map((row: { user_id: string; locked: boolean }) => [row.user_id, row.locked]),
      [[account.userId, true]],
    );

    // The suspended application: its authorization requests show a page saying so; its client authentication fails.
    const { challenge } = pkcePair();
    const login = await startLogin(other, { client_id: app.clientId, code_challenge: challenge });
    const suspendedPage = await new FormClient(other).fetch(login);
    assert.equal(suspendedPage.status, 403);
    assert.match(suspendedPage.text, /suspended/);
    const clientAuth = await tokenRequest(other, {
      grant_type: 'refresh_token',
      refresh_token: 'anything',
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    });
    assert.equal(clientAuth.status, 401, clientAuth.text);
    assert.equal(clientAuth.body.error, 'invalid_client');
    const suspendEvents = await server.app.database.db
      .selectFrom('security_events')
      .selectAll()
      .where('client_id', '=', app.clientId)
      .where('kind', '=', 'application_suspended')
      .execute();
    assert.equal(suspendEvents.length, 1);

    const [restored, unlocked] = await Promise.all([
      admin(database.url, 'app', 'restore', app.clientId),
      admin(database.url, 'user', 'unlock', account.userId),
    ]);
    assert.equal(restored.code, 0, restored.stderr);
    assert.equal(unlocked.code, 0, unlocked.stderr);
    const afterRestore = await tokensThroughPages(other, app, account);
    assert.equal((await bearer(server, afterRestore.access_token)).status, 200);

    const refusedDelete = await admin(database.url, 'user', 'delete', account.username);
    assert.equal(refusedDelete.code, 1);
    const deleted = await admin(database.url, 'user', 'delete', account.username, '--yes');
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal((await bearer(other, afterRestore.access_token)).status, 401);
    assert.equal(
      (
        await server.app.database.db
          .selectFrom('users')
          .select('user_id')
          .where('user_id', '=', account.userId)
          .execute()
      ).length,
      0,
    );
  });
});
