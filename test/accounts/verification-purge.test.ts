/** One-time codes and links are purged once expired (src/accounts/purge.ts): 15 minutes, 24 hours for an e-mail change. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { issueRequest } from '../../src/accounts/verification-requests.ts';
import { EXPIRING_ROWS } from '../../src/app.ts';
import { purgeExpired } from '../../src/db/purge.ts';
import { newAccount } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server?.close());

test('expired requests are purged, live ones stay', async () => {
  const db = server.app.database.db;
  const account = await newAccount(server);
  const now = Date.now();
  await issueRequest(db, { purpose: 'sign_up', address: 'purge-me@example.com', userId: null }, now);
  await issueRequest(db, { purpose: 'reset', address: account.email, userId: account.userId }, now);
  await issueRequest(db, { purpose: 'email_change', address: 'new-home@example.com', userId: account.userId }, now);
  const left = async () =>
    (await db.selectFrom('verification_requests').select('purpose').orderBy('purpose').execute()).map(
      (row) => row.purpose,
    );
  await purgeExpired(db, EXPIRING_ROWS, now + 14 * 60_000);
  assert.deepEqual(await left(), ['email_change', 'reset', 'sign_up']);
  const purged = await purgeExpired(db, EXPIRING_ROWS, now + 16 * 60_000);
  assert.equal(purged.verification_requests, 2);
  assert.deepEqual(await left(), ['email_change']);
  await purgeExpired(db, EXPIRING_ROWS, now + 24 * 60 * 60_000 + 1);
  assert.deepEqual(await left(), []);
});
