/**
 * Password reset (DESIGN "Self-service accounts") through the pages, codes and links from the
 * messages: the same answer for every address, the reset ending every sign-in, two racing resets,
 * two-step accounts (a current code), and limits.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { replaceBackupCodes } from '../../src/accounts/backup-codes.ts';
import { newTotpSecret, totpCode } from '../../src/accounts/totp.ts';
import { isTrustedDevice, trustDevice } from '../../src/accounts/trusted-devices.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { newAccount, newApp, tokensThroughPages } from '../helpers/oauth.ts';
import {
  type Inbox,
  maskTokens,
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

/** Asks for a reset of `email` in a new browser; answers the browser and the message. */
async function askReset(email: string, browser = new OwnIpClient(server)) {
  const page = await browser.fetch('/account/forgot');
  const answer = await browser.submitOn(page.text, { email }, /^\/account\/forgot$/);
  assert.equal(answer.status, 303, answer.text);
  return { browser, answer, mail: await inbox.next(email) };
}

async function enterCode(browser: OwnIpClient, code: string) {
  const answer = await browser.submit('/account/forgot', { code }, /\/code$/);
  assert.equal(answer.status, 303, answer.text);
  return browser.fetch('/account/forgot');
}

const signInWorks = async (username: string, password: string) => {
  const client = new OwnIpClient(server);
  const answer = await client.submit('/account/sign-in', { username, password });
  return answer.status === 303;
};

describe('password reset', () => {
  test('by code: the new password works, every session, browser sign-in and device trust ends, a notice is sent', async () => {
    const account = await newAccount(server);
    const app = await newApp(server);
    const tokens = await tokensThroughPages(server, app, account);
    const signedIn = new OwnIpClient(server);
    assert.equal(
      (await signedIn.submit('/account/sign-in', { username: account.username, password: account.password })).status,
      303,
    );
    await trustDevice(server.app.database.db, account.userId, 'device-1');
    // A passkey (as registration stores one; only a real authenticator makes one: test/browser/passkeys.test.ts).
    const credentialId = `cmVzZXQ${account.userId.slice(0, 8)}`;
    await server.app.database.db
      .insertInto('passkeys')
      .values({
        credential_id: credentialId,
        user_id: account.userId,
        public_key: 'AA',
        counter: 0,
        transports: '[]',
        name: 'Reset key',
        created_at: Date.now(),
        last_used_at: null,
      })
      .execute();

    const { browser, mail } = await askReset(account.email);
    assert.ok(mail.code);
    const form = await enterCode(browser, mail.code);
    assert.match(form.text, /name="new_password"/);
    assert.doesNotMatch(form.text, /name="two_step_code"/, 'no two-step input without two-step');
    const weak = await browser.submitOn(form.text, { new_password: 'short' }, /\/password$/);
    assert.equal(weak.status, 400);
    assert.match(weak.text, /id="new-password-error"/);
    const done = await browser.submit('/account/forgot', { new_password: STRONG_PASSWORD }, /\/password$/);
    assert.equal(done.status, 200, done.text);
    assert.match(done.text, /password was changed/);

    assert.ok(await signInWorks(account.username, STRONG_PASSWORD));
    assert.ok(!(await signInWorks(account.username, account.password)));
    const old = await server.request('GET', '/v4/user', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    assert.equal(old.status, 401, 'the application was signed out');
    assert.equal((await signedIn.fetch('/account')).status, 303, 'the other browser was signed out');
    assert.ok(!(await isTrustedDevice(server.app.database.db, account.userId, 'device-1')), 'device trust ended');
    const passkeys = await server.app.database.db
      .selectFrom('passkeys')
      .select('credential_id')
      .where('user_id', '=', account.userId)
      .execute();
    assert.deepEqual(
      passkeys.map((row) => row.credential_id),
      [credentialId],
      'a reset leaves passkeys alone (issue 20)',
    );
    const notice = await inbox.next(account.email);
    assert.ok(notice.text.includes(account.username));
    const events = await server.app.database.db
      .selectFrom('security_events')
      .select('details')
      .where('kind', '=', 'password_reset')
      .where('user_id', '=', account.userId)
      .execute();
    assert.equal(events.length, 1);
  });

  test('by link, opened in another browser; the link works once', async () => {
    const account = await newAccount(server);
    const { mail } = await askReset(account.email);
    const phone = new OwnIpClient(server);
    const shown = await phone.fetch(mail.link!);
    const confirmed = await submitForm(phone, shown.text, {}, /\/account\/verify$/);
    assert.equal(confirmed.location, '/account/forgot');
    const done = await phone.submit('/account/forgot', { new_password: STRONG_PASSWORD }, /\/password$/);
    assert.equal(done.status, 200, done.text);
    assert.equal((await phone.fetch(mail.link!)).status, 410);
    await inbox.next(account.email);
  });

  test('known and unknown addresses: the same answers; the unknown one is told so by mail', async () => {
    const account = await newAccount(server);
    const unknown = newAddress('nobody');
    const known = await askReset(account.email);
    const stranger = await askReset(unknown);
    const cookie = (answer: typeof known.answer) =>
      answer.headers.get('set-cookie')!.replace(/reset_flow=[^;]+/, 'reset_flow=…');
    assert.deepEqual(
      [known.answer.status, known.answer.location, known.answer.text, cookie(known.answer)],
      [stranger.answer.status, stranger.answer.location, stranger.answer.text, cookie(stranger.answer)],
    );
    // The code page shows the address typed (decision 0091); all else is the same for every address.
    assert.equal(
      maskTokens((await known.browser.fetch('/account/forgot')).text).replaceAll(account.email, '<address typed>'),
      maskTokens((await stranger.browser.fetch('/account/forgot')).text).replaceAll(unknown, '<address typed>'),
    );
    assert.ok(known.mail.code);
    assert.equal(stranger.mail.code, undefined, 'no code for an address without an account');
    assert.match(stranger.mail.text, /sign-up/);
    const guess = await stranger.browser.submit('/account/forgot', { code: '000000' }, /\/code$/);
    assert.equal(guess.status, 400, 'the code page of an unknown address behaves the same');
  });

  test('two resets racing with the same proof: exactly one wins', async () => {
    const account = await newAccount(server);
    const { browser, mail } = await askReset(account.email);
    const form = await enterCode(browser, mail.code!);
    const passwords = ['racing-gentle-meadow-48-owls', 'racing-stormy-harbor-93-kites'];
    const answers = await Promise.all(
      passwords.map((new_password) => browser.submitOn(form.text, { new_password }, /\/password$/)),
    );
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 410]);
    const winner = passwords[answers.findIndex((answer) => answer.status === 200)]!;
    const loser = passwords.find((password) => password !== winner)!;
    assert.ok(await signInWorks(account.username, winner));
    assert.ok(!(await signInWorks(account.username, loser)));
    assert.equal(
      (
        await server.app.database.db
          .selectFrom('security_events')
          .select('event_id')
          .where('kind', '=', 'password_reset')
          .where('user_id', '=', account.userId)
          .execute()
      ).length,
      1,
    );
  });

  test('two-step on: a current code is needed, a wrong one refused next to its input, a used one too', async () => {
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const { browser, mail } = await askReset(account.email);
    const form = await enterCode(browser, mail.code!);
    assert.match(form.text, /name="two_step_code"/);
    const code = totpCode(secret);
    const wrongCode = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const wrong = await browser.submitOn(
      form.text,
      { new_password: STRONG_PASSWORD, two_step_code: wrongCode },
      /\/password$/,
    );
    assert.equal(wrong.status, 401);
    assert.match(wrong.text, /id="two-step-code-error"/);
    assert.ok(await signInWorks(account.username, account.password), 'nothing changed');
    const done = await browser.submitOn(
      form.text,
      { new_password: STRONG_PASSWORD, two_step_code: code },
      /\/password$/,
    );
    assert.equal(done.status, 200, done.text);
    assert.match((await inbox.next(account.email)).text, new RegExp(account.username), 'the password-changed notice');
    // A second reset cannot reuse that code (RFC 6238 §5.2).
    const again = await askReset(account.email);
    const form2 = await enterCode(again.browser, again.mail.code!);
    const reused = await again.browser.submitOn(
      form2.text,
      { new_password: 'another-quiet-river-71-stones', two_step_code: code },
      /\/password$/,
    );
    assert.equal(reused.status, 401);
    assert.match(reused.text, /used already/);
  });

  test('two-step on: a backup code works in the same input, once', async () => {
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const [backup] = await server.app.database.db
      .transaction()
      .execute((trx) => replaceBackupCodes(trx, account.userId));
    const { browser, mail } = await askReset(account.email);
    const form = await enterCode(browser, mail.code!);
    const done = await browser.submitOn(
      form.text,
      { new_password: STRONG_PASSWORD, two_step_code: backup! },
      /\/password$/,
    );
    assert.equal(done.status, 200, done.text);
    await inbox.next(account.email);
    const again = await askReset(account.email);
    const form2 = await enterCode(again.browser, again.mail.code!);
    const reused = await again.browser.submitOn(
      form2.text,
      { new_password: 'another-quiet-river-71-stones', two_step_code: backup! },
      /\/password$/,
    );
    assert.equal(reused.status, 401, 'a backup code works once');
  });

  test('5 wrong codes end the request; a missing flow sends back to the start', async () => {
    const account = await newAccount(server);
    const { browser, mail } = await askReset(account.email);
    const wrong = String((Number(mail.code) + 1) % 1_000_000).padStart(6, '0');
    for (let i = 0; i < 4; i++)
      assert.equal((await browser.submit('/account/forgot', { code: wrong }, /\/code$/)).status, 400);
    const page = await browser.fetch('/account/forgot');
    assert.equal((await browser.submitOn(page.text, { code: wrong }, /\/code$/)).status, 410);
    assert.equal((await browser.submitOn(page.text, { code: mail.code! }, /\/code$/)).status, 410);
    const stranger = new OwnIpClient(server);
    const start = await stranger.fetch('/account/forgot');
    assert.match(start.text, /name="email"/);
  });
});
