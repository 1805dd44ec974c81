// Fills the database with projects for benchmarks: 1,000,000 projects over 1,000 users by default.
//   DATABASE_URL=postgres://… npm run -s seed -- --projects 1000000 --users 1000
// Prints {"users","projects","seconds","sample":{"userId","accessToken"}}: a token of the first user,
// issued by the real session code, for benchmarking that user's list pages.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/connection.ts';
import { dialectOf } from '../src/db/dialect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { Schema } from '../src/db/schema.ts';
import { ensureSearchIndexes } from '../src/db/search-indexes.ts';
import { createApplication } from '../src/oauth/clients.ts';
import { createSession } from '../src/oauth/sessions.ts';

const { values } = parseArgs({
  options: { projects: { type: 'string', default: '1000000' }, users: { type: 'string', default: '1000' } },
});
const projectCount = Number(values.projects);
const userCount = Number(values.users);
if (!Number.isInteger(projectCount) || !Number.isInteger(userCount) || userCount < 1 || projectCount < 0) {
  process.stderr.write('usage: npm run -s seed -- [--projects N] [--users N]\n');
  process.exit(2);
}

const ADJECTIVES = ['Frozen', 'Ancient', 'Hidden', 'Crimson', 'Silent', 'Golden', 'Broken', 'Misty', 'Iron', 'Wild'];
const NOUNS = ['Fortress', 'Harbor', 'Outpost', 'Canyon', 'Tower', 'Village', 'Cavern', 'Garden', 'Bridge', 'Arena'];
const GAMES = ['Ark', 'ArkSA'];

const started = Date.now();
const database = openDatabase(loadConfig().database);
const { db } = database;
await migrateToLatest(db);

// Each user has a public key, as an account the service makes has (one shared key, the private half
// not kept, as when a user sets their own): without one, every server started on this data would
// spend its first minutes giving key pairs to these users in the background.
const { publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const users = Array.from({ length: userCount }, (_, index) => ({
  user_id: randomUUID(),
  public_key: publicKey,
  created_at: started,
  username: `seed_${started.toString(36)}_${index}`,
  email: null,
  password_hash: null,
  totp_secret: null,
  private_key: null,
}));
for (let i = 0; i < users.length; i += 500)
  await db
    .insertInto('users')
    .values(users.slice(i, i + 500))
    .execute();

// Rows go in 1,000 per statement and 50,000 per transaction: per-row or per-statement commits
// make a million rows take minutes instead of seconds.
const BATCH = 1000;
const PER_TRANSACTION = 50_000;

function projectRows(from: number, to: number): Schema['projects'][] {
  const rows: Schema['projects'][] = [];
  for (let n = from; n < to; n++) {
    const time = started - (projectCount - n) * 1000;
    // Knuth's multiplicative hash: title words independent of the owner (n % userCount).
    const mix = Math.imul(n, 2654435761) >>> 0;
    rows.push({
      project_id: randomUUID(),
      user_id: users[n % userCount]!.user_id,
      title: `${ADJECTIVES[mix % 10]} ${NOUNS[(mix >>> 8) % 10]} ${n}`,
      description: '',
      game_id: GAMES[n % 2]!,
      revision: 1,
      created_at: time,
      updated_at: time,
    });
  }
  return rows;
}

for (let start = 0; start < projectCount; start += PER_TRANSACTION) {
  const end = Math.min(start + PER_TRANSACTION, projectCount);
  await db.transaction().execute(async (trx) => {
    for (let offset = start; offset < end; offset += BATCH) {
      await trx
        .insertInto('projects')
        .values(projectRows(offset, Math.min(offset + BATCH, end)))
        .execute();
    }
  });
}
await ensureSearchIndexes(db, (message) => process.stderr.write(`${message}\n`));
if (dialectOf(db) === 'postgres') await sql`analyze projects`.execute(db);

const app = await createApplication(db, {
  name: 'Benchmark',
  redirectUris: ['http://127.0.0.1/callback'],
  scopes: ['common', 'users:read'],
  confidential: false,
});
const tokens = await createSession(db, {
  userId: users[0]!.user_id,
  clientId: app.clientId,
  scope: 'common users:read',
});
await database.close();
process.stdout.write(
  `${JSON.stringify({ users: userCount, projects: projectCount, seconds: (Date.now() - started) / 1000, sample: { userId: users[0]!.user_id, accessToken: tokens.accessToken } })}\n`,
);
