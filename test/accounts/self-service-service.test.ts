/**
 * The self-service services called directly (src/accounts/self-service.ts), against a real
 * database: each completing step checks the new password once with the rules' own message, stores
 * its hash, records its security event, and acts once when two completions race.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AccountMail } from '../../src/accounts/account-mail.ts';
import { findAccount, findAccountByLogin } from '../../src/accounts/accounts.ts';
import { passwordRefusal } from '../../src/accounts/password-rules.ts';
import {
  completeReset,
  completeSignUp,
  confirmEmailChange,
  requestCode,
  requestEmailChange,
  type SelfServiceContext,
} from '../../src/accounts/self-service.ts';
import { checkCurrentPassword, type SignInLimits } from '../../src/accounts/sign-in.ts';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { findByFlow, proveByCode } from '../../src/accounts/verification-requests.ts';
import { attemptLimit } from '../../src/http/attempt-limits.ts';
import { newAccount } from '../helpers/oauth.ts';
import { newAddress, STRONG_PASSWORD } from '../helpers/self-service.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { awayFromStepEdge } from '../helpers/totp.ts';

let server: TestServer;
let limits: SignInLimits;
before(async () => {
  server = await startServer();
  // The pages' limits are decorated inside the web plugin; a service's caller brings its own.
  const limit = (name: string) => attemptLimit(server.app, { name: `service-test-${name}`, max: 10, windowMs: 60_000 });
  limits = {
    passwordByIp: limit('password-ip'),
    passwordByAccount: limit('password-account'),
    codeByIp: limit('code-ip'),
    codeByAccount: limit('code-account'),
  };
});
after(async () => {
  await server?.close();
});

const sent: Array<{ to: string; mail: AccountMail }> = [];
let ips = 0;

/** A context as a page builds it, from its own IP (so the limits of one test do not touch another). */
function context(page: string): SelfServiceContext {
  const app = server.app;
  return {
    db: app.database.db,
    ip: `203.0.113.${++ips}`,
    limits,
    page,
    applicationSessions: app.applicationSessions,
    secrets: app.secrets,
    send: async (to, mail) => {
      sent.push({ to, mail });
      return 'sent';
    },
    links: { baseUrl: 'https://service.test' },
  };
}

function lastMail<Kind extends AccountMail['kind']>(to: string, kind: Kind) {
  const found = sent.filter((message) => message.to === to && message.mail.kind === kind).at(-1);
  assert.ok(found, `a ${kind} message to ${to}`);
  return found.mail as Extract<AccountMail, { kind: Kind }>;
}

/** A proven request of `purpose` for `address` (the code from its message): its flow token. */
async function proven(purpose: 'sign_up' | 'reset', address: string): Promise<string> {
  const ctx = context('test');
  const asked = await requestCode(ctx.db, ctx.send, ctx.links, { purpose, address });
  assert.equal(asked.kind, 'sent');
  const mail = lastMail(address, purpose === 'sign_up' ? 'sign-up-code' : 'password-reset-code');
  const outcome = await proveByCode(ctx.db, purpose, asked.kind === 'sent' ? asked.flowToken : '', mail.data.code);
  assert.equal(outcome.kind, 'proven');
  return outcome.kind === 'proven' ? outcome.flowToken : '';
}

const eventsOf = (kind: string, userId: string) =>
  server.app.database.db
    .selectFrom('security_events')
    .select(['details', 'ip'])
    .where('kind', '=', kind)
    .where('user_id', '=', userId)
    .execute()
    .then((rows) => rows.map((row) => ({ ip: row.ip, details: JSON.parse(row.details) })));

const passwordIsRight = async (userId: string, password: string) =>
  (await checkCurrentPassword(context('test'), (await findAccount(server.app.database.db, userId))!, password)).kind ===
  'right';

const newUsername = () => `svc${process.pid}x${++ips}${Math.random().toString(36).slice(2, 6)}`;

describe('completeSignUp', () => {
  test('a refused password: the rules’ message, nothing claimed or created', async () => {
    const address = newAddress('weak');
    const flowToken = await proven('sign_up', address);
    const username = newUsername();
    const weak = 'password123';
    const outcome = await completeSignUp(context('sign_up'), { flowToken, username, password: weak });
    assert.deepEqual(outcome, {
      kind: 'invalid',
      field: 'password',
      message: `${await passwordRefusal(weak, [username, address])}.`,
    });
    const short = await completeSignUp(context('sign_up'), { flowToken, username, password: 'short' });
    assert.deepEqual(short, {
      kind: 'invalid',
      field: 'password',
      message: 'The password must have at least 10 characters.',
    });
    const badName = await completeSignUp(context('sign_up'), { flowToken, username: 'ab', password: STRONG_PASSWORD });
    assert.deepEqual(badName, { kind: 'invalid', field: 'username', message: 'A username has 3 to 32 characters.' });
    assert.ok(await findByFlow(server.app.database.db, 'sign_up', flowToken, 'verified'), 'the proof still holds');
    assert.equal(await findAccountByLogin(server.app.database.db, username), undefined);
  });

  test('created: the hash of the password is stored, signed_up recorded once by the service, welcome sent', async () => {
    const address = newAddress('created');
    const flowToken = await proven('sign_up', address);
    const username = newUsername();
    const ctx = context('sign_up');
    const outcome = await completeSignUp(ctx, { flowToken, username: ` ${username} `, password: STRONG_PASSWORD });
    assert.equal(outcome.kind, 'created');
    if (outcome.kind !== 'created') return;
    assert.equal(outcome.account?.username, username, 'the typed name, trimmed');
    assert.equal(outcome.account?.email, address);
    assert.notEqual(outcome.account?.passwordHash, STRONG_PASSWORD);
    assert.ok(await passwordIsRight(outcome.userId, STRONG_PASSWORD));
    assert.deepEqual(await eventsOf('signed_up', outcome.userId), [{ ip: ctx.ip, details: { page: 'sign_up' } }]);
    assert.equal(lastMail(address, 'welcome').data.username, username);
    const again = await completeSignUp(context('sign_up'), {
      flowToken,
      username: newUsername(),
      password: STRONG_PASSWORD,
    });
    assert.deepEqual(again, { kind: 'ended' });
  });

  test('two racing completions of one proof create one account', async () => {
    const address = newAddress('racing');
    const flowToken = await proven('sign_up', address);
    const names = [newUsername(), newUsername()];
    const outcomes = await Promise.all(
      names.map((username) => completeSignUp(context('sign_up'), { flowToken, username, password: STRONG_PASSWORD })),
    );
    assert.deepEqual(outcomes.map((outcome) => outcome.kind).sort(), ['created', 'ended']);
    const created = outcomes.find((outcome) => outcome.kind === 'created');
    assert.ok(created?.kind === 'created');
    const accounts = await server.app.database.db
      .selectFrom('users')
      .select('user_id')
      .where('email', '=', address)
      .execute();
    assert.deepEqual(accounts, [{ user_id: created.userId }]);
    assert.equal((await eventsOf('signed_up', created.userId)).length, 1);
  });
});

describe('completeReset', () => {
  test('a refused password: the rules’ message, the old password still works, no event', async () => {
    const account = await newAccount(server);
    const flowToken = await proven('reset', account.email);
    const weak = 'password123';
    const outcome = await completeReset(context('forgot'), { flowToken, password: weak, twoStepCode: '' });
    assert.deepEqual(outcome, {
      kind: 'invalid',
      field: 'password',
      message: `${await passwordRefusal(weak, [account.username, account.email])}.`,
      twoStep: false,
    });
    assert.ok(await passwordIsRight(account.userId, account.password));
    assert.deepEqual(await eventsOf('password_reset', account.userId), []);
    assert.ok(await findByFlow(server.app.database.db, 'reset', flowToken, 'verified'), 'the proof still holds');
  });

  test('reset: the new password’s hash is stored, password_reset recorded by the service with its details', async () => {
    const account = await newAccount(server);
    const flowToken = await proven('reset', account.email);
    const ctx = context('forgot');
    const outcome = await completeReset(ctx, { flowToken, password: STRONG_PASSWORD, twoStepCode: '' });
    assert.equal(outcome.kind, 'reset');
    assert.ok(await passwordIsRight(account.userId, STRONG_PASSWORD));
    assert.ok(!(await passwordIsRight(account.userId, account.password)));
    assert.deepEqual(await eventsOf('password_reset', account.userId), [
      { ip: ctx.ip, details: { page: 'forgot', two_step: false, sessions_ended: 0, device_trusts_ended: 0 } },
    ]);
    assert.equal(lastMail(account.email, 'password-changed').data.username, account.username);
  });

  test('two-step on: a wrong code is refused (recorded as the reset step’s), a current one resets', async () => {
    await awayFromStepEdge();
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const flowToken = await proven('reset', account.email);
    const ctx = context('forgot');
    const code = totpCode(secret);
    const wrongCode = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const wrong = await completeReset(ctx, { flowToken, password: STRONG_PASSWORD, twoStepCode: wrongCode });
    assert.deepEqual(wrong, { kind: 'wrong', reason: 'wrong_code', twoStep: true });
    assert.deepEqual(await eventsOf('two_step_failed', account.userId), [
      { ip: ctx.ip, details: { reason: 'wrong', page: 'reset' } },
    ]);
    assert.ok(await passwordIsRight(account.userId, account.password));
    const outcome = await completeReset(ctx, { flowToken, password: STRONG_PASSWORD, twoStepCode: code });
    assert.equal(outcome.kind, 'reset');
    assert.deepEqual(
      (await eventsOf('password_reset', account.userId)).map((event) => event.details.two_step),
      [true],
    );
  });

  test('two racing resets of one proof: one sets its password, one event', async () => {
    const account = await newAccount(server);
    const flowToken = await proven('reset', account.email);
    const passwords = ['racing-gentle-meadow-48-owls', 'racing-stormy-harbor-93-kites'];
    const outcomes = await Promise.all(
      passwords.map((password) => completeReset(context('forgot'), { flowToken, password, twoStepCode: '' })),
    );
    assert.deepEqual(outcomes.map((outcome) => outcome.kind).sort(), ['ended', 'reset']);
    const winner = passwords[outcomes.findIndex((outcome) => outcome.kind === 'reset')]!;
    const loser = passwords.find((password) => password !== winner)!;
    assert.ok(await passwordIsRight(account.userId, winner));
    assert.ok(!(await passwordIsRight(account.userId, loser)));
    assert.equal((await eventsOf('password_reset', account.userId)).length, 1);
  });
});

describe('confirmEmailChange', () => {
  test('changed once of two racing confirmations; email_changed recorded by the service', async () => {
    const account = await newAccount(server);
    const next = newAddress('moved');
    const ctx = context('verify');
    const asked = await requestEmailChange(ctx.db, ctx.send, ctx.links, {
      userId: account.userId,
      oldEmail: account.email,
      newEmail: next,
    });
    assert.equal(asked.kind, 'sent');
    const token = new URL(lastMail(next, 'email-change-link').data.link).searchParams.get('token')!;
    const outcomes = await Promise.all([confirmEmailChange(ctx, token), confirmEmailChange(ctx, token)]);
    assert.deepEqual(outcomes.map((outcome) => outcome.kind).sort(), ['changed', 'ended']);
    assert.equal((await findAccount(ctx.db, account.userId))?.email, next);
    assert.deepEqual(await eventsOf('email_changed', account.userId), [{ ip: ctx.ip, details: { page: 'verify' } }]);
  });
});
