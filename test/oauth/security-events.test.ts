/**
 * Security events (DESIGN "Operations"): every kind is recorded once per occurrence, with the
 * user, the application, the client IP and the time, stored and logged as one JSON line, and
 * never carrying a secret. Driven through the real pages, endpoints and admin CLI.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { findAccountByLogin } from '../../src/accounts/accounts.ts';
import {
  endAllSessions,
  eraseAccount,
  type LifecycleContext,
  lockAccount,
  makeOperator,
  removeTwoStep,
  revokeOperator,
  sendReset,
  unlockAccount,
} from '../../src/accounts/lifecycle.ts';
import { listSecurityEvents, SECURITY_EVENT_KINDS, type SecurityEvent } from '../../src/accounts/security-events.ts';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { createSession } from '../../src/oauth/sessions.ts';
import { restoreApplication, suspendApplication } from '../../src/oauth/suspension.ts';
import { accountMailer } from '../../src/web/self-service-support.ts';
import { codeIn, type Mailbox, startMailbox, verifyLinkIn } from '../helpers/mail.ts';
import {
  authorize,
  FormClient,
  newAccount,
  newApp,
  pkcePair,
  REDIRECT_URI,
  startLogin,
  tokenRequest,
  tokensThroughPages,
} from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';
import { awayFromStepEdge } from '../helpers/totp.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Wrong passwords an account may have per 15 minutes (src/web/sign-in.ts). */
const PASSWORD_FAILURES_ALLOWED = 10;

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

describe('security events', () => {
  let database: TestDatabase;
  let server: TestServer;
  const started = Date.now();
  /** Every secret the tests below used; none may appear in an event or a log line. */
  const secrets: [string, string][] = [];
  const remember = (name: string, value: string | null | undefined) => {
    if (value) secrets.push([name, value]);
  };

  let mailbox: Mailbox;

  before(async () => {
    database = await freshDatabase();
    // A real SMTP server, so the messages' codes and links are not written to the log.
    mailbox = await startMailbox();
    server = await startServer({ database, env: { SMTP_URL: mailbox.url } });
  });
  after(async () => {
    await server?.close();
    await mailbox?.close();
    await database?.drop();
  });

  const events = () => listSecurityEvents(server.app.database.db);

  /** The one event of `kind` (for `userId` when given), checked for time, IP and its log line. */
  async function onlyEvent(
    kind: string,
    filter: { userId?: string; clientId?: string } = {},
    ip: string | null = '127.0.0.1',
  ): Promise<SecurityEvent> {
    const matching = (await events()).filter(
      (e) =>
        e.kind === kind &&
        (!filter.userId || e.userId === filter.userId) &&
        (!filter.clientId || e.clientId === filter.clientId),
    );
    assert.equal(matching.length, 1, `one ${kind} event: ${JSON.stringify(matching)}`);
    const [event] = matching;
    assert.ok(event!.createdAt >= started && event!.createdAt <= Date.now(), 'recorded now');
    assert.equal(event!.ip, ip);
    if (filter.userId) assert.equal(event!.userId, filter.userId);
    if (filter.clientId) assert.equal(event!.clientId, filter.clientId);
    if (ip !== null) {
      const lines = server.logs.map((line) => JSON.parse(line)).filter((line) => line.eventId === event!.eventId);
      assert.equal(lines.length, 1, `${kind} is logged as one line`);
      assert.equal(lines[0].securityEvent, kind);
      assert.equal(lines[0].ip, ip);
      assert.equal(lines[0].userId, event!.userId);
      assert.equal(lines[0].clientId, event!.clientId);
    }
    return event!;
  }

  test('sign-in: a wrong password, then the right one, through the login pages', async () => {
    const app = await newApp(server);
    const account = await newAccount(server);
    remember('password', account.password);
    const { challenge } = pkcePair();
    const browser = new FormClient(server);
    const page = await startLogin(server, { client_id: app.clientId, code_challenge: challenge });
    const wrong = await browser.submit(page, { username: account.username, password: 'not the password' });
    assert.equal(wrong.status, 401);
    remember('wrong password', 'not the password');
    const right = await browser.submit(page, { username: account.username, password: account.password });
    assert.equal(right.status, 303);
    const failed = await onlyEvent('sign_in_failed', { userId: account.userId, clientId: app.clientId });
    assert.equal(failed.details.reason, 'wrong_password');
    await onlyEvent('sign_in_succeeded', { userId: account.userId, clientId: app.clientId });
  });

  test('lockout: attempts past the per-account limit are refused and recorded once', async () => {
    const app = await newApp(server);
    const account = await newAccount(server);
    const { challenge } = pkcePair();
    const page = await startLogin(server, { client_id: app.clientId, code_challenge: challenge });
    const browser = new FormClient(server);
    for (let i = 0; i < PASSWORD_FAILURES_ALLOWED; i++) {
      assert.equal((await browser.submit(page, { username: account.username, password: `wrong ${i}` })).status, 401);
    }
    for (let i = 0; i < 3; i++) {
      const refused = await browser.submit(page, { username: account.username, password: account.password });
      assert.equal(refused.status, 429);
    }
    // Refused attempts can be repeated without limit: one event a minute, not one per request.
    const locked = await onlyEvent('sign_in_locked_out', { userId: account.userId, clientId: app.clientId });
    assert.equal(locked.details.step, 'password');
    assert.equal(
      (await events()).filter((e) => e.kind === 'sign_in_failed' && e.userId === account.userId).length,
      PASSWORD_FAILURES_ALLOWED,
    );
  });

  test('a wrong two-step code', async () => {
    const app = await newApp(server);
    const secret = newTotpSecret();
    remember('totp secret', secret);
    const account = await newAccount(server, { totpSecret: secret });
    const { challenge } = pkcePair();
    const page = await startLogin(server, { client_id: app.clientId, code_challenge: challenge });
    const browser = new FormClient(server);
    assert.equal((await browser.submit(page, { username: account.username, password: account.password })).status, 303);
    const wrongCode = totpCode(secret, Date.now() + 5 * 60_000);
    const refused = await browser.submit(page, { code: wrongCode });
    assert.equal(refused.status, 401);
    await onlyEvent('two_step_failed', { userId: account.userId, clientId: app.clientId });
    assert.equal(
      (await events()).filter((e) => e.userId === account.userId && e.kind === 'sign_in_succeeded').length,
      0,
      'not signed in yet',
    );
  });

  test('refresh-token reuse revokes the session and is recorded with it', async () => {
    const app = await newApp(server);
    const account = await newAccount(server);
    const tokens = await tokensThroughPages(server, app, account);
    remember('access token', tokens.access_token);
    remember('refresh token', tokens.refresh_token);
    const refreshed = await tokenRequest(server, {
      grant_type: 'refresh_token',
      client_id: app.clientId,
      refresh_token: tokens.refresh_token,
    });
    assert.equal(refreshed.status, 200);
    remember('second refresh token', refreshed.body.refresh_token);
    const reused = await tokenRequest(server, {
      grant_type: 'refresh_token',
      client_id: app.clientId,
      refresh_token: tokens.refresh_token,
    });
    assert.equal(reused.body.error, 'invalid_grant');
    const event = await onlyEvent('refresh_token_reused', { userId: account.userId, clientId: app.clientId });
    assert.equal(event.details.session_revoked, true);
    assert.match(String(event.details.session_id), UUID);
    const after = await server.request('GET', '/v4/user', {
      headers: { authorization: `Bearer ${refreshed.body.access_token}` },
    });
    assert.equal(after.status, 401, 'the session is revoked');
  });

  test('a replayed authorization code revokes its session and is recorded', async () => {
    const app = await newApp(server);
    const account = await newAccount(server);
    const { verifier, challenge } = pkcePair();
    const back = await authorize(server, {
      clientId: app.clientId,
      challenge,
      username: account.username,
      password: account.password,
    });
    const code = back.searchParams.get('code')!;
    remember('authorization code', code);
    remember('code verifier', verifier);
    const exchange = () =>
      tokenRequest(server, {
        grant_type: 'authorization_code',
        client_id: app.clientId,
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
      });
    const first = await exchange();
    assert.equal(first.status, 200);
    remember('access token 2', first.body.access_token);
    const replay = await exchange();
    assert.equal(replay.body.error, 'invalid_grant');
    const event = await onlyEvent('authorization_code_replayed', { userId: account.userId, clientId: app.clientId });
    assert.equal(event.details.session_revoked, true);
  });

  test('a failed client authentication (wrong secret, by Basic) names the client; a burst of them is one event', async () => {
    const app = await newApp(server, { confidential: true });
    remember('client secret', app.clientSecret);
    remember('wrong client secret', 'wrong-secret-value-123');
    const basic = Buffer.from(`${app.clientId}:wrong-secret-value-123`).toString('base64');
    for (let i = 0; i < 3; i++) {
      const reply = await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: 'whatever-refresh-token' },
        { authorization: `Basic ${basic}` },
      );
      assert.equal(reply.status, 401);
    }
    const event = await onlyEvent('client_authentication_failed', { clientId: app.clientId });
    assert.equal(event.userId, null);
    assert.equal(event.details.endpoint, '/v4/login');
  });

  test('the account page: ending a session and a device trust, turning two-step on and off, changing the password', async () => {
    const app = await newApp(server);
    const secret = newTotpSecret();
    remember('totp secret 2', secret);
    const account = await newAccount(server, { totpSecret: secret });
    // A trusted device and a session, through the login pages.
    const { verifier, challenge } = pkcePair();
    await awayFromStepEdge();
    const back = await authorize(server, {
      clientId: app.clientId,
      challenge,
      username: account.username,
      password: account.password,
      deviceId: 'device-1',
      totpCode: () => totpCode(secret, Date.now() - 30_000),
    });
    const exchanged = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      code: back.searchParams.get('code')!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      device_id: 'device-1',
    });
    assert.equal(exchanged.status, 200, exchanged.text);
    remember('access token 3', exchanged.body.access_token);

    const browser = new FormClient(server);
    assert.equal((await browser.fetch('/account')).location, '/account/sign-in');
    assert.equal(
      (await browser.submit('/account/sign-in', { username: account.username, password: account.password })).status,
      303,
    );
    assert.equal((await browser.submit('/account/sign-in', { code: totpCode(secret) })).status, 303);
    let page = await browser.fetch('/account');
    assert.equal(page.status, 200, page.text);

    const sessionId = /name="end_session" value="([^"]+)"/.exec(page.text)?.[1];
    assert.match(sessionId ?? '', UUID);
    assert.equal((await browser.submitOn(page.text, { end_session: sessionId! }, /sessions$/)).status, 303);
    await onlyEvent('session_ended', { userId: account.userId, clientId: app.clientId });

    page = await browser.fetch('/account');
    const trustId = /name="end_trust" value="([^"]+)"/.exec(page.text)?.[1];
    assert.ok(trustId);
    assert.equal((await browser.submitOn(page.text, { end_trust: trustId }, /devices$/)).status, 303);
    await onlyEvent('device_trust_ended', { userId: account.userId });

    page = await browser.fetch('/account');
    assert.equal(
      (await browser.submitOn(page.text, { code: totpCode(secret, Date.now() + 30_000), two_step: 'off' }, /two-step$/))
        .status,
      303,
    );
    await onlyEvent('two_step_disabled', { userId: account.userId });

    page = await browser.fetch('/account');
    const uri = /id="otpauth-uri">([^<]+)</.exec(page.text)?.[1]?.replace(/&amp;/g, '&');
    const newSecret = new URL(uri!).searchParams.get('secret')!;
    remember('new totp secret', newSecret);
    assert.equal(
      (await browser.submitOn(page.text, { code: totpCode(newSecret), two_step: 'on' }, /two-step$/)).status,
      303,
    );
    await onlyEvent('two_step_enabled', { userId: account.userId });

    // The first backup codes are shown once, on their own page; one of them makes a new set.
    page = await browser.fetch('/account/backup-codes');
    const backupCodes = [
      ...(/id="backup-codes"[^>]*>([\s\S]*?)<\/ul>/.exec(page.text)?.[1] ?? '').matchAll(/<code>([^<]+)<\/code>/g),
    ].map((m) => m[1]!);
    assert.equal(backupCodes.length, 10);
    for (const [i, code] of backupCodes.entries()) remember(`backup code ${i}`, code);
    page = await browser.fetch('/account');
    assert.equal(
      (await browser.submitOn(page.text, { code: backupCodes[0]!, backup_codes: 'new' }, /backup-codes$/)).status,
      303,
    );
    const used = await onlyEvent('backup_code_used', { userId: account.userId });
    assert.equal(used.details.backup_codes_left, 9);
    await onlyEvent('backup_codes_renewed', { userId: account.userId });
    page = await browser.fetch('/account/backup-codes');
    for (const m of page.text.matchAll(/<li><code>([^<]+)<\/code>/g)) remember('renewed backup code', m[1]);

    page = await browser.fetch('/account');
    remember('new password', 'a brand new password');
    assert.equal(
      (
        await browser.submitOn(
          page.text,
          { current_password: account.password, new_password: 'a brand new password' },
          /password$/,
        )
      ).status,
      303,
    );
    const changed = await onlyEvent('password_changed', { userId: account.userId });
    assert.equal(changed.details.page, 'account');
    const signIns = (await events()).filter((e) => e.kind === 'sign_in_succeeded' && e.userId === account.userId);
    assert.deepEqual(signIns.map((e) => e.details.page).sort(), ['account', 'sign_in']);
  });

  test('the account page: signing another browser out, one by one and all others at once', async () => {
    const account = await newAccount(server);
    const browsers = [new FormClient(server), new FormClient(server), new FormClient(server)];
    for (const browser of browsers)
      assert.equal(
        (await browser.submit('/account/sign-in', { username: account.username, password: account.password })).status,
        303,
      );
    const [here] = browsers;
    let page = await here!.fetch('/account');
    const otherId = /name="end_browser" value="([^"]+)"/.exec(page.text)?.[1];
    assert.match(otherId ?? '', UUID);
    assert.equal((await here!.submitOn(page.text, { end_browser: otherId! }, /browsers$/)).status, 303);
    const one = await onlyEvent('web_session_ended', { userId: account.userId });
    assert.equal(one.details.browser_sign_in, otherId);
    page = await here!.fetch('/account');
    assert.equal((await here!.submitOn(page.text, { end_other_browsers: 'all' }, /browsers\/others$/)).status, 303);
    const all = (await events()).filter((e) => e.kind === 'web_session_ended' && e.userId === account.userId);
    assert.equal(all.length, 2);
    assert.equal(all.find((e) => e.eventId !== one.eventId)?.details.others, 1);
  });

  test('applications created and deleted with the admin CLI (no IP: not a request)', async () => {
    const created = await admin(
      database.url,
      'app',
      'create',
      '--name',
      'Evented',
      '--redirect-uri',
      REDIRECT_URI,
      '--confidential',
      '--json',
    );
    assert.equal(created.code, 0, created.stderr);
    const { client_id: clientId, client_secret: clientSecret } = JSON.parse(created.stdout);
    remember('cli client secret', clientSecret);
    const deleted = await admin(database.url, 'app', 'delete', clientId);
    assert.equal(deleted.code, 0, deleted.stderr);
    const made = await onlyEvent('application_created', { clientId }, null);
    assert.equal(made.details.name, 'Evented');
    await onlyEvent('application_deleted', { clientId }, null);
  });

  test('applications registered on /account/apps: created, updated, secret renewed, deleted, each with the owner and client id', async () => {
    const totp = newTotpSecret();
    const developer = await newAccount(server, { totpSecret: totp });
    const browser = new FormClient(server);
    assert.equal(
      (await browser.submit('/account/sign-in', { username: developer.username, password: developer.password })).status,
      303,
    );
    assert.equal((await browser.submit('/account/sign-in', { code: totpCode(totp) })).status, 303);
    const created = await browser.submit(
      '/account/apps',
      { name: 'Dev Evented', redirect_uri: REDIRECT_URI, scope: 'users:read', confidential: 'yes' },
      /^\/account\/apps$/,
    );
    assert.equal(created.status, 200, created.text);
    const clientId = /id="client-id">([^<]+)</.exec(created.text)![1]!;
    remember('developer client secret', /id="client-secret">([^<]+)</.exec(created.text)![1]);
    const made = await onlyEvent('application_created', { userId: developer.userId, clientId });
    assert.equal(made.details.name, 'Dev Evented');
    assert.equal(made.details.via, 'account');
    assert.equal(
      (
        await browser.submit(
          `/account/apps/${clientId}`,
          { name: 'Dev Evented 2', redirect_uri: REDIRECT_URI, confidential: 'yes' },
          /apps\/[0-9a-f-]{36}$/,
        )
      ).status,
      303,
    );
    await onlyEvent('application_updated', { userId: developer.userId, clientId });
    // New secret and delete answer their confirmation page first, whose form (confirmed=yes) acts.
    const askedSecret = await browser.submit('/account/apps', { new_secret: clientId }, /secret$/);
    assert.match(askedSecret.text, /name="confirmed" value="yes"/);
    const renewed = await browser.submitOn(askedSecret.text, { new_secret: clientId, confirmed: 'yes' }, /secret$/);
    assert.equal(renewed.status, 200);
    remember('renewed client secret', /id="client-secret">([^<]+)</.exec(renewed.text)![1]);
    await onlyEvent('application_secret_renewed', { userId: developer.userId, clientId });
    const askedDelete = await browser.submit('/account/apps', { delete_app: clientId }, /delete$/);
    assert.equal(
      (await browser.submitOn(askedDelete.text, { delete_app: clientId, confirmed: 'yes' }, /delete$/)).status,
      303,
    );
    await onlyEvent('application_deleted', { userId: developer.userId, clientId });
  });

  test('passkeys: a refused answer and a removed passkey are recorded (adding one: test/browser/passkeys.test.ts)', async () => {
    const account = await newAccount(server);
    const browser = new FormClient(server);
    const signIn = await browser.fetch('/account/sign-in');
    const token = /name="_csrf" value="([^"]+)"/.exec(signIn.text)![1]!;
    // (The script sends JSON; a form body is read the same way, and is no answer either.)
    const refused = await browser.fetch('/account/sign-in/passkey', { form: { _csrf: token, id: 'not an answer' } });
    assert.equal(refused.status, 400, refused.text);
    assert.equal((await onlyEvent('passkey_refused')).details.reason, 'malformed');
    // A passkey as registration stores it (only a real authenticator can make one: the browser test).
    const credentialId = 'cGFzc2tleS1ldmVudHMtdGVzdA';
    await server.app.database.db
      .insertInto('passkeys')
      .values({
        credential_id: credentialId,
        user_id: account.userId,
        public_key: 'AA',
        counter: 0,
        transports: '[]',
        name: 'Event key',
        created_at: Date.now(),
        last_used_at: null,
      })
      .execute();
    const signedIn = await browser.submitOn(signIn.text, { username: account.username, password: account.password });
    assert.equal(signedIn.status, 303);
    const asked = await browser.submit('/account', { remove_passkey: credentialId }, /passkeys\/remove$/);
    assert.match(asked.text, /name="confirmed" value="yes"/);
    const removed = await browser.submitOn(
      asked.text,
      { remove_passkey: credentialId, confirmed: 'yes' },
      /passkeys\/remove$/,
    );
    assert.equal(removed.status, 303, removed.text);
    assert.equal((await onlyEvent('passkey_removed', { userId: account.userId })).details.passkey, 'Event key');
  });

  test('sign-up, password reset and e-mail change (self-service pages)', async () => {
    const email = `evented${Date.now()}@example.com`;
    const username = `evented${Date.now() % 1_000_000}`;
    const browser = new FormClient(server);
    let page = await browser.fetch('/account/sign-up');
    assert.equal((await browser.submitOn(page.text, { email }, /^\/account\/sign-up$/)).status, 303);
    const signUpMail = await mailbox.next(email);
    remember('sign-up link', verifyLinkIn(signUpMail, server.config.baseUrl).split('token=')[1]);
    assert.equal((await browser.submit('/account/sign-up', { code: codeIn(signUpMail) }, /\/code$/)).status, 303);
    const password = 'evented-orchard-lantern-42-moss';
    remember('sign-up password', password);
    assert.equal((await browser.submit('/account/sign-up', { username, password }, /\/details$/)).status, 303);
    const account = await findAccountByLogin(server.app.database.db, username);
    await onlyEvent('signed_up', { userId: account!.userId });
    await mailbox.next(email); // welcome

    const resetting = new FormClient(server);
    page = await resetting.fetch('/account/forgot');
    assert.equal((await resetting.submitOn(page.text, { email }, /^\/account\/forgot$/)).status, 303);
    const resetMail = await mailbox.next(email);
    remember('reset link', verifyLinkIn(resetMail, server.config.baseUrl).split('token=')[1]);
    assert.equal((await resetting.submit('/account/forgot', { code: codeIn(resetMail) }, /\/code$/)).status, 303);
    const newPassword = 'evented-harbor-willow-77-stone';
    remember('reset password', newPassword);
    assert.equal((await resetting.submit('/account/forgot', { new_password: newPassword }, /\/password$/)).status, 200);
    await onlyEvent('password_reset', { userId: account!.userId });
    await mailbox.next(email); // password changed

    const signedIn = new FormClient(server);
    assert.equal((await signedIn.submit('/account/sign-in', { username, password: newPassword })).status, 303);
    const next = `moved-${email}`;
    assert.equal(
      (await signedIn.submit('/account', { new_email: next, current_password: newPassword }, /\/account\/email$/))
        .status,
      303,
    );
    const link = verifyLinkIn(await mailbox.next(next), server.config.baseUrl);
    remember('e-mail change link', link.split('token=')[1]);
    const confirm = await signedIn.fetch(new URL(link).pathname + new URL(link).search);
    const token = /name="token" value="([^"]+)"/.exec(confirm.text)![1]!;
    assert.equal((await signedIn.submitOn(confirm.text, { token }, /\/account\/verify$/)).status, 200);
    await onlyEvent('email_changed', { userId: account!.userId });
  });

  test("an operator's actions and a person's own data and browsers (the account lifecycle)", async () => {
    const operator = await newAccount(server, { totpSecret: newTotpSecret() });
    const ctx: LifecycleContext = {
      db: server.app.database.db,
      applicationSessions: server.app.applicationSessions,
      erasers: server.app.accountErasers,
      via: 'cli',
      actorId: null,
    };
    assert.deepEqual(await makeOperator(ctx, operator.userId), { kind: 'done' });
    await onlyEvent('operator_granted', { userId: operator.userId }, null);
    const asOperator = { ...ctx, via: 'web' as const, actorId: operator.userId };
    const account = await newAccount(server, { totpSecret: newTotpSecret() });
    remember('password of the governed account', account.password);
    // Signed in somewhere, so there are sessions for the operator to end.
    await createSession(server.app.database.db, {
      userId: account.userId,
      clientId: (await newApp(server)).clientId,
      scope: 'common',
    });
    const reason = 'spam reported by three people';
    for (const [kind, act] of [
      ['operator_granted', () => makeOperator(asOperator, account.userId)],
      ['operator_revoked', () => revokeOperator(asOperator, account.userId)],
      ['sessions_ended_by_operator', () => endAllSessions(asOperator, account.userId)],
      ['two_step_removed_by_operator', () => removeTwoStep(asOperator, account.userId)],
      [
        'reset_sent_by_operator',
        () =>
          sendReset(
            { ...asOperator, send: accountMailer(server.app), links: { baseUrl: server.config.baseUrl } },
            account.userId,
          ),
      ],
      ['account_locked', () => lockAccount(asOperator, account.userId, reason)],
      ['account_unlocked', () => unlockAccount(asOperator, account.userId)],
    ] as const) {
      assert.deepEqual(await act(), { kind: 'done' }, kind);
      const event = await onlyEvent(kind, { userId: account.userId }, null);
      assert.equal(event.details.operator_id, operator.userId, `${kind} names the operator`);
    }
    await mailbox.next(account.email); // the reset mail

    const app = await newApp(server, { name: 'Suspended app' });
    const suspension = { db: server.app.database.db, via: 'cli' as const, operatorId: null };
    assert.equal(await suspendApplication(suspension, app.clientId), 'done');
    await onlyEvent('application_suspended', { clientId: app.clientId }, null);
    assert.equal(await restoreApplication(suspension, app.clientId), 'done');
    await onlyEvent('application_restored', { clientId: app.clientId }, null);

    // The person: two browsers, one signs the other out; then downloads their data.
    const person = await newAccount(server);
    const [first, second] = [new FormClient(server), new FormClient(server)];
    for (const browser of [first, second])
      assert.equal(
        (await browser.submit('/account/sign-in', { username: person.username, password: person.password })).status,
        303,
      );
    const ended = await first.submit('/account', { end_other_browsers: 'all' }, /\/account\/browsers\/others$/);
    assert.equal(ended.status, 303, ended.text);
    await onlyEvent('web_session_ended', { userId: person.userId });
    const data = await first.fetch('/account/data');
    assert.equal(data.status, 200, data.text);
    await onlyEvent('data_exported', { userId: person.userId });

    assert.deepEqual(await eraseAccount(asOperator, account.userId), { kind: 'done' });
    await onlyEvent('account_deleted', { userId: account.userId }, null);
    const left = JSON.stringify((await events()).filter((e) => e.userId === account.userId));
    assert.ok(!left.includes(account.username) && !left.includes(account.email), 'erasure leaves only the user id');
  });

  test('every kind was seen, and no event or log line holds a secret', async () => {
    const all = await events();
    // passkey_added needs a real authenticator's registration (test/browser/passkeys.test.ts checks
    // it); invitation_sent a mail from the console (test/admin/invitations.test.ts).
    const elsewhere = new Set(['passkey_added', 'invitation_sent']);
    for (const kind of SECURITY_EVENT_KINDS)
      assert.ok(elsewhere.has(kind) || all.some((e) => e.kind === kind), `no ${kind} event`);
    const stored = JSON.stringify(await server.app.database.db.selectFrom('security_events').selectAll().execute());
    const logged = server.logs.join('\n');
    assert.ok(secrets.length >= 12, `collected ${secrets.length} secrets`);
    for (const [name, value] of secrets) {
      assert.ok(!stored.includes(value), `${name} is in a stored event`);
      assert.ok(!logged.includes(value), `${name} is in the logs`);
    }
  });
});
