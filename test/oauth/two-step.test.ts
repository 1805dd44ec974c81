/**
 * Two-step verification (DESIGN "v4 login"): the TOTP module against RFC 6238's test vectors,
 * and the login pages: code after the password, wrong codes, trusted devices.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isBase32Secret, newTotpSecret, totpCode, totpUri, verifyTotp } from '../../src/accounts/totp.ts';
import { FormClient, REDIRECT_URI, newAccount, newApp, pkcePair, startLogin, tokenRequest } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

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
  const near = new Set([-2, -1, 0, 1, 2].map((step) => totpCode(secret, Date.now() + step * STEP_MS)));
  for (let candidate = 0; ; candidate++) {
    const code = String(candidate).padStart(6, '0');
    if (!near.has(code)) return code;
  }
}

/** The sid cookie a response sets (undefined when none). */
function sidOf(page: { headers: Headers }) {
  const line = page.headers.getSetCookie().find((cookie) => cookie.startsWith('sid='));
  return line === undefined ? undefined : { value: line.split(';')[0]!.slice(4), maxAge: /max-age=(\d+)/i.exec(line)?.[1] };
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
    const page = await startLogin(server, { client_id: app.clientId, code_challenge: challenge, scope: 'common users:read', ...(deviceId ? { device_id: deviceId } : {}) });
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
    const tokens = await tokenRequest(server, { grant_type: 'authorization_code', client_id: app.clientId, code: back.searchParams.get('code')!, redirect_uri: REDIRECT_URI, code_verifier: verifier });
    assert.equal(tokens.status, 200, tokens.text);
    const me = await server.request('GET', '/v4/user', { headers: { authorization: `Bearer ${tokens.body.access_token}` } });
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
    const trusted = await first.browser.submitOn(first.next.text, { code: totpCode(account.secret), trust_device: 'yes' });
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

describe('wrong two-step codes are limited per IP', () => {
  const MAX = 10;
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test(`after ${MAX} wrong codes even the right code is refused with 429`, async () => {
    const app = await newApp(server);
    const secret = newTotpSecret();
    const account = await newAccount(server, { totpSecret: secret });
    const page = await startLogin(server, { client_id: app.clientId, code_challenge: pkcePair().challenge });
    const browser = new FormClient(server);
    assert.equal((await browser.submit(page, { username: account.username, password: account.password })).status, 303);
    let html = (await browser.fetch(page)).text;
    for (let i = 1; i <= MAX; i++) {
      const reply = await browser.submitOn(html, { code: wrongCode(secret) });
      assert.equal(reply.status, 401, `attempt ${i}: ${reply.text}`);
      html = reply.text;
    }
    const refused = await browser.submitOn(html, { code: totpCode(secret) });
    assert.equal(refused.status, 429, refused.text);
    assert.match(refused.text, /Too many wrong codes\. Try again in 15 minute\(s\)\./);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter > 14 * 60 && retryAfter <= 15 * 60, `Retry-After ${retryAfter}`);
    assert.match((await browser.fetch(page)).text, CODE_FORM, 'not signed in');
  });
});
