/**
 * `npm run -s admin -- backup --to FILE`: an online copy of the SQLite database taken while the
 * server takes writes, restored as the README says (stop, copy over the database file, drop -wal and
 * -shm, start), holds every write acknowledged before the backup began. On PostgreSQL the command
 * points to pg_dump.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { newUser } from '../helpers/keys.ts';
import { freshDatabase, type Reply, startServer, type TestServer } from '../helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const onPostgres = process.env.DATABASE_URL?.startsWith('postgres') ?? false;

function admin(databaseUrl: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      join(ROOT, 'node_modules/.bin/tsx'),
      ['src/cli/admin.ts', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: 60_000 },
      (error, stdout, stderr) =>
        done({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

const scratch = mkdtempSync(join(tmpdir(), 'svc-backup-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

describe('backup on SQLite', { skip: onPostgres && 'SQLite only', timeout: 120_000 }, () => {
  test('a backup taken under write load, restored, holds every write acknowledged before it began', async () => {
    const database = await freshDatabase();
    const databasePath = database.url.slice('sqlite:'.length);
    let server: TestServer | undefined = await startServer({ database });
    try {
      const publicPem = newUser('ed25519').publicPem;
      const acknowledged: string[] = [];
      let writing = true;
      // Four writers creating v1 users as fast as the server acknowledges them.
      const writers = Array.from({ length: 4 }, async () => {
        while (writing) {
          const userId = crypto.randomUUID();
          const reply = await server!.request('POST', '/v1/user.php', {
            body: { user_id: userId, public_key: publicPem },
          });
          assert.equal(reply.status, 200, reply.text);
          acknowledged.push(userId);
        }
      });
      while (acknowledged.length < 50) await new Promise((done) => setTimeout(done, 20));

      const backupFile = join(scratch, 'backup.db');
      const ackedBeforeBackup = [...acknowledged];
      const run = await admin(database.url, 'backup', '--to', backupFile);
      const ackedAfterBackup = acknowledged.length;
      writing = false;
      await Promise.all(writers);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /backed up to/);
      // The secrets key (generated beside the database) is copied beside the backup, mode 0600.
      const keyFile = join(dirname(databasePath), 'secrets.key');
      assert.match(
        run.stdout,
        new RegExp(`secrets key copied to ${backupFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.secrets\\.key`),
      );
      assert.equal(readFileSync(`${backupFile}.secrets.key`, 'utf8'), readFileSync(keyFile, 'utf8'));
      assert.equal(statSync(`${backupFile}.secrets.key`).mode & 0o777, 0o600);
      assert.ok(ackedAfterBackup > ackedBeforeBackup.length, 'no write happened while the backup ran');

      // A second backup to the same file is refused rather than overwriting it.
      const again = await admin(database.url, 'backup', '--to', backupFile);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /exists/);

      // Restore: stop the server, put the backup in place of the database, start again.
      await server.close();
      server = undefined;
      copyFileSync(backupFile, databasePath);
      rmSync(`${databasePath}-wal`, { force: true });
      rmSync(`${databasePath}-shm`, { force: true });
      server = await startServer({ database });

      const found = new Set<string>();
      for (let i = 0; i < ackedBeforeBackup.length; i += 100) {
        const ids = ackedBeforeBackup.slice(i, i + 100);
        const reply: Reply = await server.request('GET', `/v1/user.php/${ids.join(',')}`);
        assert.equal(reply.status, 200, reply.text);
        for (const user of [reply.body].flat()) found.add(user.user_id);
      }
      assert.deepEqual(
        ackedBeforeBackup.filter((id) => !found.has(id)),
        [],
        'acknowledged writes missing from the restored backup',
      );
    } finally {
      await server?.close();
      await database.drop();
    }
  });

  test('refuses to back up a database that does not exist', async () => {
    const missing = join(scratch, 'missing.db');
    const run = await admin(`sqlite:${missing}`, 'backup', '--to', join(scratch, 'never.db'));
    assert.equal(run.code, 1);
    assert.match(run.stderr, /No database at/);
    assert.equal(existsSync(missing), false);
    assert.equal(existsSync(join(scratch, 'never.db')), false);
  });
});

describe('backup on PostgreSQL', { skip: !onPostgres && 'PostgreSQL only' }, () => {
  test('says to use pg_dump and exits 1', async () => {
    const database = await freshDatabase();
    try {
      const run = await admin(database.url, 'backup', '--to', join(scratch, 'pg.db'));
      assert.equal(run.code, 1);
      assert.match(run.stderr, /pg_dump/);
      assert.match(run.stderr, /SECRETS_KEY/);
      assert.equal(existsSync(join(scratch, 'pg.db')), false);
    } finally {
      await database.drop();
    }
  });
});
