/**
 * Two-step verification (DESIGN "v4 login"): the TOTP module against RFC 6238's test vectors,
 * and the login pages: code after the password, wrong codes, trusted devices.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setPassword, setTotpSecret } from '../../src/accounts/accounts.ts';
import { isBase32Secret, newTotpSecret, totpCode, totpUri, verifyTotp } from '../../src/accounts/totp.ts';
import { FormClient, newAccount, newApp, pkcePair, REDIRECT_URI, startLogin, tokenRequest } from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';
import { awayFromStepEdge } from '../helpers/totp.ts';

/** RFC 6238 appendix B's SHA-1 seed, the ASCII bytes of "12345678901234567890", in base32. */
const RFC_SECRET = Buffer.from('12345678901234567890', 'ascii');
const RFC_SECRET_BASE32 = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
const STEP_MS = 30_000;

/** RFC 6238 appendix B, SHA-1 column, as 6-digit codes (the last 6 digits of the 8-digit values). */
const VECTORS: Array<[seconds: number, code: string]> = [
  [59, '287082'],
  [1111111109, '081804'],
  [1111111111, '050471'],
  [1234567890, '005924'],
  [2000000000, '279037'],
  [20000000000, '353130'],
];

function base32(bytes: Buffer): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const byte of bytes) bits += byte.toString(2).padStart(8, '0');
  let out = '';
  for (let i = 0; i < bits.length; i += 5) out += alphabet[parseInt(bits.slice(i, i + 5).padEnd(5, '0'), 2)];
  return out;
}

describe('TOTP module (RFC 6238, SHA-1, 6 digits, 30 s)', () => {
  test('the RFC seed in base32 is the one used here', () => {
    assert.equal(base32(RFC_SECRET), RFC_SECRET_BASE32);
    assert.ok(isBase32Secret(RFC_SECRET_BASE32));
  });

  for (const [seconds, code] of VECTORS) {
    test(`t=${seconds}: the code is ${code} and it is accepted at that time`, () => {
      assert.equal(totpCode(RFC_SECRET_BASE32, seconds * 1000), code);
      assert.equal(verifyTotp(RFC_SECRET_BASE32, code, seconds * 1000), true);
    });
  }

  test('one step either side is accepted, two steps are not', () => {
    for (const [seconds, code] of VECTORS) {
      const at = seconds * 1000;
      assert.equal(verifyTotp(RFC_SECRET_BASE32, code, at - STEP_MS), true, `t=${seconds} one step early`);
      assert.equal(verifyTotp(RFC_SECRET_BASE32, code, at + STEP_MS), true, `t=${seconds} one step late`);
      assert.equal(verifyTotp(RFC_SECRET_BASE32, code, at - 2 * STEP_MS), false, `t=${seconds} two steps early`);
      assert.equal(verifyTotp(RFC_SECRET_BASE32, code, at + 2 * STEP_MS), false, `t=${seconds} two steps late`);
    }
    // 1111111109 and 1111111111 are neighbouring steps: each code is good at the other's time.
    assert.equal(verifyTotp(RFC_SECRET_BASE32, '050471', 1111111109_000), true);
    assert.equal(verifyTotp(RFC_SECRET_BASE32, '081804', 1111111111_000), true);
  });

  test('malformed codes are refused; spaces inside are ignored', () => {
    const at = 59_000;
    assert.equal(verifyTotp(RFC_SECRET_BASE32, '287 082', at), true);
    assert.equal(verifyTotp(RFC_SECRET_BASE32, ' 287082 ', at), true);
    for (const bad of ['', '28708', '2870820', '28708a', '-87082', '287082\u0661', '94287082']) {
      assert.equal(verifyTotp(RFC_SECRET_BASE32, bad, at), false, JSON.stringify(bad));
    }
    assert.equal(verifyTotp(RFC_SECRET_BASE32, '287083', at), false);
  });

  test('new secrets are 160-bit base32 and the otpauth URI names SHA1, 6 digits, 30 s', () => {
    const secret = newTotpSecret();
    assert.match(secret, /^[A-Z2-7]{32}$/);
    assert.notEqual(newTotpSecret(), secret);
    const uri = new URL(totpUri(RFC_SECRET_BASE32, 'alice'));
    assert.equal(uri.protocol, 'otpauth:');
    assert.equal(uri.host, 'totp');
    assert.equal(uri.searchParams.get('secret'), RFC_SECRET_BASE32);
    assert.equal(uri.searchParams.get('algorithm'), 'SHA1');
    assert.equal(uri.searchParams.get('digits'), '6');
    assert.equal(uri.searchParams.get('period'), '30');
  });
});

const CODE_FORM = /name="code"/;
const CONSENT = /name="decision" value="approve"/;
const TRUST_BOX = /name="trust_device"/;

/** A well-formed code that is not valid now, a step either side, or a step beyond. */
function wrongCode(secret: string): string {
  return wrongCodes(secret, 1)[0]!;
}

/** `count` different well-formed codes, none valid now, a step either side, or a step beyond. */
function wrongCodes(secret: string, count: number): string[] {
  const near = new Set([-2, -1, 0, 1, 2].map((step) => totpCode(secret, Date.now() + step * STEP_MS)));
  const codes: string[] = [];
  for (let candidate = 0; codes.length < count; candidate++) {
    const code = String(candidate).padStart(6, '0');
    if (!near.has(code)) codes.push(code);
  }
  return codes;
}

/** Statuses of replies, counted: { 401: 10, 429: 5 }. */
const tally = (replies: Array<{ status: number }>) =>
  replies.reduce<Record<number, number>>((counts, { status }) => {
    counts[status] = (counts[status] ?? 0) + 1;
    return counts;
  }, {});

/** Runs the admin CLI against `databaseUrl`. */
function admin(databaseUrl: string, ...args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'node_modules/.bin/tsx',
      ['src/cli/admin.ts', ...args],
      { env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: 60_000 },
      (error, _stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stderr }),
    );
  });
}

/** The sid cookie a response sets (undefined when none). */
function sidOf(page: { headers: Headers }) {
  const line = page.headers.getSetCookie().find((cookie) => cookie.startsWith('sid='));
  return line === undefined
    ? undefined
    : { value: line.split(';')[0]!.slice(4), maxAge: /max-age=(\d+)/i.exec(line)?.[1] };
}

describe('two-step verification on the login pages', () => {
  let server: TestServer;
  let app: Awaited<ReturnType<typeof newApp>>;
  before(async () => {
    server = await startServer();
    app = await newApp(server);
  });
  after(() => server.close());

  const twoStepAccount = async () => {
    const secret = newTotpSecret();
    return { ...(await newAccount(server, { totpSecret: secret })), secret };
  };

  /** A fresh browser signs in with the password; answers the page after it and the browser. */
  async function afterPassword(account: { username: string; password: string }, deviceId?: string) {
    const { verifier, challenge } = pkcePair();
    const page = await startLogin(server, {
      client_id: app.clientId,
      code_challenge: challenge,
      scope: 'common users:read',
      ...(deviceId ? { device_id: deviceId } : {}),
    });
    const browser = new FormClient(server);
    const signedIn = await browser.submit(page, { username: account.username, password: account.password });
    assert.equal(signedIn.status, 303, signedIn.text);
    const next = await browser.fetch(page);
    assert.equal(next.status, 200, next.text);
    return { browser, page, next, signedIn, verifier };
  }

  test('an account with a TOTP secret is asked for a code after the password, not for consent', async () => {
    const account = await twoStepAccount();
    const { browser, page, next, signedIn } = await afterPassword(account);
    assert.match(next.text, CODE_FORM);
    assert.doesNotMatch(next.text, CONSENT);
    assert.doesNotMatch(next.text, TRUST_BOX, 'no device_id: nothing to trust');
    // The half-signed-in browser session is short-lived (10 minutes).
    assert.equal(sidOf(signedIn)?.maxAge, '600');
    // Consent cannot be skipped to: it sends the browser back to the code page, without a code.
    const csrf = /name="_csrf" value="([^"]+)"/.exec(next.text)![1]!;
    const skipped = await browser.fetch(`${page}/consent`, { form: { _csrf: csrf, decision: 'approve' } });
    assert.equal(skipped.status, 303);
    assert.equal(skipped.location, page);
    assert.match((await browser.fetch(page)).text, CODE_FORM);
  });

  test('an account without a TOTP secret goes straight to consent', async () => {
    const account = await newAccount(server);
    const { next } = await afterPassword(account);
    assert.match(next.text, CONSENT);
  });

  test('a wrong code is refused with 401 and the code page again; the right one goes on to consent and a working token', async () => {
    const account = await twoStepAccount();
    const { browser, page, next, signedIn, verifier } = await afterPassword(account);
    const refused = await browser.submitOn(next.text, { code: wrongCode(account.secret) });
    assert.equal(refused.status, 401, refused.text);
    assert.match(refused.text, /role="alert">That code is not right/);
    assert.match(refused.text, CODE_FORM);
    assert.match((await browser.fetch(page)).text, CODE_FORM, 'still waiting for the code');

    const accepted = await browser.submitOn(refused.text, { code: totpCode(account.secret) });
    assert.equal(accepted.status, 303, accepted.text);
    assert.equal(accepted.location, page);
    // A new session token replaces the half-signed-in one.
    const full = sidOf(accepted);
    assert.ok(full);
    assert.notEqual(full.value, sidOf(signedIn)!.value);
    assert.equal(full.maxAge, String(12 * 60 * 60));

    const consent = await browser.fetch(page);
    assert.match(consent.text, CONSENT);
    const approved = await browser.submitOn(consent.text, { decision: 'approve' }, /consent$/);
    assert.equal(approved.status, 303, approved.text);
    const back = new URL(approved.location!);
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      code: back.searchParams.get('code')!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    assert.equal(tokens.status, 200, tokens.text);
    const me = await server.request('GET', '/v4/user', {
      headers: { authorization: `Bearer ${tokens.body.access_token}` },
    });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.userId, account.userId);
  });

  test('a code of another account is refused', async () => {
    const account = await twoStepAccount();
    const other = await twoStepAccount();
    const { browser, next } = await afterPassword(account);
    const refused = await browser.submitOn(next.text, { code: totpCode(other.secret) });
    assert.equal(refused.status, 401, refused.text);
  });

  test('a device trusted at a two-step login skips the code for that user on that device only', async () => {
    const account = await twoStepAccount();
    const other = await twoStepAccount();
    const device = `device-${Date.now()}-a`;

    const first = await afterPassword(account, device);
    assert.match(first.next.text, CODE_FORM);
    assert.match(first.next.text, TRUST_BOX, 'with a device_id the page offers to trust it');
    const trusted = await first.browser.submitOn(first.next.text, {
      code: totpCode(account.secret),
      trust_device: 'yes',
    });
    assert.equal(trusted.status, 303, trusted.text);
    assert.match((await first.browser.fetch(first.page)).text, CONSENT);

    // Later, a new browser (no web session) on the same device: password, then straight to consent.
    const later = await afterPassword(account, device);
    assert.match(later.next.text, CONSENT, 'the trusted device skips the code');
    assert.doesNotMatch(later.next.text, CODE_FORM);
    assert.equal(sidOf(later.signedIn)?.maxAge, String(12 * 60 * 60));

    // Another device of the same user, no device at all, and another user on the trusted device: asked.
    assert.match((await afterPassword(account, `device-${Date.now()}-b`)).next.text, CODE_FORM);
    assert.match((await afterPassword(account)).next.text, CODE_FORM);
    assert.match((await afterPassword(other, device)).next.text, CODE_FORM);
  });

  test('without "trust this device" the device is not remembered', async () => {
    const account = await twoStepAccount();
    const device = `device-${Date.now()}-c`;
    const first = await afterPassword(account, device);
    const verified = await first.browser.submitOn(first.next.text, { code: totpCode(account.secret) });
    assert.equal(verified.status, 303, verified.text);
    assert.match((await afterPassword(account, device)).next.text, CODE_FORM);
  });
});

describe('wrong two-step codes are limited per account and per IP', () => {
  const MAX = 10;
  let server: TestServer;
  let app: Awaited<ReturnType<typeof newApp>>;
  before(async () => {
    server = await startServer({ env: { TRUST_PROXY: 'true' } });
    app = await newApp(server);
  });
  after(() => server.close());

  const twoStepAccount = async () => {
    const secret = newTotpSecret();
    return { ...(await newAccount(server, { totpSecret: secret })), secret };
  };

  /** A new browser signed in with the password from `from`, at the code page. */
  async function pending(account: { username: string; password: string }, from: Record<string, string>) {
    const page = await startLogin(server, { client_id: app.clientId, code_challenge: pkcePair().challenge });
    const browser = new FormClient(server);
    const form = await browser.fetch(page);
    const signedIn = await browser.submitOn(
      form.text,
      { username: account.username, password: account.password },
      undefined,
      from,
    );
    assert.equal(signedIn.status, 303, signedIn.text);
    const codePage = await browser.fetch(page);
    assert.match(codePage.text, CODE_FORM);
    return { browser, page, html: codePage.text };
  }

  const pendingSignIns = (userId: string) =>
    server.app.database.db
      .selectFrom('web_sessions')
      .select('session_hash')
      .where('user_id', '=', userId)
      .where('mfa_pending', '=', 1)
      .execute();

  test(`after ${MAX} wrong codes even the right code is refused with 429, and the pending sign-in ends`, async () => {
    const account = await twoStepAccount();
    const from = { 'x-forwarded-for': '198.51.100.1' };
    const { browser, page, html } = await pending(account, from);
    let current = html;
    for (let i = 1; i <= MAX; i++) {
      const reply = await browser.submitOn(current, { code: wrongCode(account.secret) }, undefined, from);
      assert.equal(reply.status, 401, `attempt ${i}: ${reply.text}`);
      current = reply.text;
    }
    const refused = await browser.submitOn(current, { code: totpCode(account.secret) }, undefined, from);
    assert.equal(refused.status, 429, refused.text);
    assert.match(refused.text, /Too many wrong codes\. Sign in again in 15 minute\(s\)\./);
    assert.match(refused.text, /name="password"/, 'the sign-in form: the pending sign-in has ended');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter > 14 * 60 && retryAfter <= 15 * 60, `Retry-After ${retryAfter}`);
    assert.match((await browser.fetch(page)).text, /name="password"/, 'not signed in, not waiting for a code');
    assert.deepEqual(await pendingSignIns(account.userId), []);
  });

  test('100 wrong codes from 12 addresses are held to the account limit: 10 are checked, the pending sign-in ends, and the right code then signs nobody in', async () => {
    const account = await twoStepAccount();
    const { browser, page, html } = await pending(account, { 'x-forwarded-for': '198.51.100.2' });
    const codes = wrongCodes(account.secret, 100);
    const replies: Array<{ status: number }> = [];
    // Four bursts of 25 simultaneous codes, the addresses taking turns.
    for (let batch = 0; batch < 4; batch++) {
      replies.push(
        ...(await Promise.all(
          codes
            .slice(batch * 25, batch * 25 + 25)
            .map((code, i) =>
              browser.submitOn(html, { code }, undefined, { 'x-forwarded-for': `203.0.113.${(batch * 25 + i) % 12}` }),
            ),
        )),
      );
    }
    const statuses = tally(replies);
    assert.equal(statuses[401], MAX, JSON.stringify(statuses));
    assert.equal((statuses[429] ?? 0) + (statuses[303] ?? 0) + MAX, 100, JSON.stringify(statuses));
    assert.ok((statuses[429] ?? 0) >= 1, 'an attempt past the limit is refused');
    assert.deepEqual(await pendingSignIns(account.userId), [], 'the pending sign-in has ended');

    // The right code now, from a 13th address: the browser is no longer waiting for a code.
    const late = await browser.submitOn(html, { code: totpCode(account.secret) }, undefined, {
      'x-forwarded-for': '203.0.113.99',
    });
    assert.equal(late.status, 303, 'no sign-in waits for a code: back to the page');
    assert.equal(late.location, page);
    assert.match((await browser.fetch(page)).text, /name="password"/, 'signed out');
    // Signing in with the password again does not reopen the code: the account is over its limit.
    const again = await pending(account, { 'x-forwarded-for': '203.0.113.100' });
    const refused = await again.browser.submitOn(again.html, { code: totpCode(account.secret) }, undefined, {
      'x-forwarded-for': '203.0.113.101',
    });
    assert.equal(refused.status, 429, refused.text);
    assert.match((await again.browser.fetch(again.page)).text, /name="password"/);
  });

  test(`an address past ${MAX} wrong codes is refused for every account, without ending their sign-ins`, async () => {
    const first = await twoStepAccount();
    const second = await twoStepAccount();
    const from = { 'x-forwarded-for': '198.51.100.3' };
    const a = await pending(first, from);
    const b = await pending(second, from);
    for (let i = 0; i < MAX / 2; i++) {
      assert.equal((await a.browser.submitOn(a.html, { code: wrongCode(first.secret) }, undefined, from)).status, 401);
      assert.equal((await b.browser.submitOn(b.html, { code: wrongCode(second.secret) }, undefined, from)).status, 401);
    }
    const refused = await b.browser.submitOn(b.html, { code: totpCode(second.secret) }, undefined, from);
    assert.equal(refused.status, 429, refused.text);
    assert.match(refused.text, /Too many wrong codes\. Try again in 15 minute\(s\)\./);
    assert.match(refused.text, CODE_FORM, 'still waiting for the code');
    // From another address the same browser's right code goes through.
    const accepted = await b.browser.submitOn(b.html, { code: totpCode(second.secret) }, undefined, {
      'x-forwarded-for': '198.51.100.4',
    });
    assert.equal(accepted.status, 303, accepted.text);
    assert.match((await b.browser.fetch(b.page)).text, CONSENT);
  });

  test('right codes never use up the limit: 9 wrong, 1 right, then the 10th wrong is still checked', async () => {
    await awayFromStepEdge();
    const account = await twoStepAccount();
    const from = { 'x-forwarded-for': '198.51.100.5' };
    const first = await pending(account, from);
    for (let i = 0; i < MAX - 1; i++)
      assert.equal(
        (await first.browser.submitOn(first.html, { code: wrongCode(account.secret) }, undefined, from)).status,
        401,
      );
    assert.equal(
      (await first.browser.submitOn(first.html, { code: totpCode(account.secret) }, undefined, from)).status,
      303,
    );
    const second = await pending(account, from);
    assert.equal(
      (await second.browser.submitOn(second.html, { code: wrongCode(account.secret) }, undefined, from)).status,
      401,
    );
    assert.equal(
      (await second.browser.submitOn(second.html, { code: wrongCode(account.secret) }, undefined, from)).status,
      429,
    );
  });
});

describe('a two-step code is accepted once (RFC 6238 §5.2)', () => {
  let server: TestServer;
  let app: Awaited<ReturnType<typeof newApp>>;
  before(async () => {
    server = await startServer();
    app = await newApp(server);
  });
  after(() => server.close());

  async function pending(account: { username: string; password: string }) {
    const page = await startLogin(server, { client_id: app.clientId, code_challenge: pkcePair().challenge });
    const browser = new FormClient(server);
    assert.equal((await browser.submit(page, { username: account.username, password: account.password })).status, 303);
    const html = (await browser.fetch(page)).text;
    assert.match(html, CODE_FORM);
    return { browser, html, submit: (code: string) => browser.submitOn(html, { code }) };
  }

  test('a code used once is refused in another sign-in; only a later step is accepted', async () => {
    await awayFromStepEdge();
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const now = Date.now();
    const [previous, current, next] = [-1, 0, 1].map((step) => totpCode(secret, now + step * STEP_MS)) as [
      string,
      string,
      string,
    ];

    assert.equal((await (await pending(account)).submit(current)).status, 303, 'the current code signs in');
    const replay = await (await pending(account)).submit(current);
    assert.equal(replay.status, 401, replay.text);
    assert.match(replay.text, /That code was used already/);
    const second = await pending(account);
    assert.equal((await second.submit(previous)).status, 401, 'an earlier step than the last accepted one is refused');
    assert.equal((await second.submit(next)).status, 303, 'the next step is accepted');
    assert.equal((await (await pending(account)).submit(next)).status, 401, 'and then used up too');
  });

  test('two sign-ins submitting the same code at once: exactly one is accepted', async () => {
    await awayFromStepEdge();
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const browsers = await Promise.all(Array.from({ length: 6 }, () => pending(account)));
    const code = totpCode(secret);
    const replies = await Promise.all(browsers.map((browser) => browser.submit(code)));
    assert.deepEqual(tally(replies), { 303: 1, 401: 5 });
  });
});

describe('trusted devices end', () => {
  let database: TestDatabase;
  let server: TestServer;
  let app: Awaited<ReturnType<typeof newApp>>;
  before(async () => {
    database = await freshDatabase();
    server = await startServer({ database });
    app = await newApp(server);
  });
  after(async () => {
    await server.close();
    await database.drop();
  });

  /** A two-step account that trusted `device` at a sign-in. */
  async function trustedAccount(device: string) {
    const secret = newTotpSecret();
    const account = { ...(await newAccount(server, { totpSecret: secret })), secret };
    const first = await afterPassword(account, device);
    assert.match(first.next.text, CODE_FORM);
    assert.equal(
      (await first.browser.submitOn(first.next.text, { code: totpCode(secret), trust_device: 'yes' })).status,
      303,
    );
    assert.match((await afterPassword(account, device)).next.text, CONSENT, 'trusted: no code asked');
    return account;
  }

  async function afterPassword(account: { username: string; password: string }, deviceId: string) {
    const page = await startLogin(server, {
      client_id: app.clientId,
      code_challenge: pkcePair().challenge,
      device_id: deviceId,
    });
    const browser = new FormClient(server);
    const signedIn = await browser.submit(page, { username: account.username, password: account.password });
    assert.equal(signedIn.status, 303, signedIn.text);
    return { browser, next: await browser.fetch(page) };
  }

  /** Moves the trust of the user's devices `ageMs` into the past. */
  const ageTrust = (userId: string, ageMs: number) =>
    server.app.database.db
      .updateTable('trusted_devices')
      .set({ created_at: Date.now() - ageMs })
      .where('user_id', '=', userId)
      .execute();

  const DAY_MS = 24 * 60 * 60 * 1000;

  test('after 30 days', async () => {
    const device = `device-${randomBytes(6).toString('hex')}`;
    const account = await trustedAccount(device);
    await ageTrust(account.userId, 29 * DAY_MS);
    assert.match((await afterPassword(account, device)).next.text, CONSENT, 'still trusted on day 29');
    await ageTrust(account.userId, 30 * DAY_MS + 60_000);
    assert.match((await afterPassword(account, device)).next.text, CODE_FORM, 'asked for the code again after 30 days');
  });

  test('when the password changes (admin user set-password), for that user only', async () => {
    const device = `device-${randomBytes(6).toString('hex')}`;
    const account = await trustedAccount(device);
    const other = await trustedAccount(device);
    const run = await admin(
      database.url,
      'user',
      'set-password',
      account.username,
      '--password',
      'a new password here',
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match((await afterPassword({ ...account, password: 'a new password here' }, device)).next.text, CODE_FORM);
    assert.match((await afterPassword(other, device)).next.text, CONSENT, "another user's trust stays");
  });

  test('when the two-step secret changes (admin user totp), or through the service', async () => {
    const device = `device-${randomBytes(6).toString('hex')}`;
    const byCli = await trustedAccount(device);
    const run = await admin(database.url, 'user', 'totp', byCli.username, '--secret', newTotpSecret());
    assert.equal(run.code, 0, run.stderr);
    assert.match((await afterPassword(byCli, device)).next.text, CODE_FORM);

    const byService = await trustedAccount(device);
    assert.equal(await setTotpSecret(server.app.database.db, byService.userId, newTotpSecret()), true);
    assert.match((await afterPassword(byService, device)).next.text, CODE_FORM);
    const byPassword = await trustedAccount(device);
    assert.equal(await setPassword(server.app.database.db, byPassword.userId, 'another new password'), true);
    assert.match(
      (await afterPassword({ ...byPassword, password: 'another new password' }, device)).next.text,
      CODE_FORM,
    );
  });
});
