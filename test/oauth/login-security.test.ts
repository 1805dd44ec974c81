/**
 * The sign-in pages as an attacker meets them (docs/decisions/0054, 0055): wrong passwords,
 * the failure limits, CSRF, the security headers and the session cookie.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { FormClient, newAccount, newApp, pkcePair, REDIRECT_URI, startLogin } from '../helpers/oauth.ts';
import { freshDatabase, redisReady, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

type Page = Awaited<ReturnType<FormClient['fetch']>>;

const CSP = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "script-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
];

/** The directives of a Content-Security-Policy header, in order. */
const cspDirectives = (page: Page) =>
  (page.headers.get('content-security-policy') ?? '')
    .split(';')
    .map((directive) => directive.trim())
    .filter(Boolean);

/** A new interaction of a new app: the login page path (/login/…). */
async function loginPage(server: TestServer, params: Record<string, string> = {}) {
  const app = await newApp(server);
  return startLogin(server, { client_id: app.clientId, code_challenge: pkcePair().challenge, ...params });
}

/** The Set-Cookie line of `name` in a response, as attribute map (lowercase names). */
function setCookie(page: Page, name: string) {
  const line = page.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`));
  if (!line) return undefined;
  const [pair, ...attributes] = line.split(';').map((part) => part.trim());
  const value = pair!.slice(name.length + 1);
  const attrs = new Map(
    attributes.map((attribute) => {
      const [key, ...rest] = attribute.split('=');
      return [key!.toLowerCase(), rest.join('=')] as const;
    }),
  );
  return { value, attrs, line };
}

const isSignInForm = (html: string) => /name="username"/.test(html) && /name="password"/.test(html);
const isConsent = (html: string) => /name="decision" value="approve"/.test(html);

async function signIn(browser: FormClient, page: string, username: string, password: string) {
  const form = await browser.fetch(page);
  assert.equal(form.status, 200, form.text);
  return browser.submitOn(form.text, { username, password });
}

/** Submits the first form of `html` with a chosen CSRF value (or none). */
function postWithCsrf(browser: FormClient, html: string, fields: Record<string, string>, csrf: string | undefined) {
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  assert.ok(action, html);
  return browser.fetch(action, { form: { ...(csrf === undefined ? {} : { _csrf: csrf }), ...fields } });
}

const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;

describe('sign-in form', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('a wrong password re-renders the form with 401 and an error, keeps the username, and does not sign in', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const browser = new FormClient(server);
    const wrongPassword = 'not the password at all';
    const reply = await signIn(browser, page, account.username, wrongPassword);
    assert.equal(reply.status, 401, reply.text);
    assert.match(reply.text, /role="alert">Wrong username or password\.</);
    assert.ok(isSignInForm(reply.text));
    assert.match(reply.text, new RegExp(`name="username" value="${account.username}"`));
    assert.ok(!reply.text.includes(wrongPassword), 'the password is never echoed');
    assert.equal(reply.headers.get('cache-control'), 'no-store');
    assert.equal(setCookie(reply, 'sid'), undefined, 'no session cookie');
    // Still not signed in: the page asks for the password again.
    const again = await browser.fetch(page);
    assert.equal(again.status, 200);
    assert.ok(isSignInForm(again.text));
  });

  test('an unknown username gets the same answer as a wrong password', async () => {
    const page = await loginPage(server);
    const reply = await signIn(new FormClient(server), page, 'nobody-like-this', 'whatever password');
    assert.equal(reply.status, 401);
    assert.match(reply.text, /role="alert">Wrong username or password\.</);
    assert.equal(setCookie(reply, 'sid'), undefined);
  });

  test('a username or password holding a NUL byte is refused as malformed input (400), not a server error', async () => {
    const page = await loginPage(server);
    for (const username of ['nul\u0000user', 'nul\u0000user@example.com']) {
      const reply = await signIn(new FormClient(server), page, username, 'pass\u0000word');
      assert.equal(reply.status, 400, reply.text);
      assert.equal(setCookie(reply, 'sid'), undefined);
    }
  });

  test('the right password signs in (303 back to the page) and the page becomes consent', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const browser = new FormClient(server);
    const reply = await signIn(browser, page, account.username.toUpperCase(), account.password);
    assert.equal(reply.status, 303, reply.text);
    assert.equal(reply.location, page);
    const consent = await browser.fetch(page);
    assert.ok(isConsent(consent.text), consent.text);
    assert.match(consent.text, new RegExp(`Signed in as <strong>${account.username}</strong>`));
  });

  test('an expired or unknown interaction is a 404 page, for GET and POST', async () => {
    const browser = new FormClient(server);
    const page = await loginPage(server);
    const form = await browser.fetch(page);
    const unknown = `/login/${'A'.repeat(43)}`;
    const get = await browser.fetch(unknown);
    assert.equal(get.status, 404);
    assert.match(get.text, /This sign-in has expired/);
    const post = await browser.fetch(`${unknown}/password`, {
      form: { _csrf: csrfOf(form.text), username: 'x', password: 'y' },
    });
    assert.equal(post.status, 404);
    assert.equal(setCookie(post, 'sid'), undefined);
  });
});

describe('failed sign-in limits', () => {
  const PER_ACCOUNT = 10;

  describe('per account', () => {
    let server: TestServer;
    before(async () => {
      server = await startServer();
    });
    after(() => server.close());

    test(`after ${PER_ACCOUNT} wrong passwords the account is refused with 429, even with the right password; other accounts are not`, async () => {
      const account = await newAccount(server);
      const other = await newAccount(server);
      const page = await loginPage(server);
      const browser = new FormClient(server);
      for (let i = 1; i <= PER_ACCOUNT; i++) {
        // The count ignores the username's case.
        const username = i % 2 === 0 ? account.username.toUpperCase() : account.username;
        const reply = await signIn(browser, page, username, `wrong password ${i}`);
        assert.equal(reply.status, 401, `attempt ${i}: ${reply.text}`);
      }
      const refused = await signIn(browser, page, account.username, account.password);
      assert.equal(refused.status, 429, refused.text);
      assert.match(refused.text, /role="alert">Too many failed sign-ins\. Try again in 15 minute\(s\)\.</);
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(retryAfter > 14 * 60 && retryAfter <= 15 * 60, `Retry-After ${retryAfter}`);
      assert.ok(isSignInForm(refused.text));
      assert.equal(setCookie(refused, 'sid'), undefined, 'not signed in');
      const byEmail = await signIn(new FormClient(server), page, account.email, account.password);
      assert.equal(byEmail.status, 429, 'the same account by its email address is refused too');
      const otherReply = await signIn(new FormClient(server), page, other.username, other.password);
      assert.equal(otherReply.status, 303, otherReply.text);
    });
  });
});

describe('failed sign-in limit per IP', () => {
  const PER_IP = 30;
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test(`after ${PER_IP} wrong passwords from one IP, every sign-in from it is refused with 429`, async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const browser = new FormClient(server);
    const form = await browser.fetch(page);
    const csrf = csrfOf(form.text);
    const action = `${page}/password`;
    // Each attempt names another (unknown) account, so only the IP count can stop them.
    for (let i = 1; i <= PER_IP; i++) {
      const reply = await browser.fetch(action, {
        form: { _csrf: csrf, username: `guess-${i}`, password: 'guessed password' },
      });
      assert.equal(reply.status, 401, `attempt ${i}: ${reply.text}`);
    }
    const refused = await signIn(new FormClient(server), page, account.username, account.password);
    assert.equal(refused.status, 429, refused.text);
    assert.match(refused.text, /Too many failed sign-ins/);
    assert.equal(setCookie(refused, 'sid'), undefined);
  });
});

describe('wrong device codes are limited', () => {
  const MAX = 5;
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test(`after ${MAX} wrong user codes even a valid code is refused with 429`, async () => {
    const app = await newApp(server);
    const started = await server.request('POST', '/v4/device', {
      body: new URLSearchParams({
        client_id: app.clientId,
        scope: 'common',
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(started.status, 201, started.text);
    const browser = new FormClient(server);
    for (let i = 1; i <= MAX; i++) {
      const reply = await browser.submit('/device', { user_code: 'BBBB-BBBB' });
      assert.equal(reply.status, 400, `attempt ${i}: ${reply.text}`);
      assert.match(reply.text, /That code is not valid or has expired/);
    }
    const refused = await browser.submit('/device', { user_code: started.body.user_code });
    assert.equal(refused.status, 429, refused.text);
    assert.match(refused.text, /Too many wrong codes\. Try again in 1 minute\(s\)\./);
    assert.equal(refused.location, null);
    // A new browser on the same IP is refused as well.
    const fresh = await new FormClient(server).submit('/device', { user_code: started.body.user_code });
    assert.equal(fresh.status, 429);
  });
});

describe('CSRF protection', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  for (const [name, csrf] of [
    ['without a CSRF token', undefined],
    ['with a wrong CSRF token', 'not-the-token'],
  ] as const) {
    test(`a sign-in POST ${name} is a 403 page and signs nobody in`, async () => {
      const account = await newAccount(server);
      const page = await loginPage(server);
      const browser = new FormClient(server);
      const form = await browser.fetch(page);
      const reply = await postWithCsrf(
        browser,
        form.text,
        { username: account.username, password: account.password },
        csrf,
      );
      assert.equal(reply.status, 403, reply.text);
      assert.match(reply.text, /<h1>Please try again<\/h1>/);
      assert.equal(setCookie(reply, 'sid'), undefined);
      assert.ok(isSignInForm((await browser.fetch(page)).text), 'still signed out');
    });
  }

  test("a token from another browser's page is rejected", async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const attacker = new FormClient(server);
    const attackersToken = csrfOf((await attacker.fetch(page)).text);
    const victim = new FormClient(server);
    const form = await victim.fetch(page);
    const reply = await postWithCsrf(
      victim,
      form.text,
      { username: account.username, password: account.password },
      attackersToken,
    );
    assert.equal(reply.status, 403, reply.text);
    assert.equal(setCookie(reply, 'sid'), undefined);
  });

  test('a cross-site POST with no cookies at all is rejected', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const reply = await server.request('POST', `${page}/password`, {
      body: new URLSearchParams({ username: account.username, password: account.password }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
    });
    assert.equal(reply.status, 403, reply.text);
    assert.equal(
      reply.headers.getSetCookie().some((cookie) => cookie.startsWith('sid=')),
      false,
    );
  });

  test('a consent POST without the CSRF token issues no code, and the consent still works with it', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const browser = new FormClient(server);
    assert.equal((await signIn(browser, page, account.username, account.password)).status, 303);
    const consent = await browser.fetch(page);
    assert.ok(isConsent(consent.text));
    const forged = await browser.fetch(`${page}/consent`, { form: { decision: 'approve' } });
    assert.equal(forged.status, 403, forged.text);
    assert.equal(forged.location, null, 'no redirect with a code');
    const approved = await browser.submitOn(consent.text, { decision: 'approve' }, /consent$/);
    assert.equal(approved.status, 303, approved.text);
    const back = new URL(approved.location!);
    assert.equal(back.origin + back.pathname, REDIRECT_URI);
    assert.ok(back.searchParams.get('code'));
  });

  test('a device-code POST without the CSRF token is rejected', async () => {
    const browser = new FormClient(server);
    await browser.fetch('/device');
    const reply = await browser.fetch('/device', { form: { user_code: 'BBBB-BBBB' } });
    assert.equal(reply.status, 403, reply.text);
    assert.match(reply.text, /Please try again/);
  });
});

describe('security headers and cookies (https BASE_URL)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  function assertSecurityHeaders(page: Page) {
    assert.deepEqual(cspDirectives(page), CSP);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(page.headers.get('cross-origin-opener-policy'), 'same-origin');
    assert.match(page.headers.get('strict-transport-security') ?? '', /^max-age=\d+/);
    assert.equal(page.headers.get('x-powered-by'), null);
  }

  test('every page sends the CSP (frame-ancestors none), X-Frame-Options DENY and the other helmet headers', async () => {
    const browser = new FormClient(server);
    const page = await loginPage(server);
    const signin = await browser.fetch(page);
    assert.equal(signin.status, 200);
    assert.match(signin.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(signin.headers.get('cache-control'), 'no-store');
    assertSecurityHeaders(signin);
    assertSecurityHeaders(await browser.fetch('/device'));
    const expired = await browser.fetch(`/login/${'B'.repeat(43)}`);
    assert.equal(expired.status, 404);
    assertSecurityHeaders(expired);
    const forbidden = await browser.fetch(`${page}/password`, { form: { username: 'x', password: 'y' } });
    assert.equal(forbidden.status, 403);
    assertSecurityHeaders(forbidden);
    // The pages load nothing from elsewhere: the stylesheet and the scripts (show-password, passkey) are the service's own.
    assert.deepEqual(
      [...signin.text.matchAll(/<(?:link|script|img)\b[^>]*?(?:href|src)="([^"]+)"/g)].map((match) => match[1]),
      ['/assets/site.css', '/assets/page.js', '/assets/passkeys.js'],
    );
    // Its links (create an account, forgot the password) stay on the service too.
    for (const [, target] of signin.text.matchAll(/<a\b[^>]*?href="([^"]+)"/g)) assert.match(target!, /^\/(?!\/)/);
  });

  test('the session cookie is HttpOnly, SameSite=Lax, Path=/ and Secure, for 12 hours', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const browser = new FormClient(server);
    const form = await browser.fetch(page);
    const csrfCookie = setCookie(form, '_csrf');
    assert.ok(csrfCookie, 'the CSRF secret cookie is set with the form');
    assert.ok(csrfCookie.attrs.has('httponly'));
    assert.ok(csrfCookie.attrs.has('secure'));
    assert.equal(csrfCookie.attrs.get('samesite'), 'Lax');
    assert.equal(csrfCookie.attrs.get('path'), '/');

    const signedIn = await browser.submitOn(form.text, { username: account.username, password: account.password });
    assert.equal(signedIn.status, 303);
    const sid = setCookie(signedIn, 'sid');
    assert.ok(sid, 'a session cookie is set');
    assert.match(sid.value, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(sid.attrs.has('httponly'), sid.line);
    assert.ok(sid.attrs.has('secure'), sid.line);
    assert.equal(sid.attrs.get('samesite'), 'Lax');
    assert.equal(sid.attrs.get('path'), '/');
    assert.equal(sid.attrs.get('max-age'), String(12 * 60 * 60));
    assert.equal(sid.attrs.get('domain'), undefined, 'host-only');
  });

  test('signing out ("Use another account") clears the cookie and ends the session on the server', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const browser = new FormClient(server);
    const signedIn = await signIn(browser, page, account.username, account.password);
    const sid = setCookie(signedIn, 'sid')!.value;
    const consent = await browser.fetch(page);
    assert.ok(isConsent(consent.text));

    const signedOut = await browser.submitOn(consent.text, {}, /switch$/);
    assert.equal(signedOut.status, 303, signedOut.text);
    assert.equal(signedOut.location, page);
    const cleared = setCookie(signedOut, 'sid');
    assert.ok(cleared, 'the sid cookie is cleared');
    assert.equal(cleared.value, '');
    assert.equal(cleared.attrs.get('path'), '/');
    assert.ok(/1970/.test(cleared.attrs.get('expires') ?? '') || cleared.attrs.get('max-age') === '0', cleared.line);
    assert.ok(isSignInForm((await browser.fetch(page)).text), 'the page asks for a password again');

    // The old cookie value is dead on the server too (a copied cookie is no use).
    const replayed = await fetch(server.url + page, { headers: { cookie: `sid=${sid}` } });
    assert.ok(isSignInForm(await replayed.text()));
  });
});

describe('cookies with an http BASE_URL', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ env: { BASE_URL: 'http://localhost:8080' } });
  });
  after(() => server.close());

  test('cookies are not Secure and no HSTS is sent; the rest is the same', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const browser = new FormClient(server);
    const form = await browser.fetch(page);
    assert.equal(form.headers.get('strict-transport-security'), null);
    assert.deepEqual(cspDirectives(form), CSP);
    assert.equal(form.headers.get('x-frame-options'), 'DENY');
    assert.equal(setCookie(form, '_csrf')!.attrs.has('secure'), false);
    const signedIn = await browser.submitOn(form.text, { username: account.username, password: account.password });
    assert.equal(signedIn.status, 303);
    const sid = setCookie(signedIn, 'sid')!;
    assert.equal(sid.attrs.has('secure'), false, sid.line);
    assert.ok(sid.attrs.has('httponly'));
    assert.equal(sid.attrs.get('samesite'), 'Lax');
    assert.equal(sid.attrs.get('path'), '/');
  });
});

/** Statuses of replies, counted: { 401: 10, 429: 30 }. */
const tally = (replies: Array<{ status: number }>) =>
  replies.reduce<Record<number, number>>((counts, { status }) => {
    counts[status] = (counts[status] ?? 0) + 1;
    return counts;
  }, {});

/** An address of TEST-NET-3 for request number `i` (X-Forwarded-For behind TRUST_PROXY). */
const address = (i: number) => ({ 'x-forwarded-for': `203.0.113.${i % 250}` });

describe('simultaneous wrong passwords are held to the limits (counted before the check)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ env: { TRUST_PROXY: 'true' } });
  });
  after(() => server.close());

  /** `count` sign-ins at once on one page; `fields(i)` and `headers(i)` vary them. */
  async function burst(
    page: string,
    count: number,
    fields: (i: number) => Record<string, string>,
    headers: (i: number) => Record<string, string>,
  ) {
    const browser = new FormClient(server);
    const form = await browser.fetch(page);
    return Promise.all(
      Array.from({ length: count }, (_, i) => browser.submitOn(form.text, fields(i), undefined, headers(i))),
    );
  }

  test('40 wrong passwords for one account at once, from 40 addresses: 10 are checked (401), 30 refused (429)', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const replies = await burst(
      page,
      40,
      (i) => ({ username: account.username, password: `wrong password ${i}` }),
      (i) => address(i),
    );
    assert.deepEqual(tally(replies), { 401: 10, 429: 30 });
    const refused = await signIn(new FormClient(server), page, account.username, account.password);
    assert.equal(refused.status, 429, 'the limit is used up: even the right password is refused');
  });

  test('80 wrong passwords from one address at once, each for another name: 30 are checked, 50 refused', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const from = { 'x-forwarded-for': '198.51.100.80' };
    const replies = await burst(
      page,
      80,
      (i) => ({ username: `nobody-${i}`, password: 'guessed password' }),
      () => from,
    );
    assert.deepEqual(tally(replies), { 401: 30, 429: 50 });
    const browser = new FormClient(server);
    const form = await browser.fetch(page);
    assert.equal(
      (await browser.submitOn(form.text, { username: account.username, password: account.password }, undefined, from))
        .status,
      429,
    );
    assert.equal(
      (
        await browser.submitOn(
          form.text,
          { username: account.username, password: account.password },
          undefined,
          address(81),
        )
      ).status,
      303,
      'another address is not limited',
    );
  });

  test('right passwords between wrong ones never use up the limits', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const from = { 'x-forwarded-for': '198.51.100.90' };
    const attempt = async (password: string) => {
      const browser = new FormClient(server);
      const form = await browser.fetch(page);
      return (await browser.submitOn(form.text, { username: account.username, password }, undefined, from)).status;
    };
    // 9 failures with 12 successes among them, all from one address, for one account.
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push(await attempt(i % 7 < 4 ? account.password : `wrong ${i}`));
    assert.deepEqual(
      statuses,
      Array.from({ length: 21 }, (_, i) => (i % 7 < 4 ? 303 : 401)),
    );
    assert.equal(await attempt('tenth wrong password'), 401, 'the 10th failure is still checked');
    assert.equal(await attempt(account.password), 429, 'then the account is over its limit');
  });

  test('right passwords at once from one address all sign in, and none of them counts', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    const from = { 'x-forwarded-for': '198.51.100.91' };
    const replies = await burst(
      page,
      8,
      () => ({ username: account.username, password: account.password }),
      () => from,
    );
    assert.deepEqual(tally(replies), { 303: 8 });
    // And none of them counted: ten failures still answer 401.
    const failures = await burst(
      page,
      10,
      (i) => ({ username: account.username, password: `wrong ${i}` }),
      () => from,
    );
    assert.deepEqual(tally(failures), { 401: 10 });
  });
});

describe('simultaneous wrong passwords on two instances sharing Redis', () => {
  let database: TestDatabase;
  const servers: TestServer[] = [];
  before(async () => {
    database = await freshDatabase();
    const namespace = `test:${randomBytes(6).toString('hex')}:`;
    for (let i = 0; i < 2; i++)
      servers.push(
        await startServer({
          database,
          rateLimitNamespace: namespace,
          env: { REDIS_URL: 'redis://127.0.0.1:6379', TRUST_PROXY: 'true' },
        }),
      );
    await Promise.all(servers.map((server) => redisReady(server)));
  });
  after(async () => {
    for (const server of servers) await server.close();
    await database.drop();
  });

  test('40 wrong passwords for one account split over both: 10 are checked in all', async () => {
    const account = await newAccount(servers[0]!);
    const page = await loginPage(servers[0]!);
    const replies = await Promise.all(
      servers.map(async (server, n) => {
        const browser = new FormClient(server);
        const form = await browser.fetch(page);
        return Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            browser.submitOn(
              form.text,
              { username: account.username, password: `wrong ${n}-${i}` },
              undefined,
              address(n * 20 + i),
            ),
          ),
        );
      }),
    );
    assert.deepEqual(tally(replies.flat()), { 401: 10, 429: 30 });
    for (const server of servers)
      assert.equal((await signIn(new FormClient(server), page, account.username, account.password)).status, 429);
  });

  test('a right password gives its count back in Redis too', async () => {
    const account = await newAccount(servers[0]!);
    const page = await loginPage(servers[0]!);
    for (let i = 0; i < 9; i++)
      assert.equal((await signIn(new FormClient(servers[i % 2]!), page, account.username, `wrong ${i}`)).status, 401);
    for (const server of servers)
      assert.equal((await signIn(new FormClient(server), page, account.username, account.password)).status, 303);
    assert.equal((await signIn(new FormClient(servers[1]!), page, account.username, 'tenth wrong')).status, 401);
    assert.equal((await signIn(new FormClient(servers[0]!), page, account.username, account.password)).status, 429);
  });
});

describe('simultaneous wrong user codes on the device page', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ env: { TRUST_PROXY: 'true' } });
  });
  after(() => server.close());

  async function deviceCode() {
    const app = await newApp(server);
    const started = await server.request('POST', '/v4/device', {
      body: new URLSearchParams({
        client_id: app.clientId,
        scope: 'common',
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(started.status, 201, started.text);
    return started.body.user_code as string;
  }

  test('20 wrong codes at once from one browser (20 addresses): 5 are looked up, 15 refused', async () => {
    const userCode = await deviceCode();
    const browser = new FormClient(server);
    const form = await browser.fetch('/device');
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        browser.submitOn(form.text, { user_code: 'BBBB-BBBB' }, undefined, address(i)),
      ),
    );
    assert.deepEqual(tally(replies), { 400: 5, 429: 15 });
    assert.equal(
      (await browser.submitOn(form.text, { user_code: userCode }, undefined, address(21))).status,
      429,
      'the browser is over its limit',
    );
  });

  test('valid codes between wrong ones never use up the limit', async () => {
    const browser = new FormClient(server);
    const form = await browser.fetch('/device');
    const from = { 'x-forwarded-for': '198.51.100.5' };
    const submit = (userCode: string) => browser.submitOn(form.text, { user_code: userCode }, undefined, from);
    for (let i = 0; i < 4; i++) {
      assert.equal((await submit('BBBB-BBBB')).status, 400);
      assert.equal((await submit(await deviceCode())).status, 303);
    }
    assert.equal((await submit('BBBB-BBBB')).status, 400, 'the 5th wrong code is still looked up');
    assert.equal((await submit(await deviceCode())).status, 429);
  });
});

describe('consent is decided once', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  /** A browser signed in at the consent page of a new interaction. */
  async function atConsent(page?: string) {
    const account = await newAccount(server);
    const path = page ?? (await loginPage(server));
    const browser = new FormClient(server);
    assert.equal((await signIn(browser, path, account.username, account.password)).status, 303);
    const consent = await browser.fetch(path);
    assert.ok(isConsent(consent.text), consent.text);
    return { browser, consent: consent.text };
  }

  test('simultaneous approve submits issue exactly one code; the others find the sign-in ended', async () => {
    const app = await newApp(server);
    const { verifier, challenge } = pkcePair();
    const page = await startLogin(server, { client_id: app.clientId, code_challenge: challenge });
    const { browser, consent } = await atConsent(page);
    const replies = await Promise.all(
      Array.from({ length: 5 }, () => browser.submitOn(consent, { decision: 'approve' }, /consent$/)),
    );
    const issued = replies.filter((reply) => reply.status === 303);
    assert.equal(issued.length, 1, replies.map((reply) => reply.status).join(' '));
    for (const reply of replies.filter((r) => r.status !== 303)) {
      assert.equal(reply.status, 404);
      assert.match(reply.text, /This sign-in has expired/);
    }
    const codes = await server.app.database.db
      .selectFrom('authorization_codes')
      .select('code_hash')
      .where('client_id', '=', app.clientId)
      .execute();
    assert.equal(codes.length, 1, 'one code stored');
    const code = new URL(issued[0]!.location!).searchParams.get('code')!;
    const tokens = await server.request('POST', '/v4/login', {
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: app.clientId,
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(tokens.status, 200, tokens.text);
  });

  test('approve and deny at once on a device sign-in: exactly one decides it', async () => {
    const app = await newApp(server);
    const started = await server.request('POST', '/v4/device', {
      body: new URLSearchParams({
        client_id: app.clientId,
        scope: 'common',
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(started.status, 201, started.text);
    const account = await newAccount(server);
    const browser = new FormClient(server);
    const entered = await browser.submit('/device', { user_code: started.body.user_code });
    assert.equal(entered.status, 303, entered.text);
    assert.equal((await signIn(browser, entered.location!, account.username, account.password)).status, 303);
    const consent = await browser.fetch(entered.location!);
    assert.ok(isConsent(consent.text), consent.text);
    const replies = await Promise.all(
      ['approve', 'deny', 'approve', 'deny'].map((decision) =>
        browser.submitOn(consent.text, { decision }, /consent$/),
      ),
    );
    const decided = replies.filter((reply) => reply.status === 200);
    assert.equal(decided.length, 1, replies.map((reply) => reply.status).join(' '));
    assert.deepEqual(
      replies.filter((reply) => reply.status !== 200).map((reply) => reply.status),
      [404, 404, 404],
    );
    const row = await server.app.database.db
      .selectFrom('device_authorizations')
      .select(['status', 'user_id'])
      .where('device_code', '=', started.body.device_code)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, /Device connected/.test(decided[0]!.text) ? 'approved' : 'denied');
  });
});

describe('wrong passwords while Redis does not answer', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ env: { REDIS_URL: 'redis://127.0.0.1:1' } });
  });
  after(() => server.close());

  test('are still limited, by this instance alone, and answered promptly', async () => {
    const account = await newAccount(server);
    const page = await loginPage(server);
    for (let i = 1; i <= 10; i++) {
      const startedAt = Date.now();
      assert.equal((await signIn(new FormClient(server), page, account.username, `wrong ${i}`)).status, 401);
      assert.ok(Date.now() - startedAt < 3_000, `attempt ${i} took ${Date.now() - startedAt} ms`);
    }
    assert.equal((await signIn(new FormClient(server), page, account.username, account.password)).status, 429);
  });
});
