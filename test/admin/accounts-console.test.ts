/**
 * The operator console's accounts and applications (DESIGN "Operating a public service", issue
 * 44): /admin/users, /admin/users/<id> and /admin/apps through HTTP, without JavaScript. Every
 * action needs a recent sign-in, a CSRF token and acts once under a double submit, recording its
 * event with the operator's id; bad input gets a clear 4xx and changes nothing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { makeOperator } from '../../src/accounts/lifecycle.ts';
import { listSecurityEvents } from '../../src/accounts/security-events.ts';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { type FormClient, newAccount, newApp, tokensThroughPages } from '../helpers/oauth.ts';
import { OwnIpClient } from '../helpers/self-service.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const STEP = 30_000;

let server: TestServer;
let mailbox: Mailbox;
before(async () => {
  mailbox = await startMailbox();
  server = await startServer({ env: { TRUST_PROXY: 'true', SMTP_URL: mailbox.url } });
});
after(async () => {
  await server?.close();
  await mailbox?.close();
});
const db = () => server.app.database.db;

const grantOperator = (userId: string) =>
  makeOperator(
    {
      db: db(),
      applicationSessions: server.app.applicationSessions,
      erasers: server.app.accountErasers,
      via: 'cli',
      actorId: null,
    },
    userId,
  );

/** A browser signed in, with its two-step code, to a new operator account. */
async function operator() {
  const secret = newTotpSecret();
  const account = await newAccount(server, { totpSecret: secret });
  await grantOperator(account.userId);
  const browser = new OwnIpClient(server);
  const first = await browser.submit('/account/sign-in', { username: account.username, password: account.password });
  assert.equal(first.status, 303, first.text);
  assert.equal((await browser.submit(first.location!, { code: totpCode(secret) })).status, 303);
  return { account, browser, secret };
}

/** The POST form of `html` holding the button `button` (with `value` when given), as a browser sends it. */
function formWith(html: string, button: string, fields: Record<string, string> = {}) {
  const form = [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find(([, , inner]) =>
    inner!.includes(`name="${button}"`),
  );
  assert.ok(form, `no form with the button ${button}`);
  const body = new URLSearchParams();
  for (const [, name, value] of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    body.append(name!, value!);
  const value = new RegExp(`name="${button}" value="([^"]+)"`).exec(form[2]!)![1]!;
  body.append(button, value);
  for (const [name, item] of Object.entries(fields)) body.set(name, item);
  return { path: form[1]!, body };
}

/** Presses `button` on the page at `path`; a deletion's confirmation is pressed too. */
async function press(browser: FormClient, path: string, button: string, fields: Record<string, string> = {}) {
  const page = await browser.fetch(path);
  assert.equal(page.status, 200, page.text);
  const form = formWith(page.text, button, fields);
  const answer = await browser.fetch(form.path, { form: form.body });
  if (!button.startsWith('delete_')) return answer;
  assert.equal(answer.status, 200, answer.text);
  assert.match(answer.text, /name="confirmed" value="yes"/);
  const confirmed = formWith(answer.text, button);
  return browser.fetch(confirmed.path, { form: confirmed.body });
}

const eventsOf = async (userId: string, kind: string) =>
  (await listSecurityEvents(db(), { userId })).filter((event) => event.kind === kind);

const stale = (userId: string) =>
  db()
    .updateTable('web_sessions')
    .set({ created_at: Date.now() - 11 * 60_000 })
    .where('user_id', '=', userId)
    .execute();

const userRow = (userId: string) =>
  db()
    .selectFrom('users')
    .select(['locked_at', 'lock_reason', 'totp_secret'])
    .where('user_id', '=', userId)
    .executeTakeFirst();

describe('the accounts list', () => {
  test('50 a page newest first, with a next link; search by prefix in any case; the state filter', async () => {
    const { browser } = await operator();
    const tag = `pg${Date.now().toString(36)}`;
    const made: string[] = [];
    // Rows written directly: 53 accounts through createAccount would hash 53 passwords.
    const now = Date.now();
    for (let i = 0; i < 53; i++) {
      const userId = randomUUID();
      await db()
        .insertInto('users')
        .values({
          user_id: userId,
          created_at: now + i,
          username: `${tag}${String(i).padStart(3, '0')}`,
          email: `${tag}${i}@example.org`,
        })
        .execute();
      made.push(userId);
    }
    const first = await browser.fetch(`/admin/users?q=${tag.toUpperCase()}`);
    assert.equal(first.status, 200, first.text);
    const names = (html: string) => [...html.matchAll(new RegExp(`>(${tag}\\d{3})</a>`, 'g'))].map((m) => m[1]);
    const page1 = names(first.text);
    assert.equal(page1.length, 50);
    assert.equal(page1[0], `${tag}052`, 'newest first');
    const next = /href="([^"]+)" rel="next"/.exec(first.text)![1]!.replace(/&amp;/g, '&');
    assert.match(next, /after=/);
    const second = await browser.fetch(next);
    assert.deepEqual(names(second.text), [`${tag}002`, `${tag}001`, `${tag}000`]);
    assert.doesNotMatch(second.text, /rel="next"/);
    // By address too.
    const byAddress = await browser.fetch(`/admin/users?q=${tag}7@EXAMPLE`);
    assert.deepEqual(names(byAddress.text), [`${tag}007`]);
    // The state filter.
    await db()
      .updateTable('users')
      .set({ locked_at: Date.now(), lock_reason: 'x' })
      .where('user_id', '=', made[5]!)
      .execute();
    assert.deepEqual(names((await browser.fetch(`/admin/users?q=${tag}&state=locked`)).text), [`${tag}005`]);
    assert.equal(names((await browser.fetch(`/admin/users?q=${tag}&state=active`)).text).length, 50);
  });

  test('a prefix matching one account by username and others by address: one list, newest first, each once', async () => {
    const { browser } = await operator();
    const tag = `mx${Date.now().toString(36)}`;
    const now = Date.now();
    // Oldest to newest: by address only, by username only, by both, by address only.
    const made = [
      { username: `other${tag}a`, email: `${tag}a@example.org` },
      { username: `${tag}b`, email: `other-${tag}b@example.org` },
      { username: `${tag}c`, email: `${tag}c@example.org` },
      { username: `other${tag}d`, email: `${tag}d@example.org` },
    ];
    for (const [i, account] of made.entries())
      await db()
        .insertInto('users')
        .values({ user_id: randomUUID(), created_at: now + i, ...account })
        .execute();
    const page = await browser.fetch(`/admin/users?q=${tag.toUpperCase()}`);
    assert.equal(page.status, 200, page.text);
    const listed = [...page.text.matchAll(new RegExp(`>((?:other)?${tag}[a-d])</a>`, 'g'))].map((m) => m[1]);
    assert.deepEqual(listed, [`other${tag}d`, `${tag}c`, `${tag}b`, `other${tag}a`]);
  });

  test('bad input is a clear 400 page: a 10,000-character search, a bad cursor, a bad or repeated state', async () => {
    const { browser } = await operator();
    for (const query of [
      `q=${'a'.repeat(10_000)}`,
      'after=nonsense',
      'after=12.not-a-uuid',
      'state=deleted',
      'state=active&state=locked',
      'q=a&q=b',
      'state=__proto__',
    ]) {
      const page = await browser.fetch(`/admin/users?${query}`);
      assert.equal(page.status, 400, query);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/);
      assert.match(page.text, /The request is not right|given more than once/);
    }
    // Control characters are refused before routing (the input guard); CR/LF alone just find nothing.
    assert.equal((await browser.fetch('/admin/users?q=%00')).status, 400);
    const odd = await browser.fetch('/admin/users?q=%0d%0aa');
    assert.ok([200, 400].includes(odd.status));
  });
});

describe('an account’s page and its actions', () => {
  test('the page shows what DESIGN lists; a non-UUID or unknown id is a 404 page', async () => {
    const { browser } = await operator();
    const person = await newAccount(server, { totpSecret: newTotpSecret() });
    const app = await newApp(server, { name: 'Reader App', scopes: ['common'] });
    await tokensThroughPages(server, app, { username: person.username, password: person.password }, 'common').catch(
      () => undefined,
    );
    const page = await browser.fetch(`/admin/users/${person.userId}`);
    assert.equal(page.status, 200, page.text);
    for (const text of [
      person.username,
      person.email,
      'Created',
      'Last sign-in',
      'Two-step',
      'Backup codes left',
      'Passkeys',
      'Operator',
      'Browser sign-ins',
      'Sessions by application',
      'Applications registered',
      'Last security events',
    ])
      assert.ok(page.text.includes(text), text);
    for (const button of ['lock_account', 'end_sessions', 'remove_two_step', 'send_reset', 'delete_account'])
      assert.match(page.text, new RegExp(`name="${button}" value="${person.userId}"`));
    assert.match(page.text, /name="reason"/);
    for (const path of ['/admin/users/nope', '/admin/users/00000000-0000-7000-8000-000000000000', '/admin/users/%00']) {
      const missing = await browser.fetch(path);
      assert.equal(missing.status, path.includes('%00') ? 400 : 404, path);
      assert.match(missing.headers.get('content-type') ?? '', /text\/html/);
    }
  });

  test('lock (with a reason) ends every sign-in and token; unlock; each recorded once with the operator’s id', async () => {
    const { account: op, browser } = await operator();
    const person = await newAccount(server);
    const app = await newApp(server, { scopes: ['common', 'users:read'] });
    const tokens = await tokensThroughPages(server, app, person, 'common users:read');
    const bearer = { headers: { authorization: `Bearer ${tokens.access_token}` } };
    assert.equal((await server.request('GET', `/v4/users/${person.userId}`, bearer)).status, 200);
    const own = new OwnIpClient(server);
    assert.equal(
      (await own.submit('/account/sign-in', { username: person.username, password: person.password })).status,
      303,
    );

    // No reason: a 400 page, nothing locked.
    const bare = await press(browser, `/admin/users/${person.userId}`, 'lock_account', { reason: '  ' });
    assert.equal(bare.status, 400);
    assert.match(bare.text, /reason for the lock/);
    assert.equal((await userRow(person.userId))!.locked_at, null);

    const locked = await press(browser, `/admin/users/${person.userId}`, 'lock_account', { reason: 'spam bursts' });
    assert.equal(locked.status, 303, locked.text);
    assert.equal(locked.location, `/admin/users/${person.userId}?done=lock_account`);
    assert.equal((await userRow(person.userId))!.lock_reason, 'spam bursts');
    const shown = await browser.fetch(locked.location!);
    assert.match(shown.text, /The account is locked/);
    assert.match(shown.text, /spam bursts/);
    assert.match(shown.text, /name="unlock_account"/);
    // The token and the browser sign-in ended at once.
    assert.equal((await server.request('GET', `/v4/users/${person.userId}`, bearer)).status, 401);
    assert.equal((await own.fetch('/account')).status, 303);
    const [event] = await eventsOf(person.userId, 'account_locked');
    assert.equal(event!.details.operator_id, op.userId);
    assert.equal(event!.details.via, 'web');

    const unlocked = await press(browser, `/admin/users/${person.userId}`, 'unlock_account');
    assert.equal(unlocked.status, 303);
    assert.equal((await userRow(person.userId))!.locked_at, null);
    assert.equal((await eventsOf(person.userId, 'account_unlocked'))[0]!.details.operator_id, op.userId);
    // The sessions the lock ended stay ended.
    assert.equal((await server.request('GET', `/v4/users/${person.userId}`, bearer)).status, 401);
  });

  test('end sessions, remove two-step, send a reset mail (through SMTP), each once under a repeat', async () => {
    const { account: op, browser } = await operator();
    const secret = newTotpSecret();
    const person = await newAccount(server, { totpSecret: secret });
    const own = new OwnIpClient(server);
    const first = await own.submit('/account/sign-in', { username: person.username, password: person.password });
    await own.submit(first.location!, { code: totpCode(secret) });
    assert.equal((await own.fetch('/account')).status, 200);

    const ended = await press(browser, `/admin/users/${person.userId}`, 'end_sessions');
    assert.equal(ended.status, 303);
    assert.equal((await own.fetch('/account')).status, 303, 'signed out');
    const again = await press(browser, `/admin/users/${person.userId}`, 'end_sessions');
    assert.equal(again.location, `/admin/users/${person.userId}?done=end_sessions_unchanged`);
    assert.equal((await eventsOf(person.userId, 'sessions_ended_by_operator')).length, 1);

    const removed = await press(browser, `/admin/users/${person.userId}`, 'remove_two_step');
    assert.equal(removed.status, 303);
    assert.equal((await userRow(person.userId))!.totp_secret, null);
    const [twoStep] = await eventsOf(person.userId, 'two_step_removed_by_operator');
    assert.equal(twoStep!.details.operator_id, op.userId);

    const reset = await press(browser, `/admin/users/${person.userId}`, 'send_reset');
    assert.equal(reset.status, 303, reset.text);
    const mail = await mailbox.next(person.email);
    assert.match(mail.subject, /reset|password/i);
    assert.match(mail.text, /\/account\/reset|code/i);
    const resetAgain = await press(browser, `/admin/users/${person.userId}`, 'send_reset');
    assert.equal(resetAgain.location, `/admin/users/${person.userId}?done=send_reset_unchanged`);
    assert.equal((await eventsOf(person.userId, 'reset_sent_by_operator')).length, 1);
  });

  test('delete goes through a confirmation; the account is gone; acting on it afterwards is a 404 that changes nothing', async () => {
    const { account: op, browser } = await operator();
    const person = await newAccount(server);
    const page = await browser.fetch(`/admin/users/${person.userId}`);
    const asked = await browser.fetch('/admin/users', { form: formWith(page.text, 'delete_account').body });
    assert.equal(asked.status, 200);
    assert.match(asked.text, /cannot be undone/);
    assert.match(asked.text, new RegExp(`name="delete_account" value="${person.userId}"`));
    assert.ok(await userRow(person.userId), 'not deleted before the confirmation');
    const deleted = await browser.fetch('/admin/users', { form: formWith(asked.text, 'delete_account').body });
    assert.equal(deleted.status, 303, deleted.text);
    assert.equal(deleted.location, '/admin/users?done=deleted');
    assert.equal(await userRow(person.userId), undefined);
    const [event] = await eventsOf(person.userId, 'account_deleted');
    assert.equal(event!.details.operator_id, op.userId);
    const eventsBefore = (await listSecurityEvents(db(), { userId: person.userId })).length;
    // The old page's buttons, pressed now.
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    for (const button of [
      'lock_account',
      'unlock_account',
      'end_sessions',
      'remove_two_step',
      'send_reset',
      'delete_account',
    ]) {
      const answer = await browser.fetch('/admin/users', {
        form: { _csrf: csrf, [button]: person.userId, reason: 'late', confirmed: 'yes' },
      });
      assert.equal(answer.status, 404, `${button}: ${answer.text}`);
      assert.match(answer.text, /No such account/);
    }
    const twice = await browser.fetch('/admin/users', { form: formWith(asked.text, 'delete_account').body });
    assert.equal(twice.status, 303, 'the same submit token: the first answer again');
    assert.equal((await listSecurityEvents(db(), { userId: person.userId })).length, eventsBefore);
  });

  test('the last operator can neither lock nor delete themselves', async () => {
    // Every other operator is demoted for this test, then restored.
    const others = await db().selectFrom('users').select('user_id').where('operator', '=', 1).execute();
    await db().updateTable('users').set({ operator: 0 }).where('operator', '=', 1).execute();
    try {
      const { account, browser } = await operator();
      const lock = await press(browser, `/admin/users/${account.userId}`, 'lock_account', { reason: 'oops' });
      assert.equal(lock.status, 409, lock.text);
      assert.match(lock.text, /last operator/);
      const del = await press(browser, `/admin/users/${account.userId}`, 'delete_account');
      assert.equal(del.status, 409);
      assert.equal((await userRow(account.userId))!.locked_at, null);
    } finally {
      for (const { user_id } of others)
        await db().updateTable('users').set({ operator: 1 }).where('user_id', '=', user_id).execute();
    }
  });

  test('a sign-in older than 10 minutes: the re-authentication page, then back to the account', async () => {
    const { account, browser, secret } = await operator();
    const person = await newAccount(server);
    await stale(account.userId);
    const asked = await press(browser, `/admin/users/${person.userId}`, 'lock_account', { reason: 'later' });
    assert.equal(asked.status, 200);
    assert.match(asked.text, /Confirm it is you/);
    assert.equal((await userRow(person.userId))!.locked_at, null, 'nothing locked yet');
    const proved = await browser.fetch('/account/reauth', {
      form: {
        ...Object.fromEntries(
          [...asked.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
            m[1]!,
            m[2]!.replace(/&amp;/g, '&'),
          ]),
        ),
        password: account.password,
        code: totpCode(secret, Date.now() + STEP),
      },
    });
    assert.equal(proved.status, 303, proved.text);
    assert.equal(proved.location, `/admin/users/${person.userId}`);
    const locked = await press(browser, proved.location!, 'lock_account', { reason: 'later' });
    assert.equal(locked.status, 303);
    assert.ok((await userRow(person.userId))!.locked_at);
  });

  test('a missing CSRF token is refused and changes nothing; a stranger’s post is a 404', async () => {
    const { browser } = await operator();
    const person = await newAccount(server);
    const page = await browser.fetch(`/admin/users/${person.userId}`);
    const form = formWith(page.text, 'lock_account', { reason: 'x' });
    form.body.delete('_csrf');
    const refused = await browser.fetch('/admin/users', { form: form.body });
    assert.equal(refused.status, 403, refused.text);
    const stranger = await new OwnIpClient(server).fetch('/admin/users', {
      form: formWith(page.text, 'lock_account', { reason: 'x' }).body,
    });
    assert.equal(stranger.status, 404);
    assert.equal((await userRow(person.userId))!.locked_at, null);
    // No button, two buttons, a non-UUID value.
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    assert.equal((await browser.fetch('/admin/users', { form: { _csrf: csrf } })).status, 400);
    const both = { _csrf: csrf, end_sessions: person.userId, unlock_account: person.userId };
    assert.equal((await browser.fetch('/admin/users', { form: both })).status, 400);
    const odd = formWith(page.text, 'end_sessions');
    odd.body.set('end_sessions', 'not-a-uuid');
    odd.body.delete('submit_token');
    assert.equal((await browser.fetch('/admin/users', { form: odd.body })).status, 404);
  });

  test('a double submit (two posts at once) is one change and one event', async () => {
    const { browser } = await operator();
    const person = await newAccount(server);
    const page = await browser.fetch(`/admin/users/${person.userId}`);
    const form = formWith(page.text, 'lock_account', { reason: 'twice' });
    const [a, b] = await Promise.all([
      browser.fetch('/admin/users', { form: form.body }),
      browser.fetch('/admin/users', { form: form.body }),
    ]);
    assert.equal(a.status, 303);
    assert.equal(b.status, 303);
    assert.equal(a.location, b.location);
    assert.equal((await eventsOf(person.userId, 'account_locked')).length, 1);
  });

  test('racing a lock and a deletion of the same account: no 500, the account gone, one deletion', async () => {
    const { browser } = await operator();
    const other = await operator();
    const person = await newAccount(server);
    const [pageA, pageB] = await Promise.all([
      browser.fetch(`/admin/users/${person.userId}`),
      other.browser.fetch(`/admin/users/${person.userId}`),
    ]);
    const asked = await other.browser.fetch('/admin/users', { form: formWith(pageB.text, 'delete_account').body });
    const [lock, del] = await Promise.all([
      browser.fetch('/admin/users', { form: formWith(pageA.text, 'lock_account', { reason: 'race' }).body }),
      other.browser.fetch('/admin/users', { form: formWith(asked.text, 'delete_account').body }),
    ]);
    assert.ok([303, 404].includes(lock.status), `lock: ${lock.status}`);
    assert.equal(del.status, 303, del.text);
    assert.equal(await userRow(person.userId), undefined);
    assert.equal((await eventsOf(person.userId, 'account_deleted')).length, 1);
  });
});

describe('the applications list', () => {
  test('every application with owner, kind and sessions; suspend, restore and delete (through a confirmation)', async () => {
    const { account: op, browser } = await operator();
    const app = await newApp(server, { name: 'Operator Made', scopes: ['common', 'users:read'] });
    const person = await newAccount(server);
    const tokens = await tokensThroughPages(server, app, person, 'common users:read');
    const bearer = { headers: { authorization: `Bearer ${tokens.access_token}` } };
    const list = await browser.fetch('/admin/apps');
    assert.equal(list.status, 200, list.text);
    assert.match(list.text, /Operator Made/);
    assert.match(list.text, /Operator-made/);
    assert.match(list.text, new RegExp(`name="suspend_app" value="${app.clientId}"`));

    const suspended = await press(browser, '/admin/apps', 'suspend_app');
    assert.equal(suspended.status, 303, suspended.text);
    assert.equal((await server.request('GET', `/v4/users/${person.userId}`, bearer)).status, 401);
    const [event] = (await listSecurityEvents(db(), { limit: 50 })).filter(
      (e) => e.kind === 'application_suspended' && e.clientId === app.clientId,
    );
    assert.equal(event!.details.operator_id, op.userId);
    const again = await browser.fetch('/admin/apps');
    assert.match(again.text, new RegExp(`name="restore_app" value="${app.clientId}"`));
    const restored = await browser.fetch('/admin/apps', { form: formWith(again.text, 'restore_app').body });
    assert.equal(restored.status, 303);

    const deleted = await press(browser, '/admin/apps', 'delete_app');
    assert.equal(deleted.status, 303, deleted.text);
    assert.equal(deleted.location, '/admin/apps?done=delete_app');
    assert.doesNotMatch((await browser.fetch('/admin/apps')).text, new RegExp(app.clientId));
    const gone = await browser.fetch(`/admin/apps/${app.clientId}/delete`);
    assert.equal(gone.status, 404);
  });
});
