// npx tsx bench/wal-pages-per-post.ts: SQLite log pages written by one 250-project insert transaction,
// with random UUIDv4 ids and with UUIDv7 ids, on a projects table (the migrations' schema and indexes)
// already holding 50,000 rows. Page counts do not depend on the machine's load.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { openDatabase } from '../src/db/connection.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { uuidv7 } from '../src/http/uuid.ts';

for (const [name, make] of [
  ['v4', randomUUID],
  ['v7', () => uuidv7()],
] as const) {
  const dir = mkdtempSync(join(tmpdir(), 'walpages-'));
  const path = join(dir, 'db.sqlite');
  const database = openDatabase({ kind: 'sqlite', path });
  await migrateToLatest(database.db);
  await database.close();
  const db = new BetterSqlite3(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 0');
  const user = randomUUID();
  db.prepare('insert into users (user_id, created_at) values (?, ?)').run(user, Date.now());
  const insert = db.prepare(
    'insert into projects (project_id, user_id, title, description, game_id, revision, created_at, updated_at) values (?, ?, ?, ?, ?, 1, ?, ?)',
  );
  const post = () =>
    db.transaction(() => {
      for (let i = 0; i < 250; i++) insert.run(make(), user, `Bulk ${i}`, 'bench', 'Ark', Date.now(), Date.now());
    })();
  for (let i = 0; i < 200; i++) post(); // 50,000 rows already there
  db.pragma('wal_checkpoint(TRUNCATE)');
  const frames: number[] = [];
  for (let i = 0; i < 20; i++) {
    post();
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    frames.push(Math.round((statSync(`${path}-wal`).size - 32) / (pageSize + 24)));
    db.pragma('wal_checkpoint(TRUNCATE)');
  }
  frames.sort((a, b) => a - b);
  console.log(`${name}: WAL pages per 250-row POST, median ${frames[10]} (min ${frames[0]}, max ${frames.at(-1)})`);
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
