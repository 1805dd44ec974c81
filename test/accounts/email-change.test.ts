/**
 * E-mail change on the account page (DESIGN "Self-service accounts"): the new address gets a link
 * (24 hours), the old one a notice; the address changes when the link is confirmed; refusals show
 * next to the inputs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccount, findAccount } from '../../src/accounts/accounts.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { newAccount } from '../helpers/oauth.ts';
import {
  type Inbox,
  newAddress,
  OwnIpClient,
  STRONG_PASSWORD,
  smtpInbox,
  submitForm,
} from '../helpers/self-service.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let mailbox: Mailbox;
let inbox: Inbox;

before(async () => {
  // Messages go through a real SMTP server; codes and links are read from what it received.
  mailbox = await startMailbox();
  server = await startServer({ env: { TRUST_PROXY: 'true', SMTP_URL: mailbox.url } });
  inbox = smtpInbox(mailbox);
});
after(async () => {
  await server?.close();
  await mailbox?.close();
});

async function signedIn() {
  const account = await newAccount(server);
  const browser = new OwnIpClient(server);
  assert.equal(
    (await browser.submit('/account/sign-in', { username: account.username, password: account.password })).status,
    303,
  );
  return { account, browser };
}

const changeEmail = (browser: OwnIpClient, fields: Record<string, string>) =>
  browser.submit('/account', fields, /\/account\/email$/);

describe('e-mail change', () => {
  test('the new address gets a link, the old one a notice; confirming the link changes the address, once', async () => {
    const { account, browser } = await signedIn();
    const page = await browser.fetch('/account');
    assert.match(page.text, /name="new_email"/);
    const next = newAddress('moved');
    const asked = await changeEmail(browser, { new_email: next, current_password: account.password });
    assert.equal(asked.status, 303, asked.text);
    assert.equal(asked.location, '/account?done=email-link-sent');
    const link = await inbox.next(next);
    assert.ok(link.link, link.text);
    const notice = await inbox.next(account.email);
    assert.equal(notice.link, undefined, 'the old address gets no link');
    assert.ok(!notice.text.includes(next), 'and not the whole new address');
    assert.equal(
      (await findAccount(server.app.database.db, account.userId))?.email,
      account.email,
      'nothing changes before the link',
    );

    // A reset asked for at the old address meanwhile…
    const resetter = new OwnIpClient(server);
    const forgot = await resetter.fetch('/account/forgot');
    assert.equal((await resetter.submitOn(forgot.text, { email: account.email }, /^\/account\/forgot$/)).status, 303);
    const resetMail = await inbox.next(account.email);
    const codePage = await resetter.fetch('/account/forgot');

    const opener = new OwnIpClient(server);
    const shown = await opener.fetch(link.link!);
    assert.equal(shown.status, 200);
    assert.equal(
      (await findAccount(server.app.database.db, account.userId))?.email,
      account.email,
      'opening (GET) changes nothing',
    );
    const done = await submitForm(opener, shown.text, {}, /\/account\/verify$/);
    assert.equal(done.status, 200, done.text);
    assert.equal((await findAccount(server.app.database.db, account.userId))?.email, next.toLowerCase());
    assert.equal((await submitForm(opener, shown.text, {}, /\/account\/verify$/)).status, 410, 'the link works once');
    const lateReset = await resetter.submitOn(codePage.text, { code: resetMail.code! }, /\/code$/);
    assert.equal(lateReset.status, 410, '…no longer works once the address changed');
    const events = await server.app.database.db
      .selectFrom('security_events')
      .select('event_id')
      .where('kind', '=', 'email_changed')
      .where('user_id', '=', account.userId)
      .execute();
    assert.equal(events.length, 1);
    const mine = await browser.fetch('/account');
    assert.ok(mine.text.includes(next.toLowerCase()));
  });

  test('refusals next to the inputs: wrong password, bad address (CR/LF), taken, the same, no CSRF', async () => {
    const { account, browser } = await signedIn();
    const other = await newAccount(server);
    const cases: Array<[Record<string, string>, number, RegExp]> = [
      [{ new_email: newAddress(), current_password: 'not-the-password' }, 401, /current password is not right/],
      [{ new_email: 'a@example.com\r\nBcc: b@example.com', current_password: account.password }, 400, /line breaks/],
      [{ new_email: 'nope', current_password: account.password }, 400, /not a valid/],
      [{ new_email: other.email.toUpperCase(), current_password: account.password }, 409, /Another account/],
      [{ new_email: account.email, current_password: account.password }, 400, /already/],
    ];
    for (const [fields, status, reason] of cases) {
      const answer = await changeEmail(browser, fields);
      assert.equal(answer.status, status, JSON.stringify(fields));
      assert.match(answer.text, /id="email-error"/);
      assert.match(answer.text, reason);
    }
    assert.equal((await findAccount(server.app.database.db, account.userId))?.email, account.email);
    const signedOut = new OwnIpClient(server);
    const page = await signedOut.fetch('/account/sign-in');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const anonymous = await signedOut.fetch('/account/email', {
      form: { _csrf: csrf, new_email: newAddress(), current_password: 'x' },
    });
    assert.equal(anonymous.status, 303, 'signed out: sent to sign in');
  });

  test('an address taken before the link is opened: a clear error, and nothing changes', async () => {
    const { account, browser } = await signedIn();
    const next = newAddress('contested');
    assert.equal((await changeEmail(browser, { new_email: next, current_password: account.password })).status, 303);
    const link = await inbox.next(next);
    await inbox.next(account.email);
    await createAccount(
      server.app.database.db,
      { username: `grab${Date.now()}`, email: next, password: STRONG_PASSWORD },
      server.app.secrets,
    );
    const opener = new OwnIpClient(server);
    const shown = await opener.fetch(link.link!);
    const answer = await submitForm(opener, shown.text, {}, /\/account\/verify$/);
    assert.equal(answer.status, 409);
    assert.match(answer.text, /Another account uses this e-mail address/);
    assert.equal((await findAccount(server.app.database.db, account.userId))?.email, account.email);
  });

  test('a made-up or malformed token is a dead link, never a 500', async () => {
    const client = new OwnIpClient(server);
    for (const token of ['', 'x', 'A'.repeat(43), '%00', 'a'.repeat(5000)]) {
      const answer = await client.fetch(`/account/verify?token=${token}`);
      assert.ok(answer.status === 410 || answer.status === 400, `${token.slice(0, 10)}: ${answer.status}`);
    }
    const repeated = await client.fetch('/account/verify?token=a&token=b');
    assert.ok(repeated.status === 410 || repeated.status === 400, `a repeated token: ${repeated.status}`);
  });
});
