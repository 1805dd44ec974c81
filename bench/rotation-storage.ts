// npx tsx bench/rotation-storage.ts: what one refresh-token rotation costs SQLite alone (no HTTP),
// on 60,000 sessions, in µs per rotation, for today's schema and for a WITHOUT ROWID token-hash
// table, with SQLite's automatic checkpoint (1,000 pages) or none (as when a worker checkpoints),
// committing each rotation alone or ten at a time (group commit). Behind issue 12's token target:
// the budget of a durable rotation there is ~36 µs (docs/benchmarks.md).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const SESSIONS = 60_000;
const ROTATIONS = 20_000;
const hash = (text: string) => createHash('sha256').update(text).digest('base64url');
const token = () => randomBytes(32).toString('base64url');
const dir = mkdtempSync(join(tmpdir(), 'rotation-'));
const base = join(dir, 'base.db');

function seed(): void {
  const db = new Database(base);
  db.pragma('journal_mode = WAL');
  db.exec(`
    create table sessions (session_id text primary key, user_id text not null, client_id text not null, scope text not null,
      access_token_hash text not null unique, access_expires_at bigint not null, refresh_token_hash text not null unique,
      refresh_expires_at bigint not null, created_at bigint not null, last_used_at bigint);
    create index sessions_user on sessions(user_id);
    create index sessions_refresh_expires_at on sessions(refresh_expires_at);
    create table rotated_refresh_tokens (refresh_token_hash text primary key, session_id text not null references sessions(session_id) on delete cascade, expires_at bigint not null);
    create index rotated_expires on rotated_refresh_tokens(expires_at);
    create index rotated_session on rotated_refresh_tokens(session_id);
    create table tokens (token_hash text primary key, session_id text not null, kind integer not null, expires_at bigint not null, consumed_at integer) without rowid;
    create table sessions2 (session_id text primary key, user_id text not null, client_id text not null, scope text not null, last_used_at bigint) without rowid;`);
  const session = db.prepare('insert into sessions values (?,?,?,?,?,?,?,?,?,?)');
  const tokenRow = db.prepare('insert into tokens values (?,?,?,?,null)');
  const session2 = db.prepare('insert into sessions2 values (?,?,?,?,?)');
  const now = Date.now();
  db.transaction(() => {
    for (let i = 0; i < SESSIONS; i++) {
      const id = randomUUID();
      const access = hash(token());
      const refresh = hash(token());
      session.run(id, 'u', 'c', 'common', access, now + 3.6e6, refresh, now + 30 * 864e5, now, now);
      tokenRow.run(access, id, 0, now + 3.6e6);
      tokenRow.run(refresh, id, 1, now + 30 * 864e5);
      session2.run(id, 'u', 'c', 'common', now);
    }
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

function measure(design: 'today' | 'token table', autocheckpoint: number, group: number): number {
  const path = join(dir, 'run.db');
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
  copyFileSync(base, path);
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma(`wal_autocheckpoint = ${autocheckpoint}`);
  const refreshHashes = (
    db
      .prepare(
        design === 'today'
          ? 'select refresh_token_hash h from sessions'
          : 'select token_hash h from tokens where kind = 1',
      )
      .all() as Array<{ h: string }>
  ).map((row) => row.h);
  const accessOf = new Map(
    (
      db.prepare('select session_id s, token_hash h from tokens where kind = 0').all() as Array<{
        s: string;
        h: string;
      }>
    ).map((row) => [row.s, row.h]),
  );
  const find = db.prepare('select session_id, scope, refresh_expires_at from sessions where refresh_token_hash = ?');
  const rotate = db.prepare(
    'update sessions set access_token_hash = ?, access_expires_at = ?, refresh_token_hash = ?, refresh_expires_at = ?, last_used_at = ? where session_id = ? and refresh_token_hash = ?',
  );
  const record = db.prepare(
    'insert into rotated_refresh_tokens (refresh_token_hash, session_id, expires_at) values (?, ?, ?)',
  );
  const findToken = db.prepare(
    'select t.session_id, t.expires_at, t.consumed_at, s.scope from tokens t join sessions2 s using (session_id) where t.token_hash = ?',
  );
  const consume = db.prepare('update tokens set consumed_at = ? where token_hash = ? and consumed_at is null');
  const insertToken = db.prepare('insert into tokens values (?,?,?,?,null)');
  const deleteToken = db.prepare('delete from tokens where token_hash = ?');
  const touch = db.prepare('update sessions2 set last_used_at = ? where session_id = ?');
  const begin = db.prepare('begin');
  const commit = db.prepare('commit');
  const started = process.hrtime.bigint();
  for (let i = 0; i < ROTATIONS; i += group) {
    begin.run();
    for (let j = 0; j < group; j++) {
      const oldHash = refreshHashes[i + j]!;
      const now = Date.now();
      const access = hash(token());
      const refresh = hash(token());
      if (design === 'today') {
        const session = find.get(oldHash) as { session_id: string; refresh_expires_at: number };
        rotate.run(access, now + 3.6e6, refresh, now + 30 * 864e5, now, session.session_id, oldHash);
        record.run(oldHash, session.session_id, session.refresh_expires_at);
      } else {
        const session = findToken.get(oldHash) as { session_id: string };
        consume.run(now, oldHash);
        insertToken.run(refresh, session.session_id, 1, now + 30 * 864e5);
        insertToken.run(access, session.session_id, 0, now + 3.6e6);
        deleteToken.run(accessOf.get(session.session_id));
        touch.run(now, session.session_id);
      }
    }
    commit.run();
  }
  const micros = Number(process.hrtime.bigint() - started) / 1000 / ROTATIONS;
  db.close();
  return micros;
}

try {
  seed();
  console.log('| schema | automatic checkpoint | rotations per commit | µs per rotation |\n|---|---|---:|---:|');
  for (const design of ['today', 'token table'] as const) {
    for (const autocheckpoint of [1000, 0]) {
      for (const group of [1, 10]) {
        console.log(
          `| ${design} | ${autocheckpoint ? `every ${autocheckpoint} pages` : 'none'} | ${group} | ${measure(design, autocheckpoint, group).toFixed(0)} |`,
        );
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
