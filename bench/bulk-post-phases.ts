// npx tsx bench/bulk-post-phases.ts [--posts 40] [--rows 50000] [--database postgres://…/empty]
//
// Where the writer's time goes in one `POST /v4/projects` of 250 new objects (client ids, as the
// bench's for-information row sends them), in process and without HTTP, so the load of a shared machine moves it little:
// the body's validation (the route's compiled schema), the store's save() split by statement
// kind (on SQLite, timed around better-sqlite3's run/all: the existence SELECT, the INSERTs, BEGIN
// and COMMIT), the answer's mapping and its JSON (fast-json-stringify of the route's response
// schema). Also the longest synchronous section of save(): what a read waiting beside it waits.
// Medians over `--posts` POSTs, after `--rows` projects of the same user are stored.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { registerAjvFormats } from '@fastify/type-provider-typebox';
import BetterSqlite3 from 'better-sqlite3';
import fastJson from 'fast-json-stringify';
import { sql } from 'kysely';
import { Compile } from 'typebox/compile';
import { Project } from '../src/classes/project.ts';
import { openDatabase } from '../src/db/connection.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { Caller, Row } from '../src/rest/definition.ts';
import { postSchema, writeResultSchema } from '../src/rest/schemas.ts';
import { ClassStore } from '../src/rest/store.ts';

const { values } = parseArgs({
  options: {
    posts: { type: 'string', default: '40' },
    rows: { type: 'string', default: '50000' },
    database: { type: 'string' },
  },
});

const spent = new Map<string, number>();
const add = (key: string, ms: number) => spent.set(key, (spent.get(key) ?? 0) + ms);
// Time every statement of better-sqlite3 by its first word (and `insert` by its row count).
const statementProto = Object.getPrototypeOf(new BetterSqlite3(':memory:').prepare('select 1'));
for (const method of ['run', 'all', 'get'] as const) {
  const original = statementProto[method];
  statementProto[method] = function timed(this: { source: string }, ...args: unknown[]) {
    const started = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      add(`sql ${this.source.trim().split(/\s+/)[0]!.toLowerCase()}`, performance.now() - started);
    }
  };
}

const dir = mkdtempSync(join(tmpdir(), 'bulk-phases-'));
const database = openDatabase(
  values.database ? { kind: 'postgres', url: values.database } : { kind: 'sqlite', path: join(dir, 'db.sqlite') },
  { checkpointWorkerAfterWrites: 1 },
);
try {
  await migrateToLatest(database.db);
  if (process.env.CACHE_KIB) await sql.raw(`pragma cache_size = -${process.env.CACHE_KIB}`).execute(database.db);
  registerAjvFormats();
  const userId = randomUUID();
  await database.db
    .insertInto('users')
    .values({ user_id: userId, created_at: Date.now() } as never)
    .execute();
  const caller: Caller = {
    userId,
    clientId: randomUUID(),
    sessionId: randomUUID(),
    scopes: new Set(['projects:read', 'projects:write']),
  };
  const store = new ClassStore(Project, database);
  const check = Compile(postSchema(Project));
  const serialize = fastJson(writeResultSchema(Project) as never);
  const body = () =>
    Array.from({ length: 250 }, (_, n) => ({ projectId: randomUUID(), title: `Bulk ${n}`, description: 'bench' }));
  for (let stored = 0; stored < Number(values.rows); stored += 250) await store.save(caller, body());

  const phases: Record<string, number[]> = {};
  const note = (key: string, ms: number) => (phases[key] ??= []).push(ms);
  let longest = 0;
  for (let post = 0; post < Number(values.posts); post++) {
    const text = JSON.stringify(body());
    let started = performance.now();
    const items = JSON.parse(text) as Row[];
    note('JSON.parse of the body', performance.now() - started);
    started = performance.now();
    if (!check.Check(items)) throw new Error('invalid body');
    note('validation', performance.now() - started);
    spent.clear();
    // The longest stretch between two turns of the event loop, in this process's CPU time (the
    // checkpoint thread's share is small) and in wall time: a timer asks to run every millisecond.
    let last = performance.now();
    let lastCpu = process.cpuUsage();
    let gap = 0;
    let cpuGap = 0;
    const tick = () => {
      const now = performance.now();
      const cpuNow = process.cpuUsage();
      gap = Math.max(gap, now - last);
      cpuGap = Math.max(cpuGap, (cpuNow.user + cpuNow.system - lastCpu.user - lastCpu.system) / 1000);
      last = now;
      lastCpu = cpuNow;
    };
    const timer = setInterval(tick, 0);
    started = performance.now();
    const cpu = process.cpuUsage();
    const { created, updated } = await store.save(caller, items);
    const saveMs = performance.now() - started;
    const saveCpu = process.cpuUsage(cpu);
    note('save() CPU (user + system)', (saveCpu.user + saveCpu.system) / 1000);
    tick();
    clearInterval(timer);
    longest = Math.max(longest, cpuGap);
    note('  longest section without a turn of the event loop, CPU', cpuGap);
    note('  the same, wall time', gap);
    note('save() in all', saveMs);
    for (const [key, ms] of spent) note(`  ${key}`, ms);
    started = performance.now();
    const answer = {
      created: created.map((row) => store.toJson(row, caller)),
      updated: updated.map((row) => store.toJson(row, caller)),
    };
    note('rows to JSON objects', performance.now() - started);
    started = performance.now();
    serialize(answer);
    note('serialising the answer', performance.now() - started);
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  for (const [key, list] of Object.entries(phases))
    console.log(`${key.padEnd(55)} median ${median(list).toFixed(2)} ms`);
  console.log(`longest section without a turn of the event loop over all POSTs, CPU: ${longest.toFixed(2)} ms`);
} finally {
  await database.close();
  rmSync(dir, { recursive: true, force: true });
}
