/**
 * Mail (DESIGN "Self-service accounts", Mail): every kind delivered through a real SMTP server with
 * a text and an HTML part, the log when SMTP_URL is unset, retries, a server down or refusing,
 * header injection refused, and the counts in /metrics.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAIL_KINDS, type MailData, type MailKind } from '../../src/mail/kinds.ts';
import { codeIn, downUrl, type Mailbox, startMailbox, verifyLinkIn } from '../helpers/mail.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const METRICS_TOKEN = 'mail-metrics-token';

async function mailCount(server: TestServer, kind: string, outcome: string): Promise<number> {
  const reply = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  assert.equal(reply.status, 200);
  const line = reply.text
    .split('\n')
    .find((l) => l.startsWith(`mail_messages_total{kind="${kind}",outcome="${outcome}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('through a real SMTP server', () => {
  let mailbox: Mailbox;
  let server: TestServer;
  before(async () => {
    mailbox = await startMailbox();
    server = await startServer({
      env: { SMTP_URL: mailbox.url, MAIL_FROM: 'Content Service <accounts@test.example>', METRICS_TOKEN },
      mail: { retryDelaysMs: [0, 0] },
    });
  });
  after(async () => {
    await server.close();
    await mailbox.close();
  });

  test('the start-up log does not warn that no mail is sent', () => {
    assert.ok(!server.logs.some((line) => line.includes('no mail is sent')));
  });

  const base = 'https://api.test.example';
  const token = 'AbCdEf0123456789_-xyz';
  const samples: { [Kind in MailKind]: MailData[Kind] } = {
    'sign-up-code': { code: '482913', link: `${base}/account/verify?token=${token}` },
    'account-exists': { resetLink: `${base}/account/forgot` },
    welcome: { username: 'new-user', accountLink: `${base}/account` },
    'password-reset-code': { code: '105822', link: `${base}/account/verify?token=${token}` },
    'password-reset-unknown': { signUpLink: `${base}/account/sign-up` },
    'password-changed': { username: 'new-user' },
    'email-change-link': { link: `${base}/account/verify?token=${token}` },
    'email-change-notice': { newEmailMasked: 'n•••@example.org' },
    invitation: { link: `${base}/account/sign-up?invitation=${token}` },
  };

  for (const kind of Object.keys(MAIL_KINDS) as MailKind[]) {
    test(`${kind}: delivered with its subject, from MAIL_FROM, a text and an HTML part holding its data`, async () => {
      const to = `${kind}@example.com`;
      const result = await server.app.mail.send(kind, to, samples[kind] as never);
      assert.deepEqual(result, { outcome: 'sent', attempts: 1 });
      const message = await mailbox.next(to);
      assert.equal(message.subject, MAIL_KINDS[kind].subject);
      assert.match(message.from, /accounts@test\.example/);
      assert.ok(message.text.trim().length > 40, message.text);
      assert.match(message.html, /^<!DOCTYPE html>/);
      for (const value of Object.values(samples[kind])) {
        if (value === null) continue;
        assert.ok(message.text.includes(value), `the text part holds ${value}:\n${message.text}`);
        assert.ok(message.html.includes(value.replace(/&/g, '&#38;')), `the HTML part holds ${value}`);
      }
      assert.ok(!/<[a-z]/i.test(message.text), 'the text part has no markup');
      if ('code' in samples[kind]) {
        assert.equal(codeIn(message), (samples[kind] as { code: string }).code);
        assert.equal(verifyLinkIn(message, base), `${base}/account/verify?token=${token}`);
        assert.match(message.html, new RegExp(`href="${base}/account/verify\\?token=${token}"`));
      }
    });
  }

  test('data is HTML-escaped in the HTML part and left as is in the text part', async () => {
    const to = 'escape@example.com';
    await server.app.mail.send('welcome', to, { username: '<b>x</b>&"q"', accountLink: `${base}/account?a=1&b=2` });
    const message = await mailbox.next(to);
    assert.ok(message.text.includes('<b>x</b>&"q"'));
    assert.ok(!message.html.includes('<b>x</b>'), 'no markup from data');
    assert.ok(message.html.includes('&#60;b&#62;x&#60;/b&#62;&#38;&#34;q&#34;'));
    assert.ok(message.html.includes(`href="${base}/account?a=1&#38;b=2"`));
  });

  test('a refused message is tried again and delivered once; the log says so without the message', async () => {
    const to = 'retry@example.com';
    const refusedBefore = mailbox.refused;
    mailbox.refuse(1);
    const result = await server.app.mail.send('password-changed', to, { username: 'retry-user' });
    assert.deepEqual(result, { outcome: 'sent', attempts: 2 });
    assert.equal(mailbox.refused, refusedBefore + 1);
    await mailbox.next(to);
    assert.equal(mailbox.received.filter((m) => m.to.includes(to)).length, 1);
    const warning = server.logs.find((line) => line.includes('trying again') && line.includes('"r•••@example.com"'));
    assert.ok(warning, 'the retry is logged, the address masked');
    assert.ok(!server.logs.some((line) => line.includes(to)), 'no log line holds the address');
  });

  test('refused three times: failed after three tries, no throw, nothing delivered', async () => {
    const to = 'refused@example.com';
    mailbox.refuse(3);
    const result = await server.app.mail.send('sign-up-code', to, samples['sign-up-code']);
    assert.deepEqual(result, { outcome: 'failed', reason: 'undelivered', attempts: 3 });
    assert.ok(!mailbox.received.some((m) => m.to.includes(to)));
    // A later send works again (the person tries again).
    assert.equal((await server.app.mail.send('sign-up-code', to, samples['sign-up-code'])).outcome, 'sent');
    await mailbox.next(to);
  });

  test('CR, LF, NUL, several recipients or a display name in the address: refused, nothing sent', async () => {
    const before = mailbox.received.length;
    for (const to of [
      'a@example.com\r\nBcc: victim@example.com',
      'a@example.com\nX-Evil: 1',
      'a@example.com\u0000',
      'a@example.com, b@example.com',
      'A <a@example.com>',
      'a@example.com;b@example.com',
      '',
      'no-at-sign',
    ]) {
      const result = await server.app.mail.send('welcome', to, { username: 'x', accountLink: `${base}/account` });
      assert.deepEqual(result, { outcome: 'failed', reason: 'invalid_address', attempts: 0 }, JSON.stringify(to));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(mailbox.received.length, before);
  });

  test('/metrics counts messages by kind and outcome', async () => {
    const sent = await mailCount(server, 'email-change-link', 'sent');
    const failed = await mailCount(server, 'email-change-link', 'failed');
    const invalid = await mailCount(server, 'email-change-link', 'invalid_address');
    await server.app.mail.send('email-change-link', 'count@example.com', samples['email-change-link']);
    await mailbox.next('count@example.com');
    mailbox.refuse(3);
    await server.app.mail.send('email-change-link', 'count@example.com', samples['email-change-link']);
    await server.app.mail.send('email-change-link', 'bad\r\n@example.com', samples['email-change-link']);
    assert.equal(await mailCount(server, 'email-change-link', 'sent'), sent + 1);
    assert.equal(await mailCount(server, 'email-change-link', 'failed'), failed + 1);
    assert.equal(await mailCount(server, 'email-change-link', 'invalid_address'), invalid + 1);
  });
});

describe('with SMTP_URL unset', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('the start-up log warns that no mail is sent', () => {
    assert.ok(
      server.logs.some((line) => JSON.parse(line).level === 40 && line.includes('SMTP_URL is unset: no mail is sent')),
    );
  });

  test('every message is one JSON log line "mail":{"to","subject","text"}', async () => {
    const result = await server.app.mail.send('sign-up-code', 'logged@example.com', {
      code: '123456',
      link: 'https://api.test.example/account/verify?token=abc',
    });
    assert.equal(result.outcome, 'sent');
    const lines = server.logs.filter((line) => line.includes('logged@example.com'));
    assert.equal(lines.length, 1);
    const { mail } = JSON.parse(lines[0]!);
    assert.deepEqual(Object.keys(mail).sort(), ['subject', 'text', 'to']);
    assert.equal(mail.to, 'logged@example.com');
    assert.equal(mail.subject, MAIL_KINDS['sign-up-code'].subject);
    assert.equal(codeIn(mail), '123456');
    assert.equal(verifyLinkIn(mail, 'https://api.test.example'), 'https://api.test.example/account/verify?token=abc');
  });
});

describe('with the SMTP server down', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ env: { SMTP_URL: await downUrl() } });
  });
  after(() => server.close());

  test('a send fails after three tries within a couple of seconds, without throwing, and is logged', async () => {
    const started = Date.now();
    const result = await server.app.mail.send('password-reset-code', 'down@example.com', {
      code: '000111',
      link: 'https://api.test.example/account/verify?token=t',
    });
    const took = Date.now() - started;
    assert.deepEqual(result, { outcome: 'failed', reason: 'undelivered', attempts: 3 });
    assert.ok(took >= 1000 && took < 5000, `backed off 0.2 s then 0.8 s (took ${took} ms)`);
    const failure = server.logs.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'mail failed');
    assert.equal(failure?.mailKind, 'password-reset-code');
    assert.equal(failure?.attempts, 3);
    assert.ok(!server.logs.some((line) => line.includes('000111')), 'the code is never logged when mail is configured');
  });
});
