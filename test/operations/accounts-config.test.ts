/**
 * SIGN_UP, SMTP_URL, MAIL_FROM and SECRETS_KEY (DESIGN "Operational contract"): accepted values,
 * clear errors, and the secrets key generated once beside a SQLite database.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { loadSecretsKey } from '../../src/secrets/secrets-key.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const scratch = mkdtempSync(join(tmpdir(), 'svc-accounts-config-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const configError = (variable: string) => (error: Error) =>
  error instanceof ConfigError && new RegExp(`\\b${variable}\\b`).test(error.message) && !/\n/.test(error.message);

test('SIGN_UP is open by default, or closed; anything else names SIGN_UP', () => {
  assert.equal(loadConfig({}).signUp, 'open');
  assert.equal(loadConfig({ SIGN_UP: 'closed' }).signUp, 'closed');
  assert.equal(loadConfig({ SIGN_UP: 'open' }).signUp, 'open');
  for (const bad of ['yes', 'Closed', 'off'])
    assert.throws(() => loadConfig({ SIGN_UP: bad }), configError('SIGN_UP'), bad);
});

test('SMTP_URL is unset by default; smtp:// or smtps:// only', () => {
  assert.equal(loadConfig({}).smtpUrl, undefined);
  assert.equal(
    loadConfig({ SMTP_URL: 'smtp://user:pass@mail.example.com:587' }).smtpUrl,
    'smtp://user:pass@mail.example.com:587',
  );
  assert.equal(loadConfig({ SMTP_URL: 'smtps://mail.example.com:465' }).smtpUrl, 'smtps://mail.example.com:465');
  for (const bad of ['http://mail.example.com', 'mail.example.com:25', 'smtp://a b'])
    assert.throws(() => loadConfig({ SMTP_URL: bad }), configError('SMTP_URL'), bad);
});

test("MAIL_FROM defaults to no-reply@ BASE_URL's host; CR, LF and non-addresses are refused", () => {
  assert.equal(loadConfig({ BASE_URL: 'https://api.example.com:8443/base' }).mailFrom, 'no-reply@api.example.com');
  assert.equal(loadConfig({ PORT: '9000' }).mailFrom, 'no-reply@localhost');
  assert.equal(loadConfig({ MAIL_FROM: 'accounts@example.com' }).mailFrom, 'accounts@example.com');
  assert.equal(
    loadConfig({ MAIL_FROM: 'Content Service <accounts@example.com>' }).mailFrom,
    'Content Service <accounts@example.com>',
  );
  for (const bad of [
    'not an address',
    'a@example.com\r\nBcc: victim@example.com',
    'a@example.com\nX: y',
    'Name <a@b.com>\r\n',
    '<>',
    'a@',
    'x@exa mple.com',
  ]) {
    assert.throws(() => loadConfig({ MAIL_FROM: bad }), configError('MAIL_FROM'), JSON.stringify(bad));
  }
});

test('SECRETS_KEY: 32 bytes of base64, never enumerable in the configuration; anything else names SECRETS_KEY', () => {
  const key = Buffer.alloc(32, 7);
  const config = loadConfig({ SECRETS_KEY: key.toString('base64') });
  assert.deepEqual(config.secretsKey, key);
  assert.deepEqual(loadConfig({ SECRETS_KEY: key.toString('base64url') }).secretsKey, key);
  assert.ok(!JSON.stringify(config).includes(key.toString('base64')), 'a serialised configuration never holds the key');
  assert.ok(!Object.keys(config).includes('secretsKey'));
  for (const bad of [
    'short',
    Buffer.alloc(16).toString('base64'),
    Buffer.alloc(33).toString('base64'),
    `${key.toString('base64')}\nX`,
    '!'.repeat(44),
  ]) {
    assert.throws(() => loadConfig({ SECRETS_KEY: bad }), configError('SECRETS_KEY'), bad);
  }
});

describe('the secrets key', () => {
  test('unset on SQLite: generated once beside the database (mode 0600) and the same on the next start', () => {
    const database = join(scratch, 'gen', 'service.db');
    const first = loadSecretsKey(loadConfig({ DATABASE_URL: `sqlite:${database}` }));
    assert.equal(first.source.kind, 'file');
    const path = join(scratch, 'gen', 'secrets.key');
    assert.ok(first.source.kind === 'file' && first.source.path === path && first.source.created);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(first.key.length, 32);
    const second = loadSecretsKey(loadConfig({ DATABASE_URL: `sqlite:${database}` }));
    assert.ok(second.source.kind === 'file' && !second.source.created);
    assert.deepEqual(second.key, first.key);
    assert.equal(readFileSync(path, 'utf8').trim(), first.key.toString('base64'));
  });

  test('SECRETS_KEY set on SQLite: used, and no file is written', () => {
    const database = join(scratch, 'env', 'service.db');
    const key = Buffer.alloc(32, 3);
    const loaded = loadSecretsKey(
      loadConfig({ DATABASE_URL: `sqlite:${database}`, SECRETS_KEY: key.toString('base64') }),
    );
    assert.deepEqual(loaded.key, key);
    assert.equal(existsSync(join(scratch, 'env', 'secrets.key')), false);
  });

  test('a damaged key file is a clear configuration error, not a new key', () => {
    const database = join(scratch, 'bad', 'service.db');
    loadSecretsKey(loadConfig({ DATABASE_URL: `sqlite:${database}` }));
    writeFileSync(join(scratch, 'bad', 'secrets.key'), 'not a key\n');
    assert.throws(
      () => loadSecretsKey(loadConfig({ DATABASE_URL: `sqlite:${database}` })),
      (error: Error) => error instanceof ConfigError && /secrets\.key/.test(error.message),
    );
  });

  test('PostgreSQL without SECRETS_KEY is a configuration error naming SECRETS_KEY', () => {
    assert.throws(
      () => loadSecretsKey(loadConfig({ DATABASE_URL: 'postgres://127.0.0.1:1/none' })),
      configError('SECRETS_KEY'),
    );
  });
});

/** The real start: exit 1 and one clear line on stderr, before any database is opened. */
function start(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !['SECRETS_KEY', 'DATABASE_URL', 'SMTP_URL', 'MAIL_FROM', 'SIGN_UP'].includes(key),
    ),
  );
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), join(ROOT, 'src/server.ts')], {
    cwd: ROOT,
    env: { ...base, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((done) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, output });
    }),
  );
}

describe('the server process', { concurrency: true }, () => {
  test('with PostgreSQL and no SECRETS_KEY: exit 1, one line naming SECRETS_KEY', async () => {
    const { code, output } = await start({ DATABASE_URL: 'postgres://127.0.0.1:1/none' });
    assert.equal(code, 1, output);
    assert.equal(output.trim().split('\n').length, 1, output);
    assert.match(output, /^configuration error: SECRETS_KEY is required with PostgreSQL/);
  });

  test('with a malformed SECRETS_KEY: exit 1, one line naming SECRETS_KEY, the value not echoed', async () => {
    const { code, output } = await start({
      DATABASE_URL: `sqlite:${join(scratch, 'proc', 'service.db')}`,
      SECRETS_KEY: 'c2VjcmV0LWJ1dC10b28tc2hvcnQ=',
    });
    assert.equal(code, 1, output);
    assert.equal(output.trim().split('\n').length, 1, output);
    assert.match(output, /^configuration error: SECRETS_KEY must be 32 random bytes/);
    assert.ok(!output.includes('c2VjcmV0LWJ1dC10b28tc2hvcnQ='));
    assert.equal(existsSync(join(scratch, 'proc')), false, 'nothing is created before the configuration is valid');
  });
});
