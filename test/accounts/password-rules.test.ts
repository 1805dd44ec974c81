/**
 * Password rules (DESIGN "Self-service accounts"): 10 to 1024 characters, not commonly used nor
 * too easy to guess (zxcvbn-ts, score below 3 refused, the username and address counting as
 * known words), wherever a password is set; existing passwords keep working.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  AccountError,
  createAccount,
  findAccount,
  setPassword,
  storePasswordHash,
} from '../../src/accounts/accounts.ts';
import { passwordRefusal } from '../../src/accounts/password-rules.ts';
import { hashPassword, verifyPassword } from '../../src/accounts/passwords.ts';
import { FormClient, newAccount } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

describe('passwordRefusal', () => {
  test('length: at least 10, at most 1024 characters', async () => {
    assert.match((await passwordRefusal('Xk9#vq2!z'))!, /at least 10 characters/);
    assert.equal(await passwordRefusal('Xk9#vq2!zR'), undefined);
    assert.match((await passwordRefusal(`a${'x9#Q'.repeat(256)}`))!, /at most 1024 characters/);
    assert.equal(
      await passwordRefusal(`kettle violet sunrise ${'x'.repeat(1002)}`),
      undefined,
      '1024 characters are allowed',
    );
  });

  test("commonly used or easy to guess: refused with zxcvbn's warning as the reason", async () => {
    for (const [password, reason] of [
      ['password123', /^This is a commonly used password\. Choose a password that is harder to guess$/],
      ['qwertyuiop1', /commonly used password/],
      ['1234567890', /./],
      ['aaaaaaaaaaaa', /./],
      ['iloveyou2024', /./],
    ] as const) {
      assert.match((await passwordRefusal(password)) ?? 'accepted', reason, password);
    }
  });

  test('the username and e-mail address count as easy to guess', async () => {
    assert.equal(await passwordRefusal('zebulon-fitz7'), undefined, 'acceptable in itself');
    assert.match(
      (await passwordRefusal('zebulon-fitz7', ['zebulon-fitz', 'zebulon@example.com'])) ?? 'accepted',
      /personal/,
    );
    assert.match((await passwordRefusal('zebulon@example.com', ['someone', 'zebulon@example.com'])) ?? 'accepted', /./);
  });

  test('strong passwords pass, including long passphrases and non-ASCII', async () => {
    for (const password of [
      'correct horse battery',
      'kettle-violet-sunrise-42',
      'Tr0ub4dor&3xyz',
      'grüne Wiese über dem Fluss',
      '東京タワーの夜景がきれい',
    ]) {
      assert.equal(await passwordRefusal(password), undefined, password);
    }
  });

  test('many checks at once all get their own answer', async () => {
    const passwords = Array.from({ length: 20 }, (_, i) => (i % 2 ? `password${i}` : `kettle violet sunrise ${i}`));
    const answers = await Promise.all(passwords.map((password) => passwordRefusal(password)));
    for (const [i, answer] of answers.entries()) {
      if (i % 2) assert.ok(answer, passwords[i]);
      else assert.equal(answer, undefined, passwords[i]);
    }
  });
});

describe('wherever a password is set', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());
  const db = () => server.app.database.db;

  test('createAccount refuses a weak password and creates nothing', async () => {
    await assert.rejects(
      createAccount(
        db(),
        { username: 'weak-one', email: 'weak-one@example.com', password: 'password123' },
        server.app.secrets,
      ),
      (error: Error) => error instanceof AccountError && /commonly used/.test(error.message),
    );
    await assert.rejects(
      createAccount(
        db(),
        { username: 'weak-two', email: 'weak-two@example.com', password: 'weak-two-1' },
        server.app.secrets,
      ),
      AccountError,
    );
    assert.equal(
      await db()
        .selectFrom('users')
        .select('user_id')
        .where('username', 'in', ['weak-one', 'weak-two'])
        .executeTakeFirst(),
      undefined,
    );
  });

  test('setPassword refuses a weak password and keeps the old one', async () => {
    const account = await newAccount(server);
    await assert.rejects(setPassword(db(), account.userId, 'password123'), AccountError);
    await assert.rejects(
      setPassword(db(), account.userId, `${account.username}1`),
      (error: Error) => error instanceof AccountError && /personal/.test(error.message),
    );
    assert.ok(await verifyPassword((await findAccount(db(), account.userId))!.passwordHash, account.password));
    assert.equal(await setPassword(db(), account.userId, 'kettle violet sunrise'), true);
  });

  test('an existing weak password still signs in (only setting a password is checked)', async () => {
    const account = await newAccount(server);
    await storePasswordHash(db(), account.userId, await hashPassword('password1'));
    const browser = new FormClient(server);
    const signedIn = await browser.submit('/account/sign-in', { username: account.username, password: 'password1' });
    assert.equal(signedIn.status, 303);
  });
});
