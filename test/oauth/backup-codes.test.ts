/**
 * Backup codes for two-step verification (DESIGN "Self-service accounts"), through the real pages:
 * made when two-step is turned on and shown once, each signing in once in the input `code` of the
 * login pages' and the account page's two-step step, stored hashed, one winner when used twice at
 * once, counted against the code limits, renewed with a current code, removed with two-step.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findAccount } from '../../src/accounts/accounts.ts';
import { listSecurityEvents } from '../../src/accounts/security-events.ts';
import { totpCode } from '../../src/accounts/totp.ts';
import { FormClient, newAccount, newApp, pkcePair, startLogin } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const STEP = 30_000;
const SHAPE = /^[a-z0-9]{4}-[a-z0-9]{4}$/;
/** Wrong codes allowed per 15 minutes, per account and per IP (DESIGN "v4 login"). */
const CODE_FAILURES_ALLOWED = 10;

/** The codes of the element id="backup-codes", one per <li>; [] when the page shows none. */
function shownCodes(html: string): string[] {
  const list = /<ul id="backup-codes"[^>]*>([\s\S]*?)<\/ul>/.exec(html)?.[1];
  if (list === undefined) return [];
  return [...list.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, '').trim());
}

const codesLeft = (html: string) => Number(/id="backup-codes-left">(\d+)</.exec(html)?.[1]);

describe('backup codes', () => {
  let server: TestServer;
  let ipCount = 0;
  /** A fresh client address (X-Forwarded-For behind TRUST_PROXY), so each test has its own per-IP limits. */
  const newIp = () => ({ 'x-forwarded-for': `198.51.100.${++ipCount}` });

  before(async () => {
    server = await startServer({ env: { TRUST_PROXY: 'true' } });
  });
  after(async () => {
    await server?.close();
  });

  const db = () => server.app.database.db;
  const storedHashes = async (userId: string) =>
    (await db().selectFrom('backup_codes').select('code_hash').where('user_id', '=', userId).execute()).map(
      (r) => r.code_hash,
    );

  /** A browser signed in to /account of a new account without two-step. */
  async function signedInAccount(ip: Record<string, string>) {
    const account = await newAccount(server);
    const browser = new FormClient(server);
    const page = await browser.fetch('/account/sign-in', { headers: ip });
    const signedIn = await browser.submitOn(
      page.text,
      { username: account.username, password: account.password },
      undefined,
      ip,
    );
    assert.equal(signedIn.status, 303, signedIn.text);
    assert.equal(signedIn.location, '/account');
    return { account, browser };
  }

  /**
   * Turns two-step on through the account page; answers the secret, the page that follows (the
   * backup codes page, with the codes) and the account page after it.
   */
  async function turnOn(browser: FormClient, ip: Record<string, string>) {
    const setup = await browser.fetch('/account', { headers: ip });
    const uri = /id="otpauth-uri">([^<]+)</.exec(setup.text)![1]!.replace(/&amp;/g, '&');
    const secret = new URL(uri).searchParams.get('secret')!;
    const on = await browser.submitOn(setup.text, { code: totpCode(secret), two_step: 'on' }, /two-step$/, ip);
    assert.equal(on.status, 303, on.text);
    assert.equal(on.location, '/account/backup-codes?done=two-step-on');
    const page = await browser.fetch(on.location!, { headers: ip });
    assert.equal(page.status, 200);
    const account = await browser.fetch('/account', { headers: ip });
    return { secret, page: page.text, accountPage: account.text };
  }

  /** A second browser at the account sign-in's two-step step. */
  async function atAccountTwoStep(account: { username: string; password: string }, ip: Record<string, string>) {
    const browser = new FormClient(server);
    const page = await browser.fetch('/account/sign-in', { headers: ip });
    const first = await browser.submitOn(
      page.text,
      { username: account.username, password: account.password },
      undefined,
      ip,
    );
    assert.equal(first.status, 303);
    const twoStep = await browser.fetch('/account/sign-in', { headers: ip });
    assert.match(twoStep.text, /name="code"/);
    return { browser, page: twoStep.text };
  }

  test('turning two-step on shows 10 codes once; they are stored hashed', async () => {
    const ip = newIp();
    const { account, browser } = await signedInAccount(ip);
    const { page } = await turnOn(browser, ip);
    const codes = shownCodes(page);
    assert.equal(codes.length, 10, page);
    for (const code of codes) assert.match(code, SHAPE);
    assert.equal(new Set(codes).size, 10, 'all different');
    assert.match(page, /shown only this once/);

    const again = await browser.fetch('/account/backup-codes', { headers: ip });
    assert.deepEqual(shownCodes(again.text), [], 'not shown a second time');
    assert.equal(codesLeft(again.text), 10);
    const accountPage = await browser.fetch('/account', { headers: ip });
    assert.deepEqual(shownCodes(accountPage.text), [], 'the account page shows none');
    assert.equal(codesLeft(accountPage.text), 10);

    const hashes = await storedHashes(account.userId);
    assert.equal(hashes.length, 10);
    const dump =
      JSON.stringify(await db().selectFrom('backup_codes').selectAll().execute()) +
      JSON.stringify(await db().selectFrom('web_sessions').selectAll().execute());
    for (const code of codes) {
      assert.ok(!dump.includes(code) && !dump.includes(code.replace('-', '')), 'no code is readable in the database');
    }
  });

  test('a backup code signs in once at the login pages, in the input `code`', async () => {
    const ip = newIp();
    const { account, browser: accountBrowser } = await signedInAccount(ip);
    const { page } = await turnOn(accountBrowser, ip);
    const [code] = shownCodes(page);
    const app = await newApp(server);

    const signIn = async (typed: string) => {
      const browser = new FormClient(server);
      const login = await startLogin(server, { client_id: app.clientId, code_challenge: pkcePair().challenge });
      const first = await browser.submitOn(
        (await browser.fetch(login, { headers: ip })).text,
        { username: account.username, password: account.password },
        /password$/,
        ip,
      );
      assert.equal(first.status, 303);
      const twoStep = await browser.fetch(login, { headers: ip });
      assert.match(twoStep.text, /backup codes/);
      const answer = await browser.submitOn(twoStep.text, { code: typed }, /two-step$/, ip);
      return { answer, next: answer.status === 303 ? await browser.fetch(login, { headers: ip }) : undefined };
    };

    // Typed in capitals, without its hyphen: still the same code.
    const used = await signIn(code!.toUpperCase().replace('-', ''));
    assert.equal(used.answer.status, 303, used.answer.text);
    assert.match(used.next!.text, /name="decision"/, 'on to consent');
    const reused = await signIn(code!);
    assert.equal(reused.answer.status, 401);
    assert.match(reused.answer.text, /not right/);

    const events = await listSecurityEvents(db(), { userId: account.userId });
    const usedEvent = events.find((e) => e.kind === 'backup_code_used');
    assert.equal(usedEvent?.details.backup_codes_left, 9);
    assert.equal(usedEvent?.clientId, app.clientId);
    const signedIn = events.find((e) => e.kind === 'sign_in_succeeded' && e.details.page === 'sign_in');
    assert.equal(signedIn?.details.two_step, 'backup_code');
    assert.equal(signedIn?.details.method, 'password');
    assert.ok(
      events.some((e) => e.kind === 'two_step_failed'),
      'the reuse is a failed code',
    );
    assert.equal(codesLeft((await accountBrowser.fetch('/account', { headers: ip })).text), 9);
  });

  test('a backup code signs in to the account page; two simultaneous uses: exactly one wins', async () => {
    const ip = newIp();
    const { account, browser } = await signedInAccount(ip);
    const { page } = await turnOn(browser, ip);
    const [, code] = shownCodes(page);
    const [a, b] = await Promise.all([atAccountTwoStep(account, ip), atAccountTwoStep(account, ip)]);
    const answers = await Promise.all([
      a.browser.submitOn(a.page, { code: code! }, undefined, ip),
      b.browser.submitOn(b.page, { code: code! }, undefined, ip),
    ]);
    assert.deepEqual(answers.map((r) => r.status).sort(), [303, 401]);
    const winner = answers[0]!.status === 303 ? a : b;
    assert.equal(answers.find((r) => r.status === 303)!.location, '/account');
    const account2 = await winner.browser.fetch('/account', { headers: ip });
    assert.equal(account2.status, 200);
    assert.equal(codesLeft(account2.text), 9);
    assert.equal((await storedHashes(account.userId)).length, 9);
  });

  test('wrong backup codes count against the code limits', async () => {
    const ip = newIp();
    const { account, browser } = await signedInAccount(ip);
    const { page } = await turnOn(browser, ip);
    const [code] = shownCodes(page);
    const other = newIp();
    const pending = await atAccountTwoStep(account, other);
    let current = pending.page;
    for (let i = 0; i < CODE_FAILURES_ALLOWED; i++) {
      const wrong = await pending.browser.submitOn(
        current,
        { code: `zzzz-zz${String(i).padStart(2, '0')}` },
        undefined,
        other,
      );
      assert.equal(wrong.status, 401, `wrong backup code ${i + 1}`);
      current = wrong.text;
    }
    const refused = await pending.browser.submitOn(current, { code: code! }, undefined, other);
    assert.equal(refused.status, 429, 'a right backup code past the limit is refused unchecked');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    assert.match(refused.text, /Too many wrong codes/);
    assert.equal((await storedHashes(account.userId)).length, 10, 'and not used up');
    // The account's limit ended the pending sign-in: the password is asked again.
    assert.match(refused.text, /name="password"/);
  });

  test('a new set needs a current code and ends the old set; turning two-step off removes them', async () => {
    const ip = newIp();
    const { account, browser } = await signedInAccount(ip);
    const { page, secret, accountPage } = await turnOn(browser, ip);
    const first = shownCodes(page);

    const wrong = await browser.submitOn(accountPage, { code: '000000', backup_codes: 'new' }, /backup-codes$/, ip);
    assert.equal(wrong.status, 401);
    assert.match(wrong.text, /code is not right/);
    assert.deepEqual(shownCodes(wrong.text), []);
    assert.equal((await storedHashes(account.userId)).length, 10, 'the old set stays');

    const renewed = await browser.submitOn(
      wrong.text,
      { code: totpCode(secret, Date.now() + STEP), backup_codes: 'new' },
      /backup-codes$/,
      ip,
    );
    assert.equal(renewed.status, 303, renewed.text);
    const next = await browser.fetch(renewed.location!, { headers: ip });
    assert.match(next.text, /new set of backup codes/);
    const second = shownCodes(next.text);
    assert.equal(second.length, 10);
    assert.equal(second.filter((c) => first.includes(c)).length, 0, 'a different set');
    assert.ok(
      (await listSecurityEvents(db(), { userId: account.userId })).some((e) => e.kind === 'backup_codes_renewed'),
    );

    // An old code no longer signs in; a new one does.
    const pending = await atAccountTwoStep(account, ip);
    const old = await pending.browser.submitOn(pending.page, { code: first[0]! }, undefined, ip);
    assert.equal(old.status, 401);
    const fresh = await pending.browser.submitOn(old.text, { code: second[0]! }, undefined, ip);
    assert.equal(fresh.status, 303);

    // A button other than `new`, or sent twice, changes nothing.
    const before = await storedHashes(account.userId);
    const odd = await browser.fetch('/account', { headers: ip });
    assert.equal(
      (
        await browser.submitOn(
          odd.text,
          { code: totpCode(secret, Date.now() + 2 * STEP), backup_codes: 'old' },
          /backup-codes$/,
          ip,
        )
      ).status,
      303,
    );
    assert.deepEqual((await storedHashes(account.userId)).sort(), before.sort());

    // Two-step off (with a backup code, which works wherever a code is asked) removes them all.
    const onPage = await browser.fetch('/account', { headers: ip });
    const off = await browser.submitOn(onPage.text, { code: second[1]!, two_step: 'off' }, /two-step$/, ip);
    assert.equal(off.status, 303, off.text);
    assert.equal((await findAccount(db(), account.userId))!.totpSecret, null);
    assert.deepEqual(await storedHashes(account.userId), []);
    assert.doesNotMatch((await browser.fetch('/account', { headers: ip })).text, /backup-codes-left/);
  });

  test('two new sets asked for at once: one set remains, not both', async () => {
    const ip = newIp();
    const { account, browser } = await signedInAccount(ip);
    const { page, secret, accountPage } = await turnOn(browser, ip);
    const [code] = shownCodes(page);
    // Two forms without a submit token (as an outside client posts them): each one acts.
    const answers = await Promise.all([
      browser.submitOn(accountPage, { code: code!, backup_codes: 'new' }, /backup-codes$/, ip),
      browser.submitOn(
        accountPage,
        { code: totpCode(secret, Date.now() + STEP), backup_codes: 'new' },
        /backup-codes$/,
        ip,
      ),
    ]);
    assert.deepEqual(
      answers.map((r) => r.status),
      [303, 303],
    );
    assert.equal((await storedHashes(account.userId)).length, 10);
    const shownNow = shownCodes((await browser.fetch('/account/backup-codes', { headers: ip })).text);
    assert.equal(shownNow.length, 10);
    // The set shown is the set that works.
    const pending = await atAccountTwoStep(account, newIp());
    assert.equal((await pending.browser.submitOn(pending.page, { code: shownNow[3]! }, undefined, ip)).status, 303);
  });

  test('the new-set form is CSRF-protected and needs a signed-in browser', async () => {
    const ip = newIp();
    const { browser } = await signedInAccount(ip);
    const { secret } = await turnOn(browser, ip);
    const noToken = await browser.fetch('/account/backup-codes', {
      form: { code: totpCode(secret), backup_codes: 'new' },
      headers: ip,
    });
    assert.equal(noToken.status, 403);
    const stranger = new FormClient(server);
    const page = await stranger.fetch('/account/sign-in', { headers: ip });
    const signedOut = await stranger.submitOn(
      page.text.replace('action="/account/sign-in"', 'action="/account/backup-codes"'),
      { code: totpCode(secret), backup_codes: 'new' },
      /backup-codes$/,
      ip,
    );
    assert.equal(signedOut.status, 303);
    assert.equal(signedOut.location, '/account/sign-in');
  });
});
