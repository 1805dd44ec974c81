/**
 * The SMTP server down or refusing mail (DESIGN "Self-service accounts"): the person gets a clear
 * page (not a 500), nothing is half done, and trying again once mail goes out works.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findAccountByLogin } from '../../src/accounts/accounts.ts';
import { downUrl, type Mailbox, startMailbox } from '../helpers/mail.ts';
import { newAccount } from '../helpers/oauth.ts';
import {
  finishSignUp,
  type Inbox,
  newAddress,
  OwnIpClient,
  STRONG_PASSWORD,
  smtpInbox,
  startSignUp,
} from '../helpers/self-service.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

/** Tries per message (the mail module retries twice). */
const TRIES = 3;

describe('SMTP refusing mail', () => {
  let server: TestServer;
  let mailbox: Mailbox;
  let inbox: Inbox;
  before(async () => {
    mailbox = await startMailbox();
    server = await startServer({
      env: { TRUST_PROXY: 'true', SMTP_URL: mailbox.url },
      mail: { retryDelaysMs: [0, 0] },
    });
    inbox = smtpInbox(mailbox);
  });
  after(async () => {
    await server?.close();
    await mailbox?.close();
  });

  test('sign-up: a clear page while mail is refused, then the same address works', async () => {
    const email = newAddress();
    const client = new OwnIpClient(server);
    const page = await client.fetch('/account/sign-up');
    mailbox.refuse(TRIES);
    const refused = await client.submitOn(page.text, { email }, /^\/account\/sign-up$/);
    assert.equal(refused.status, 503);
    assert.match(refused.text, /could not send the e-mail/);
    assert.match(refused.text, /id="email-error"/);
    assert.equal(mailbox.refused, TRIES);
    const { browser, mail } = await startSignUp(server, inbox, email, { browser: client });
    const username = `mailfail${Date.now() % 100000}`;
    const created = await finishSignUp(browser, mail.code!, { username, password: STRONG_PASSWORD });
    assert.equal(created.status, 303);
    assert.ok(await findAccountByLogin(server.app.database.db, username));
  });

  test('a refused welcome message does not undo (or half-create) the account', async () => {
    const email = newAddress();
    const { browser, mail } = await startSignUp(server, inbox, email);
    await browser.submit('/account/sign-up', { code: mail.code! }, /\/code$/);
    mailbox.refuse(TRIES);
    const username = `nowelcome${Date.now() % 100000}`;
    const created = await browser.submit('/account/sign-up', { username, password: STRONG_PASSWORD }, /\/details$/);
    assert.equal(created.status, 303);
    const account = await findAccountByLogin(server.app.database.db, username);
    assert.equal(account?.email, email.toLowerCase());
    assert.equal((await browser.fetch('/account')).status, 200, 'signed in');
  });

  test('reset and e-mail change: a clear page, nothing changed, then a retry works', async () => {
    const account = await newAccount(server);
    const client = new OwnIpClient(server);
    const page = await client.fetch('/account/forgot');
    mailbox.refuse(TRIES);
    const refused = await client.submitOn(page.text, { email: account.email }, /^\/account\/forgot$/);
    assert.equal(refused.status, 503);
    assert.match(refused.text, /could not send the e-mail/);
    const retried = await client.submitOn(page.text, { email: account.email }, /^\/account\/forgot$/);
    assert.equal(retried.status, 303);
    assert.ok((await inbox.next(account.email)).code);

    assert.equal(
      (await client.submit('/account/sign-in', { username: account.username, password: account.password })).status,
      303,
    );
    const next = newAddress('moving');
    mailbox.refuse(TRIES);
    const change = await client.submit(
      '/account',
      { new_email: next, current_password: account.password },
      /\/account\/email$/,
    );
    assert.equal(change.status, 503);
    assert.match(change.text, /id="email-error"/);
    const again = await client.submit(
      '/account',
      { new_email: next, current_password: account.password },
      /\/account\/email$/,
    );
    assert.equal(again.status, 303);
    assert.ok((await inbox.next(next)).link);
  });
});

describe('SMTP down', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({
      env: { TRUST_PROXY: 'true', SMTP_URL: await downUrl() },
      mail: { retryDelaysMs: [0, 0] },
    });
  });
  after(() => server?.close());

  test('sign-up and reset answer a clear page, never a 500, and store no account', async () => {
    const client = new OwnIpClient(server);
    const email = newAddress();
    for (const path of ['/account/sign-up', '/account/forgot']) {
      const page = await client.fetch(path);
      const answer = await client.submitOn(page.text, { email }, new RegExp(`^${path}$`));
      assert.equal(answer.status, 503, path);
      assert.match(answer.text, /could not send the e-mail/);
    }
    assert.equal(await findAccountByLogin(server.app.database.db, email), undefined);
  });
});
