/**
 * Sign-up (DESIGN "Self-service accounts") through real HTTP and the pages, with the codes and links
 * taken from the messages the server sent: by code and by link, the same answer for every address,
 * codes that cannot be guessed or reused, CSRF, the return address, hostile addresses and
 * usernames, the request limits, and SIGN_UP=closed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findAccountByLogin } from '../../src/accounts/accounts.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { newApp, startLogin } from '../helpers/oauth.ts';
import {
  finishSignUp,
  type Inbox,
  maskTokens,
  newAddress,
  OwnIpClient,
  STRONG_PASSWORD,
  smtpInbox,
  startSignUp,
  submitForm,
} from '../helpers/self-service.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let mailbox: Mailbox;
let inbox: Inbox;
let names = 0;
const newUsername = () => `new${process.pid}u${++names}${Math.random().toString(36).slice(2, 6)}`;

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

const events = async (kind: string) =>
  server.app.database.db
    .selectFrom('security_events')
    .select(['user_id', 'details'])
    .where('kind', '=', kind)
    .execute();

describe('sign-up', () => {
  test('by code: the account is created with the verified address, signed in, welcomed, and sent to /account', async () => {
    const email = newAddress();
    const { browser, mail } = await startSignUp(server, inbox, email);
    assert.ok(mail.code, `a code in ${mail.text}`);
    const waiting = await browser.fetch('/account/sign-up');
    assert.match(waiting.text, /name="code"/);
    const username = newUsername();
    const created = await finishSignUp(browser, mail.code, { username, password: STRONG_PASSWORD });
    assert.equal(created.status, 303, created.text);
    assert.equal(created.location, '/account');
    const account = await findAccountByLogin(server.app.database.db, username);
    assert.equal(account?.email, email.toLowerCase());
    const page = await browser.fetch('/account');
    assert.equal(page.status, 200, 'signed in');
    assert.ok(page.text.includes(username));
    const welcome = await inbox.next(email);
    assert.match(welcome.text, new RegExp(username));
    assert.ok((await events('signed_up')).some((event) => event.user_id === account!.userId));
  });

  test('by link: GET only shows a button; its POST moves this browser on; the link works once', async () => {
    const email = newAddress();
    const { mail } = await startSignUp(server, inbox, email);
    assert.ok(mail.link);
    // Another browser (the mail app's) opens the link.
    const other = new OwnIpClient(server);
    const shown = await other.fetch(mail.link);
    assert.equal(shown.status, 200);
    const again = await other.fetch(mail.link);
    assert.equal(again.status, 200, 'a GET (a prefetcher) does not use the link up');
    const confirmed = await submitForm(other, shown.text, {}, /\/account\/verify$/);
    assert.equal(confirmed.status, 303);
    assert.equal(confirmed.location, '/account/sign-up');
    const username = newUsername();
    const created = await other.submit('/account/sign-up', { username, password: STRONG_PASSWORD }, /\/details$/);
    assert.equal(created.status, 303, created.text);
    assert.ok(await findAccountByLogin(server.app.database.db, email));
    const reused = await new OwnIpClient(server).fetch(mail.link);
    assert.equal(reused.status, 410, 'the link is used up');
    const reusedPost = await submitForm(other, shown.text, {}, /\/account\/verify$/);
    assert.equal(reusedPost.status, 410, 'a POST of the used link too');
  });

  test('known and unknown addresses get byte-identical answers, in similar time', async () => {
    const known = newAddress('known');
    const { browser, mail } = await startSignUp(server, inbox, known);
    await finishSignUp(browser, mail.code!, { username: newUsername(), password: STRONG_PASSWORD });
    await inbox.next(known); // welcome

    async function ask(email: string) {
      const client = new OwnIpClient(server);
      const page = await client.fetch('/account/sign-up');
      const started = performance.now();
      const answer = await client.submitOn(page.text, { email }, /^\/account\/sign-up$/);
      const ms = performance.now() - started;
      const next = await client.fetch(answer.location!);
      const cookie = answer.headers.get('set-cookie')!.replace(/signup_flow=[^;]+/, 'signup_flow=…');
      return {
        status: answer.status,
        location: answer.location,
        body: answer.text,
        cookie,
        // The code page shows the address typed (decision 0091); all else is the same for every address.
        page: maskTokens(next.text).replaceAll(email, '<address typed>'),
        ms,
      };
    }
    const timings = { known: [] as number[], unknown: [] as number[] };
    let first: { known: Awaited<ReturnType<typeof ask>>; unknown: Awaited<ReturnType<typeof ask>> } | undefined;
    for (let round = 0; round < 4; round++) {
      const fresh = newAddress('unknown');
      const k = await ask(known);
      const u = await ask(fresh);
      first ??= { known: k, unknown: u };
      timings.known.push(k.ms);
      timings.unknown.push(u.ms);
      const exists = await inbox.next(known);
      assert.equal(exists.code, undefined, 'an address with an account gets no code');
      assert.ok((await inbox.next(fresh)).code, 'a new address gets a code');
    }
    assert.equal(first!.known.status, 303);
    assert.deepEqual(
      { ...first!.known, ms: 0 },
      { ...first!.unknown, ms: 0 },
      'the same answer and the same next page',
    );
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const [k, u] = [median(timings.known), median(timings.unknown)];
    assert.ok(
      Math.abs(k - u) < Math.max(25, 0.5 * Math.max(k, u)),
      `similar time: known ${k.toFixed(1)} ms, unknown ${u.toFixed(1)} ms`,
    );
  });

  test('5 wrong codes end the request, even sent at once; the right code then fails too', async () => {
    const email = newAddress();
    const { browser, mail } = await startSignUp(server, inbox, email);
    const wrong = String((Number(mail.code) + 1) % 1_000_000).padStart(6, '0');
    const page = await browser.fetch('/account/sign-up');
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => browser.submitOn(page.text, { code: wrong }, /\/code$/)),
    );
    assert.equal(
      answers.filter((answer) => answer.status === 400).length,
      4,
      'four wrong codes say so; the fifth ends the request',
    );
    assert.ok(answers.every((answer) => answer.status === 400 || answer.status === 410));
    const right = await browser.submitOn(page.text, { code: mail.code! }, /\/code$/);
    assert.equal(right.status, 410, 'the request has ended');
    assert.match(right.text, /new one/);
  });

  test('a code works once; a newer request replaces the older one', async () => {
    const email = newAddress();
    const first = await startSignUp(server, inbox, email);
    const firstPage = await first.browser.fetch('/account/sign-up');
    const second = await startSignUp(server, inbox, email);
    const old = await first.browser.submitOn(firstPage.text, { code: first.mail.code! }, /\/code$/);
    assert.equal(old.status, 410, 'the first request was replaced');
    const used = await second.browser.submit('/account/sign-up', { code: second.mail.code! }, /\/code$/);
    assert.equal(used.status, 303);
    const page = await second.browser.fetch('/account/sign-up');
    assert.match(page.text, /name="username"/);
    const twice = await second.browser.fetch('/account/sign-up/code', { form: { code: second.mail.code! } });
    assert.equal(twice.status, 403, 'no CSRF token');
    const replay = await second.browser.submitOn(
      page.text.replace('/account/sign-up/details', '/account/sign-up/code'),
      { code: second.mail.code! },
      /\/code$/,
    );
    assert.equal(replay.status, 410, 'the code is used up');
    const wrongLink = await second.browser.fetch(first.mail.link!);
    assert.equal(wrongLink.status, 410, "the replaced request's link is dead too");
  });

  test('every sign-up form refuses a missing or foreign CSRF token', async () => {
    const client = new OwnIpClient(server);
    for (const [path, form] of [
      ['/account/sign-up', { email: newAddress() }],
      ['/account/sign-up/code', { code: '123456' }],
      ['/account/sign-up/details', { username: newUsername(), password: STRONG_PASSWORD }],
      ['/account/verify', { token: 'x'.repeat(43) }],
      ['/account/forgot', { email: newAddress() }],
      ['/account/forgot/code', { code: '123456' }],
      ['/account/forgot/password', { new_password: STRONG_PASSWORD }],
      ['/account/email', { new_email: newAddress(), current_password: 'x' }],
    ] as const) {
      const missing = await client.fetch(path, { form });
      assert.equal(missing.status, 403, `${path} without a token`);
      const foreign = await client.fetch(path, { form: { ...form, _csrf: 'forged-token' } });
      assert.equal(foreign.status, 403, `${path} with a forged token`);
    }
  });

  test('the return address: the OAuth login page it came from, never another site', async () => {
    const app = await newApp(server);
    const login = await startLogin(server, {
      client_id: app.clientId,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    });
    const signInPage = await new OwnIpClient(server).fetch(login);
    const link = /href="(\/account\/sign-up\?return_to=[^"]+)"/.exec(signInPage.text)?.[1];
    assert.ok(link, 'the login page links "Create an account" with its own address');
    assert.ok(signInPage.text.includes('href="/account/forgot"'), 'and "Forgot your password?"');
    const email = newAddress();
    const { browser, mail } = await startSignUp(server, inbox, email, { returnTo: login });
    const created = await finishSignUp(browser, mail.code!, { username: newUsername(), password: STRONG_PASSWORD });
    assert.equal(created.location, login, 'back to the login page it came from');
    const consent = await browser.fetch(login);
    assert.match(consent.text, /name="decision"/, 'signed in there: the consent page');

    for (const hostile of [
      'https://evil.example/',
      '//evil.example/x',
      '/\\evil.example',
      '/login/../../evil',
      'javascript:alert(1)',
      '/login/x',
      `${server.url}/account`,
    ]) {
      const { browser: b, mail: m } = await startSignUp(server, inbox, newAddress(), { returnTo: hostile });
      const done = await finishSignUp(b, m.code!, { username: newUsername(), password: STRONG_PASSWORD });
      assert.equal(done.location, '/account', `${hostile} is not followed`);
      await inbox.next(m.to);
    }
    await inbox.next(email);
  });

  test('addresses with CR, LF, NUL, spaces or too long are a form error, nothing is sent', async () => {
    const client = new OwnIpClient(server);
    for (const email of [
      'victim@example.com\r\nBcc: all@example.com',
      'victim@example.com\nBcc: x@example.com',
      'vic\u0000tim@example.com',
      'two words@example.com',
      `${'a'.repeat(64)}@${'b'.repeat(190)}.example.com`,
      'no-at-sign',
      'a@b',
    ]) {
      const page = await client.fetch('/account/sign-up');
      const answer = await client.submitOn(page.text, { email }, /^\/account\/sign-up$/);
      assert.equal(answer.status, 400, JSON.stringify(email));
      // A NUL is refused before any route by the input guard (its own clear 400 page); the rest next to the input.
      assert.match(answer.text, email.includes('\u0000') ? /NUL character/ : /id="email-error"/);
    }
    const fresh = new OwnIpClient(server);
    const repeated = await fresh.fetch('/account/sign-up');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(repeated.text)![1]!;
    const body = new URLSearchParams([
      ['_csrf', csrf],
      ['email', newAddress()],
      ['email', newAddress()],
    ]).toString();
    const answer = await fetch(`${server.url}/account/sign-up`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': fresh.ip,
        cookie: repeated.headers
          .getSetCookie()
          .map((c) => c.split(';')[0])
          .join('; '),
      },
      body,
    });
    assert.equal(answer.status, 400, 'a repeated field is no address');
  });

  test('usernames: taken in another case, Cyrillic look-alikes and fullwidth forms are refused clearly', async () => {
    const owner = newUsername();
    const first = await startSignUp(server, inbox, newAddress());
    await finishSignUp(first.browser, first.mail.code!, { username: owner, password: STRONG_PASSWORD });
    const { browser, mail } = await startSignUp(server, inbox, newAddress());
    const entered = await browser.submit('/account/sign-up', { code: mail.code! }, /\/code$/);
    assert.equal(entered.status, 303);
    const tries: Array<[string, RegExp, number]> = [
      [owner.toUpperCase(), /taken/, 409],
      [`аdmin${names}`, /other alphabets/, 400], // Cyrillic а
      [`ｐａｕｌ${names}`, /fullwidth.*did you mean "paul/, 400],
      [`jos\u00e9${names}`, /accented/, 400],
      ['ab', /3 to 32/, 400],
    ];
    for (const [username, reason, status] of tries) {
      const answer = await browser.submit('/account/sign-up', { username, password: STRONG_PASSWORD }, /\/details$/);
      assert.equal(answer.status, status, username);
      assert.match(answer.text, /id="username-error"/);
      assert.match(answer.text.replace(/&quot;/g, '"'), reason, username);
    }
    const weak = await browser.submit('/account/sign-up', { username: newUsername(), password: 'short' }, /\/details$/);
    assert.equal(weak.status, 400);
    assert.match(weak.text, /id="password-error"/);
    const created = await browser.submit(
      '/account/sign-up',
      { username: newUsername(), password: STRONG_PASSWORD },
      /\/details$/,
    );
    assert.equal(created.status, 303, 'the request survived the refusals');
  });

  test('an address signed up meanwhile is a clear error at the last step', async () => {
    const email = newAddress();
    const a = await startSignUp(server, inbox, email);
    await a.browser.submit('/account/sign-up', { code: a.mail.code! }, /\/code$/);
    // Someone else gets the account for the address first (the operator, say).
    const { createAccount } = await import('../../src/accounts/accounts.ts');
    await createAccount(
      server.app.database.db,
      { username: newUsername(), email, password: STRONG_PASSWORD },
      server.app.secrets,
    );
    const answer = await a.browser.submit(
      '/account/sign-up',
      { username: newUsername(), password: STRONG_PASSWORD },
      /\/details$/,
    );
    assert.equal(answer.status, 409);
    assert.match(answer.text, /created meanwhile/);
  });

  test('at most 5 requests per address and 20 per IP an hour, under a burst too: then 429', async () => {
    const email = newAddress();
    const clients = Array.from({ length: 8 }, () => new OwnIpClient(server));
    const pages = await Promise.all(clients.map((client) => client.fetch('/account/sign-up')));
    const answers = await Promise.all(
      clients.map((client, i) => client.submitOn(pages[i]!.text, { email }, /^\/account\/sign-up$/)),
    );
    assert.equal(answers.filter((answer) => answer.status === 303).length, 5);
    assert.equal(answers.filter((answer) => answer.status === 429).length, 3);
    assert.ok(answers.find((answer) => answer.status === 429)!.headers.get('retry-after'));
    const one = new OwnIpClient(server);
    const page = await one.fetch('/account/sign-up');
    const burst = await Promise.all(
      Array.from({ length: 24 }, () => one.submitOn(page.text, { email: newAddress() }, /^\/account\/sign-up$/)),
    );
    assert.equal(burst.filter((answer) => answer.status === 303).length, 20);
    assert.equal(burst.filter((answer) => answer.status === 429).length, 4);
  });
});

describe('sign-up closed', () => {
  let closed: TestServer;
  before(async () => {
    closed = await startServer({ env: { SIGN_UP: 'closed' } });
  });
  after(() => closed?.close());

  test('SIGN_UP=closed: the sign-up pages answer 404 and no page links them', async () => {
    const client = new OwnIpClient(closed);
    for (const path of ['/account/sign-up', '/account/sign-up?restart'])
      assert.equal((await client.fetch(path)).status, 404, path);
    const signIn = await client.fetch('/account/sign-in');
    assert.doesNotMatch(signIn.text, /Create an account/);
    assert.doesNotMatch((await client.fetch('/')).text, /sign-up/, 'nor the home page');
    assert.match(signIn.text, /Forgot your password\?/);
    const page = await client.fetch('/account/forgot');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const post = await client.fetch('/account/sign-up', { form: { _csrf: csrf, email: newAddress() } });
    assert.equal(post.status, 404);
  });
});
