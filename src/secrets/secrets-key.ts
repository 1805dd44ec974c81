import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Config, ConfigError, parseSecretsKey } from '../config.ts';

/** The key file's name, in the folder of the SQLite database, when SECRETS_KEY is unset. */
export const SECRETS_KEY_FILE = 'secrets.key';

/**
 * Where the secrets key comes from: SECRETS_KEY, a file generated beside the SQLite database (its
 * path), or nowhere lasting (an in-memory database, whose rows vanish with the process anyway).
 */
export type SecretsKeySource =
  | { kind: 'environment' }
  | { kind: 'file'; path: string; created: boolean }
  | { kind: 'ephemeral' };

/** The file holding the key of a SQLite database (whether it exists yet or not). */
export function secretsKeyFile(databasePath: string): string {
  return join(dirname(databasePath), SECRETS_KEY_FILE);
}

/**
 * The 32-byte key that encrypts secrets kept at rest. SECRETS_KEY when set; else, on SQLite, the
 * key file beside the database, created (mode 0600) the first time and read on every later start;
 * with PostgreSQL SECRETS_KEY is required, since every instance must share one key. Throws a
 * ConfigError (the start stops with exit 1) when it is missing or malformed.
 */
export function loadSecretsKey(config: Config): { key: Buffer; source: SecretsKeySource } {
  if (config.secretsKey) return { key: config.secretsKey, source: { kind: 'environment' } };
  if (config.database.kind === 'postgres') {
    throw new ConfigError(
      'SECRETS_KEY is required with PostgreSQL (every instance must share it): set it to 32 random bytes in base64, e.g. the output of: openssl rand -base64 32',
    );
  }
  const databasePath = config.database.path;
  if (databasePath === ':memory:' || databasePath === '')
    return { key: randomBytes(32), source: { kind: 'ephemeral' } };
  const path = secretsKeyFile(databasePath);
  mkdirSync(dirname(path), { recursive: true });
  const created = randomBytes(32);
  try {
    // 'wx': only if no file exists, so of two processes starting at once one writes and both read it.
    const fd = openSync(path, 'wx', 0o600);
    try {
      writeSync(fd, `${created.toString('base64')}\n`);
    } finally {
      closeSync(fd);
    }
    return { key: created, source: { kind: 'file', path, created: true } };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new ConfigError(`cannot create the secrets key file ${path}: ${(error as Error).message}`);
  }
  let text = '';
  // The process that created it may not have written it yet.
  for (let attempt = 0; attempt < 50 && text.trim() === ''; attempt++) {
    text = readFileSync(path, 'utf8');
    if (text.trim() === '') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
  return { key: parseSecretsKey(text, `The secrets key file ${path}`), source: { kind: 'file', path, created: false } };
}
