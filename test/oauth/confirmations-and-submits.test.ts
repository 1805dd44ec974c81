/**
 * Destructive actions ask first and want a recent sign-in; forms that act carry a single-use submit
 * token, so two identical submits at once act once and get the same answer (issue 43, items 2, 3
 * and 5; docs/decisions/0090). Through HTTP, without JavaScript.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listSecurityEvents } from '../../src/accounts/security-events.ts';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { type FormClient, newAccount } from '../helpers/oauth.ts';
import { hiddenFields, newAddress, OwnIpClient } from '../helpers/self-service.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const STEP = 30_000;
const CALLBACK = 'https://app.example/callback';

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

/** A browser signed in (with its two-step code) to a new account with two-step on. */
async function developer() {
  const secret = newTotpSecret();
  const account = await newAccount(server, { totpSecret: secret });
  const browser = new OwnIpClient(server);
  assert.equal(
    (await browser.submit('/account/sign-in', { username: account.username, password: account.password })).status,
    303,
  );
  assert.equal((await browser.submit('/account/sign-in', { code: totpCode(secret) })).status, 303);
  return { account, browser, secret };
}

/** The form of `html` posting to `action`, as a browser sends it: its hidden inputs (token included) and `fields`. */
function formOf(html: string, action: RegExp, fields: Record<string, string | string[]>) {
  const form = [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find(([, a]) =>
    action.test(a!),
  );
  assert.ok(form, `no form matching ${action}`);
  const body = new URLSearchParams();
  body.append('_csrf', /name="_csrf" value="([^"]+)"/.exec(form[2]!)![1]!);
  for (const [name, value] of Object.entries(hiddenFields(html, action)))
    if (!(name in fields)) body.append(name, value);
  for (const [name, value] of Object.entries(fields))
    for (const item of Array.isArray(value) ? value : [value]) body.append(name, item);
  return { path: form[1]!, body };
}

/** Sends the same form twice at the same time; answers both answers. */
async function twiceAtOnce(browser: FormClient, form: { path: string; body: URLSearchParams }) {
  return Promise.all([browser.fetch(form.path, { form: form.body }), browser.fetch(form.path, { form: form.body })]);
}

const mask = (html: string) => html.replace(/name="(_csrf|submit_token)" value="[^"]+"/g, 'name="$1" value="…"');

describe('a form sent twice at once acts once, and both get the same answer', () => {
  test('registering an application: one application, the same client id and secret in both answers', async () => {
    const { account, browser } = await developer();
    const page = await browser.fetch('/account/apps');
    assert.match(page.text, /name="submit_token" value="[A-Za-z0-9_-]{43}"/);
    const form = formOf(page.text, /^\/account\/apps$/, {
      name: 'Twice Clicked',
      redirect_uri: CALLBACK,
      scope: ['common'],
      confidential: 'yes',
    });
    const [a, b] = await twiceAtOnce(browser, form);
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    assert.equal(a.text, b.text, 'the same page, the same secret');
    assert.match(a.text, /id="client-secret"/);
    const apps = await db()
      .selectFrom('applications')
      .select('client_id')
      .where('owner_id', '=', account.userId)
      .execute();
    assert.equal(apps.length, 1);
    const events = await listSecurityEvents(db(), { userId: account.userId });
    assert.equal(events.filter((e) => e.kind === 'application_created').length, 1);
    // Sent again later (the back button, a reload): still the first answer, nothing new.
    const again = await browser.fetch(form.path, { form: form.body });
    assert.equal(again.text, a.text);
    // A fresh page's token registers another.
    const fresh = await browser.fetch('/account/apps');
    const other = await browser.fetch('/account/apps', {
      form: formOf(fresh.text, /^\/account\/apps$/, { name: 'Second One', redirect_uri: CALLBACK }).body,
    });
    assert.equal(other.status, 200, other.text);
    assert.equal(
      (await db().selectFrom('applications').select('client_id').where('owner_id', '=', account.userId).execute())
        .length,
      2,
    );
  });

  test('a new secret, confirmed twice at once: one change, one event, the same secret shown', async () => {
    const { account, browser } = await developer();
    const created = await browser.fetch('/account/apps', {
      form: formOf((await browser.fetch('/account/apps')).text, /^\/account\/apps$/, {
        name: 'Rekeyed',
        redirect_uri: CALLBACK,
        confidential: 'yes',
      }).body,
    });
    const clientId = /id="client-id">([^<]+)</.exec(created.text)![1]!;
    const list = await browser.fetch('/account/apps');
    const asked = await browser.fetch('/account/apps/secret', {
      form: formOf(list.text, /secret$/, { new_secret: clientId }).body,
    });
    const [a, b] = await twiceAtOnce(browser, formOf(asked.text, /secret$/, { new_secret: clientId }));
    assert.equal(a.status, 200);
    assert.equal(a.text, b.text);
    assert.match(a.text, /id="client-secret"/);
    const renewed = (await listSecurityEvents(db(), { userId: account.userId })).filter(
      (e) => e.kind === 'application_secret_renewed',
    );
    assert.equal(renewed.length, 1);
  });

  test('new backup codes: one new set, one event, the same answer', async () => {
    const { account, browser, secret } = await developer();
    const page = await browser.fetch('/account');
    const form = formOf(page.text, /backup-codes$/, {
      code: totpCode(secret, Date.now() + STEP),
      backup_codes: 'new',
    });
    const [a, b] = await twiceAtOnce(browser, form);
    assert.equal(a.status, 303, a.text);
    assert.equal(b.status, 303, b.text);
    assert.equal(a.location, b.location);
    assert.equal(a.location, '/account/backup-codes?done=backup-codes-new');
    const events = await listSecurityEvents(db(), { userId: account.userId });
    assert.equal(events.filter((e) => e.kind === 'backup_codes_renewed').length, 1);
    const shown = await browser.fetch(a.location!);
    assert.equal((shown.text.match(/<li><code>/g) ?? []).length, 10);
  });

  test('an e-mail change: one link sent, the same answer', async () => {
    const { account, browser } = await developer();
    const address = newAddress('changed');
    const page = await browser.fetch('/account');
    const form = formOf(page.text, /email$/, { new_email: address, current_password: account.password });
    const before = mailbox.received.length;
    const [a, b] = await twiceAtOnce(browser, form);
    assert.equal(a.status, 303, a.text);
    assert.equal(b.status, 303);
    assert.equal(a.location, b.location);
    await mailbox.next(address);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(mailbox.received.slice(before).filter((m) => m.to.includes(address)).length, 1);
  });

  for (const [path, purpose] of [
    ['/account/sign-up', 'sign-up'],
    ['/account/forgot', 'reset'],
  ] as const) {
    test(`a ${purpose} request: one code sent, the same answer (and the same flow cookie)`, async () => {
      const browser = new OwnIpClient(server);
      const address = newAddress(purpose);
      if (purpose === 'reset') {
        const account = await newAccount(server);
        await db().updateTable('users').set({ email: address }).where('user_id', '=', account.userId).execute();
      }
      const page = await browser.fetch(path);
      const form = formOf(page.text, new RegExp(`^${path}$`), { email: address });
      assert.ok(form.body.get('submit_token'), 'the form carries a submit token');
      const [first, second] = await twiceAtOnce(browser, form);
      assert.equal(first.status, 303, first.text);
      assert.equal(second.status, 303, second.text);
      assert.equal(first.location, second.location);
      assert.equal(first.headers.get('set-cookie'), second.headers.get('set-cookie'), 'the same flow');
      const mail = await mailbox.next(address);
      assert.ok(mail);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(mailbox.received.filter((m) => m.to.includes(address)).length, 1, 'one message');
    });
  }
});

describe('destructive actions ask first, and want a recent sign-in', () => {
  async function appOf(browser: FormClient) {
    const created = await browser.fetch('/account/apps', {
      form: formOf((await browser.fetch('/account/apps')).text, /^\/account\/apps$/, {
        name: 'Doomed',
        redirect_uri: CALLBACK,
        confidential: 'yes',
      }).body,
    });
    return /id="client-id">([^<]+)</.exec(created.text)![1]!;
  }
  const appRow = (clientId: string) =>
    db()
      .selectFrom('applications')
      .select(['client_id', 'secret_hash'])
      .where('client_id', '=', clientId)
      .executeTakeFirst();

  test('the DESIGN form alone answers the confirmation page (200) and changes nothing', async () => {
    const { browser } = await developer();
    const clientId = await appOf(browser);
    const before = await appRow(clientId);
    for (const [path, name] of [
      ['/account/apps/secret', 'new_secret'],
      ['/account/apps/delete', 'delete_app'],
    ] as const) {
      const list = await browser.fetch('/account/apps');
      const asked = await browser.fetch(path, {
        form: formOf(list.text, new RegExp(`${path}$`), { [name]: clientId }).body,
      });
      assert.equal(asked.status, 200, asked.text);
      assert.match(asked.text, /cannot be undone/);
      assert.ok(asked.text.includes(`name="${name}" value="${clientId}"`));
      assert.match(asked.text, /name="confirmed" value="yes"/);
      assert.match(asked.text, /href="\/account\/apps" id="confirm-cancel"/);
      assert.doesNotMatch(asked.text, /<script(?! src="\/assets\/page\.js")/, 'no script needed');
      // The same page as a link.
      const link = await browser.fetch(`/account/apps/${clientId}/${name === 'new_secret' ? 'new-secret' : 'delete'}`);
      assert.equal(link.status, 200);
      assert.equal(mask(link.text), mask(asked.text));
    }
    assert.deepEqual(await appRow(clientId), before);
  });

  test('signed in more than 10 minutes ago: the re-authentication page, then back to the confirmation', async () => {
    const { account, browser, secret } = await developer();
    const clientId = await appOf(browser);
    // The browser's sign-in was made 11 minutes ago.
    await db()
      .updateTable('web_sessions')
      .set({ created_at: Date.now() - 11 * 60_000 })
      .where('user_id', '=', account.userId)
      .execute();
    const list = await browser.fetch('/account/apps');
    const asked = await browser.fetch('/account/apps/delete', {
      form: formOf(list.text, /delete$/, { delete_app: clientId }).body,
    });
    assert.equal(asked.status, 200);
    assert.match(asked.text, /Confirm it is you/);
    assert.match(asked.text, /action="\/account\/reauth"/);
    assert.match(asked.text, /name="code"/, 'two-step on: a code too');
    // Confirmed anyway (an old confirmation page): still the re-authentication, nothing deleted.
    const forced = await browser.fetch('/account/apps/delete', {
      form: formOf(list.text, /delete$/, { delete_app: clientId, confirmed: 'yes' }).body,
    });
    assert.match(forced.text, /Confirm it is you/);
    assert.ok(await appRow(clientId));

    const wrong = await browser.fetch('/account/reauth', {
      form: formOf(asked.text, /reauth$/, { password: 'not the password', code: totpCode(secret) }).body,
    });
    assert.equal(wrong.status, 401);
    assert.match(wrong.text, /password is not right/);
    const failed = (await listSecurityEvents(db(), { userId: account.userId })).filter(
      (e) => e.kind === 'sign_in_failed',
    );
    assert.ok(failed.length >= 1, 'counted as a failed sign-in');

    const proved = await browser.fetch('/account/reauth', {
      form: formOf(wrong.text, /reauth$/, {
        password: account.password,
        code: totpCode(secret, Date.now() + STEP),
      }).body,
    });
    assert.equal(proved.status, 303, proved.text);
    assert.equal(proved.location, `/account/apps/${clientId}/delete`);
    const confirmation = await browser.fetch(proved.location!);
    assert.equal(confirmation.status, 200);
    assert.match(confirmation.text, /name="confirmed" value="yes"/);
    const deleted = await browser.fetch('/account/apps/delete', {
      form: formOf(confirmation.text, /delete$/, { delete_app: clientId }).body,
    });
    assert.equal(deleted.status, 303);
    assert.equal(deleted.location, '/account/apps?done=deleted');
    assert.equal(await appRow(clientId), undefined);
  });

  test('the re-authentication goes back only to a path of this service', async () => {
    const { account, browser, secret } = await developer();
    await db()
      .updateTable('web_sessions')
      .set({ created_at: Date.now() - 11 * 60_000 })
      .where('user_id', '=', account.userId)
      .execute();
    const clientId = await appOf(browser);
    const page = await browser.fetch(`/account/apps/${clientId}/new-secret`);
    assert.match(page.text, /Confirm it is you/);
    const away = await browser.fetch('/account/reauth', {
      form: formOf(page.text, /reauth$/, {
        return_to: '//evil.example/x',
        password: account.password,
        code: totpCode(secret, Date.now() + STEP),
      }).body,
    });
    assert.equal(away.status, 303);
    assert.equal(away.location, '/account');
  });
});

describe('the backup codes page', () => {
  test('download answers the codes as a text file; bad codes are refused', async () => {
    const { account, browser, secret } = await developer();
    const page = await browser.fetch('/account');
    const renewed = await browser.fetch('/account/backup-codes', {
      form: formOf(page.text, /backup-codes$/, { code: totpCode(secret, Date.now() + STEP), backup_codes: 'new' }).body,
    });
    const shown = await browser.fetch(renewed.location!);
    const codes = [...shown.text.matchAll(/<li><code>([a-z0-9-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    assert.equal(codes.length, 10);
    assert.match(shown.text, /id="copy-backup-codes"/);
    assert.match(shown.text, /id="print-backup-codes"/);
    assert.match(shown.text, /id="saved-backup-codes"[^>]*required/);
    const download = await browser.fetch('/account/backup-codes/download', {
      form: formOf(shown.text, /download$/, { code: codes }).body,
    });
    assert.equal(download.status, 200);
    assert.match(download.headers.get('content-type')!, /^text\/plain/);
    assert.match(download.headers.get('content-disposition')!, /attachment; filename="backup-codes.txt"/);
    assert.ok(download.text.includes(account.username));
    assert.deepEqual(
      download.text.split('\r\n').filter((line) => /^[a-z0-9]{4}-[a-z0-9]{4}$/.test(line)),
      codes,
    );
    const bad = await browser.fetch('/account/backup-codes/download', {
      form: formOf(shown.text, /download$/, { code: '<script>' }).body,
    });
    assert.equal(bad.status, 400);
    // Shown once: the page again shows none.
    const again = await browser.fetch('/account/backup-codes');
    assert.doesNotMatch(again.text, /<li><code>/);
    assert.match(again.text, /shown already/);
  });
});
