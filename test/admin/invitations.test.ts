/**
 * Invitations (DESIGN "Operating a public service", SIGN_UP=invite): an operator invites an
 * address from /admin/invitations; a real SMTP server carries the single-use link, which goes
 * straight to a username and a password; pending invitations are listed and revoked; used,
 * revoked, expired and unknown links say so; without an invitation the sign-up is 404.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { makeOperator } from '../../src/accounts/lifecycle.ts';
import { totpCode } from '../../src/accounts/totp.ts';
import { type Mailbox, startMailbox } from '../helpers/mail.ts';
import { FormClient, newAccount } from '../helpers/oauth.ts';
import { freshDatabase, startServer, type TestDatabase, type TestServer } from '../helpers/server.ts';

const SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
const PASSWORD = 'a long invited passphrase 42';

describe('invitations and SIGN_UP=invite', () => {
  let database: TestDatabase;
  let server: TestServer;
  let mailbox: Mailbox;
  let operator: FormClient;
  let operatorId: string;
  let serial = 0;
  before(async () => {
    mailbox = await startMailbox();
    database = await freshDatabase();
    server = await startServer({ database, env: { SIGN_UP: 'invite', SMTP_URL: mailbox.url } });
    const account = await newAccount(server, { totpSecret: SECRET });
    operatorId = account.userId;
    await makeOperator(
      {
        db: server.app.database.db,
        applicationSessions: server.app.applicationSessions,
        erasers: server.app.accountErasers,
        via: 'cli',
        actorId: null,
      },
      account.userId,
    );
    operator = new FormClient(server);
    const first = await operator.submit('/account/sign-in', { username: account.username, password: account.password });
    assert.equal(first.status, 303, first.text);
    const code = await operator.submit(first.location!, { code: totpCode(SECRET, Date.now()) });
    assert.equal(code.status, 303, code.text);
  });
  after(async () => {
    await server?.close();
    await database?.drop();
    await mailbox?.close();
  });

  const db = () => server.app.database.db;
  const newAddress = () => `invited${process.pid}x${++serial}@example.org`;
  const linkIn = (text: string) => {
    const match = /https:\/\/api\.test\.example(\/account\/sign-up\?invitation=[A-Za-z0-9_-]{43})/.exec(text);
    assert.ok(match, `no invitation link in:\n${text}`);
    return match[1]!;
  };
  /** Invites `address` through the console's form; answers the link's path from the mail. */
  const invite = async (address: string) => {
    const sent = await operator.submit('/admin/invitations', { email: address }, /^\/admin\/invitations$/);
    assert.equal(sent.status, 200, sent.text);
    assert.match(sent.text, /An invitation was sent to/);
    const mail = await mailbox.next(address);
    assert.equal(mail.subject, 'You are invited to create an account');
    return linkIn(mail.text);
  };
  const submitTokenOf = (html: string) => /name="submit_token" value="([^"]+)"/.exec(html)![1]!;
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;

  test('an invitation: mailed through SMTP, single use, straight to username and password, signed in', async () => {
    const address = newAddress();
    const link = await invite(address);
    const token = link.split('invitation=')[1]!;
    // Stored hashed only, listed as pending, recorded with the operator's id (not the address).
    const row = await db().selectFrom('invitations').selectAll().where('email', '=', address).executeTakeFirstOrThrow();
    assert.notEqual(row.token_hash, token);
    assert.ok(!JSON.stringify(row).includes(token));
    assert.equal(row.invited_by, operatorId);
    assert.equal(Number(row.expires_at) - Number(row.created_at), 7 * 24 * 60 * 60 * 1000);
    const listed = await operator.fetch('/admin/invitations');
    assert.match(listed.text, new RegExp(`name="revoke_invitation" value="${row.invitation_id}"`));
    const events = await db().selectFrom('security_events').selectAll().where('kind', '=', 'invitation_sent').execute();
    const event = events.find((e) => JSON.parse(e.details).invitation_id === row.invitation_id);
    assert.ok(event);
    assert.equal(JSON.parse(event.details).operator_id, operatorId);
    assert.ok(!event.details.includes(address));

    const person = new FormClient(server);
    const page = await person.fetch(link);
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /name="username"/);
    assert.match(page.text, /name="password"/);
    assert.doesNotMatch(page.text, /name="email"/);
    assert.match(page.text, new RegExp(address.replace(/\./g, '\\.')));
    // Opening the link used nothing up.
    assert.equal((await person.fetch(link)).status, 200);
    const username = `invited${process.pid}y${serial}`;
    const created = await person.submitOn(page.text, {
      invitation: token,
      submit_token: submitTokenOf(page.text),
      username,
      password: PASSWORD,
    });
    assert.equal(created.status, 303, created.text);
    assert.equal(created.location, '/account');
    const account = await person.fetch('/account');
    assert.equal(account.status, 200);
    assert.match(account.text, new RegExp(username));
    const user = await db().selectFrom('users').selectAll().where('username', '=', username).executeTakeFirstOrThrow();
    assert.equal(user.email, address);
    assert.match((await mailbox.next(address)).subject, /Welcome/);
    // The link works once.
    const again = await new FormClient(server).fetch(link);
    assert.equal(again.status, 410);
    assert.match(again.text, /This invitation was used/);
    assert.doesNotMatch((await operator.fetch('/admin/invitations')).text, new RegExp(row.invitation_id));
  });

  test('two simultaneous uses of one link make one account', async () => {
    const address = newAddress();
    const link = await invite(address);
    const token = link.split('invitation=')[1]!;
    const browsers = [new FormClient(server), new FormClient(server), new FormClient(server)];
    const pages = await Promise.all(browsers.map((b) => b.fetch(link)));
    const answers = await Promise.all(
      browsers.map((b, i) =>
        b.submitOn(pages[i]!.text, {
          invitation: token,
          submit_token: submitTokenOf(pages[i]!.text),
          username: `racer${process.pid}x${serial}n${i}`,
          password: PASSWORD,
        }),
      ),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [303, 410, 410]);
    const users = await db().selectFrom('users').select('user_id').where('email', '=', address).execute();
    assert.equal(users.length, 1);
  });

  test('a double submit of the invitation form sends one mail, stores one invitation, records one event', async () => {
    const address = newAddress();
    const form = await operator.fetch('/admin/invitations');
    const fields = { _csrf: csrfOf(form.text), submit_token: submitTokenOf(form.text), email: address };
    const [a, b] = await Promise.all([
      operator.fetch('/admin/invitations', { form: fields }),
      operator.fetch('/admin/invitations', { form: fields }),
    ]);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.match(b.text, /An invitation was sent to/);
    await mailbox.next(address);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(mailbox.received.filter((m) => m.to.includes(address)).length, 1);
    const rows = await db().selectFrom('invitations').select('invitation_id').where('email', '=', address).execute();
    assert.equal(rows.length, 1);
    const events = await db()
      .selectFrom('security_events')
      .select('details')
      .where('kind', '=', 'invitation_sent')
      .execute();
    assert.equal(events.filter((e) => JSON.parse(e.details).invitation_id === rows[0]!.invitation_id).length, 1);
  });

  test('revoked, re-sent, expired and unknown links each say so; revoking twice changes nothing', async () => {
    const address = newAddress();
    const first = await invite(address);
    // Inviting again replaces the earlier link.
    const second = await invite(address);
    const replaced = await new FormClient(server).fetch(first);
    assert.equal(replaced.status, 410);
    assert.match(replaced.text, /This invitation was withdrawn/);
    const row = await db()
      .selectFrom('invitations')
      .selectAll()
      .where('email', '=', address)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    const listed = await operator.fetch('/admin/invitations');
    const revoked = await operator.submitOn(
      listed.text,
      {
        revoke_invitation: row.invitation_id,
        submit_token: submitTokenOf(listed.text),
      },
      /^\/admin\/invitations$/,
    );
    assert.equal(revoked.status, 200, revoked.text);
    assert.match(revoked.text, /The invitation was revoked/);
    assert.doesNotMatch(revoked.text, new RegExp(`value="${row.invitation_id}"`));
    // A second press with a new page's token: the same page, nothing changed.
    const twice = await operator.submitOn(
      revoked.text,
      {
        revoke_invitation: row.invitation_id,
        submit_token: submitTokenOf(revoked.text),
      },
      /^\/admin\/invitations$/,
    );
    assert.equal(twice.status, 200);
    const page = await new FormClient(server).fetch(second);
    assert.equal(page.status, 410);
    assert.match(page.text, /This invitation was withdrawn/);

    const later = newAddress();
    const expiring = await invite(later);
    await db()
      .updateTable('invitations')
      .set({ expires_at: Date.now() - 1 })
      .where('email', '=', later)
      .execute();
    const expired = await new FormClient(server).fetch(expiring);
    assert.equal(expired.status, 410);
    assert.match(expired.text, /This invitation has expired/);

    for (const token of ['A'.repeat(43), 'short', 'x'.repeat(10_000)]) {
      const unknown = await new FormClient(server).fetch(`/account/sign-up?invitation=${token}`);
      assert.equal(unknown.status, 404);
      assert.match(unknown.text, /This invitation link does not work/);
    }
  });

  test('bad input to the console is a clear 4xx and changes nothing', async () => {
    const count = async () =>
      Number(
        (
          await db()
            .selectFrom('invitations')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await count();
    const cases: [string, number, RegExp][] = [
      ['', 400, /Enter your e-mail address/],
      ['not-an-address', 400, /not a valid e-mail address/],
      [`${'a'.repeat(10_000)}@example.org`, 400, /at most 254 characters/],
      ['a@example.org\r\nBcc: x@example.org', 400, /line breaks or control characters/],
    ];
    for (const [email, status, message] of cases) {
      const answer = await operator.submit('/admin/invitations', { email }, /^\/admin\/invitations$/);
      assert.equal(answer.status, status, email);
      assert.match(answer.text, message);
      assert.match(answer.text, /aria-invalid="true"/);
    }
    const existing = await newAccount(server);
    const taken = await operator.submit('/admin/invitations', { email: existing.email }, /^\/admin\/invitations$/);
    assert.equal(taken.status, 409);
    assert.match(taken.text, /An account with this e-mail address exists already/);
    const damaged = await operator.submit(
      '/admin/invitations',
      { revoke_invitation: 'not-an-id' },
      /^\/admin\/invitations$/,
    );
    assert.equal(damaged.status, 400);
    // No CSRF token.
    const forged = await operator.fetch('/admin/invitations', { form: { email: newAddress() } });
    assert.equal(forged.status, 403);
    assert.equal(await count(), before);
  });

  test('an operator whose sign-in is older than 10 minutes proves it again first', async () => {
    await db()
      .updateTable('web_sessions')
      .set({ created_at: Date.now() - 11 * 60_000 })
      .where('user_id', '=', operatorId)
      .execute();
    const address = newAddress();
    const answer = await operator.submit('/admin/invitations', { email: address }, /^\/admin\/invitations$/);
    assert.match(answer.text, /action="\/account\/reauth"/);
    assert.equal(
      (await db().selectFrom('invitations').select('email').where('email', '=', address).execute()).length,
      0,
    );
    await db().updateTable('web_sessions').set({ created_at: Date.now() }).where('user_id', '=', operatorId).execute();
  });

  test('revoking with a sign-in older than 10 minutes asks again first and leaves the invitation pending', async () => {
    const address = newAddress();
    const link = await invite(address);
    const row = await db().selectFrom('invitations').selectAll().where('email', '=', address).executeTakeFirstOrThrow();
    const listed = await operator.fetch('/admin/invitations');
    await db()
      .updateTable('web_sessions')
      .set({ created_at: Date.now() - 11 * 60_000 })
      .where('user_id', '=', operatorId)
      .execute();
    try {
      const answer = await operator.submitOn(
        listed.text,
        { revoke_invitation: row.invitation_id, submit_token: submitTokenOf(listed.text) },
        /^\/admin\/invitations$/,
      );
      assert.match(answer.text, /action="\/account\/reauth"/);
      const after = await db()
        .selectFrom('invitations')
        .select('revoked_at')
        .where('invitation_id', '=', row.invitation_id)
        .executeTakeFirstOrThrow();
      assert.equal(after.revoked_at, null);
      assert.equal((await new FormClient(server).fetch(link)).status, 200);
    } finally {
      await db()
        .updateTable('web_sessions')
        .set({ created_at: Date.now() })
        .where('user_id', '=', operatorId)
        .execute();
    }
  });

  test('with SIGN_UP=invite a reset asked for an unknown address does not point to the sign-up', async () => {
    const address = newAddress();
    const stranger = new FormClient(server);
    const asked = await stranger.submit('/account/forgot', { email: address });
    assert.ok(asked.status === 303 || asked.status === 200, asked.text);
    const mail = await mailbox.next(address);
    assert.equal(mail.subject, 'Password reset requested');
    assert.match(mail.text, /no account has it/);
    assert.doesNotMatch(mail.text, /sign-up|Create an account/);
    assert.doesNotMatch(mail.html, /sign-up|Create an account/);
  });

  test('with SIGN_UP=invite the sign-up without an invitation is 404 and the sign-in page does not offer it', async () => {
    const stranger = new FormClient(server);
    const page = await stranger.fetch('/account/sign-up');
    assert.equal(page.status, 404);
    assert.match(page.text, /Page not found/);
    const post = await stranger.fetch('/account/sign-up', { form: { email: newAddress() } });
    assert.equal(post.status, 404);
    for (const path of ['/account/sign-in', '/']) {
      const signIn = await stranger.fetch(path);
      assert.doesNotMatch(signIn.text, /Create an account/, path);
      assert.doesNotMatch(signIn.text, /\/account\/sign-up/, path);
    }
  });
});
