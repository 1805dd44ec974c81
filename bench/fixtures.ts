// The data the standard cases read: made through the public API where that is cheap (v1 users,
// mods, engrams, documents, projects) and through the service's own modules where every request
// needs a fresh single-use secret (authorization codes, refresh tokens).
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, randomUUID, sign } from 'node:crypto';
import { createAccount } from '../src/accounts/accounts.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/connection.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { issueAuthorizationCode } from '../src/oauth/authorization-codes.ts';
import { createApplication } from '../src/oauth/clients.ts';
import { createSession } from '../src/oauth/sessions.ts';
import { Secrets as SealingKey } from '../src/secrets/sealed.ts';
import { loadSecretsKey } from '../src/secrets/secrets-key.ts';
import type { FakeWorkshop } from '../test/helpers/workshop.ts';

export const BENCH_HOST = 'bench.example';
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

export interface Secrets {
  clientId: string;
  codeVerifier: string;
  codes: string[];
  refreshTokens: string[];
  accessToken: string;
}

/**
 * The secrets key of the servers a bench process starts: SECRETS_KEY if set, else one made for this
 * process and put in its environment, which every server it starts inherits. The fixtures seal the
 * account's private key under it as the server would: under another key, the server reported the
 * account's key as unreadable at every start, and the bench measured a database no real one is.
 */
function serverSecretsKey(databaseUrl: string): SealingKey {
  process.env.SECRETS_KEY ??= randomBytes(32).toString('base64');
  return new SealingKey(
    loadSecretsKey(loadConfig({ DATABASE_URL: databaseUrl, SECRETS_KEY: process.env.SECRETS_KEY })).key,
  );
}

/** Mints what the OAuth cases spend: one code or refresh token per request. */
export async function mintSecrets(databaseUrl: string, count: number): Promise<Secrets> {
  const sealingKey = serverSecretsKey(databaseUrl);
  const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database);
  const { db } = database;
  try {
    await migrateToLatest(db);
    const tag = randomBytes(4).toString('hex');
    const userId = await createAccount(
      db,
      { username: `bench_${tag}`, email: `bench_${tag}@example.com`, password: 'benchmark password' },
      sealingKey,
    );
    const { clientId } = await createApplication(db, {
      name: 'Benchmark',
      redirectUris: [REDIRECT_URI],
      scopes: ['common', 'users:read'],
      confidential: false,
    });
    const codeVerifier = randomBytes(32).toString('base64url');
    const codeChallenge = createHash('sha256').update(codeVerifier).digest('base64url');
    const grant = { userId, clientId, scope: 'common users:read' };
    const codes: string[] = [];
    const refreshTokens: string[] = [];
    const PER_TRANSACTION = 5_000;
    for (let made = 0; made < count; made += PER_TRANSACTION) {
      await db.transaction().execute(async (trx) => {
        for (let i = made; i < Math.min(count, made + PER_TRANSACTION); i++) {
          codes.push(
            await issueAuthorizationCode(trx, { ...grant, redirectUri: REDIRECT_URI, codeChallenge, deviceId: null }),
          );
          refreshTokens.push((await createSession(trx, grant)).refreshToken);
        }
      });
    }
    // A code lives ten minutes; on a slow host the code exchange comes later than that after the
    // minting. An hour keeps the codes valid for the whole run, as the peer's (bench/peer-oidc-provider.ts).
    await db
      .updateTable('authorization_codes')
      .set({ expires_at: Date.now() + 3_600_000 })
      .where('client_id', '=', clientId)
      .execute();
    const { accessToken } = await createSession(db, grant);
    return { clientId, codeVerifier, codes, refreshTokens, accessToken };
  } finally {
    await database.close();
  }
}

/** A v1 user who signs requests as the desktop client does (RSA, SHA-256 here). */
export class Signer {
  readonly userId = randomUUID();
  private readonly privateKey: KeyObject;
  readonly publicPem: string;

  constructor() {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.privateKey = pair.privateKey;
    this.publicPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  }

  headers(method: string, path: string, body?: string): Record<string, string> {
    const text =
      method === 'GET' ? `GET\nhttps://${BENCH_HOST}${path}` : `${method}\nhttps://${BENCH_HOST}${path}\n${body ?? ''}`;
    const signature = sign('sha256', Buffer.from(text), this.privateKey).toString('hex');
    return {
      authorization: `Basic ${Buffer.from(`${this.userId}:${signature}`).toString('base64')}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    };
  }
}

async function call(baseUrl: string, method: string, path: string, headers: Record<string, string>, body?: string) {
  const response = await fetch(baseUrl + path, { method, headers, body });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return text === '' ? undefined : JSON.parse(text);
}

export interface LegacyData {
  signer: Signer;
  modId: string;
  engramUid: string;
  documentId: string;
}

/** The bench's mod (legacyData), whose engrams keep the paths earlier runs used. */
const BENCH_MOD_ID = '900000001';

/** A v1 user with a confirmed mod (`modId`) holding `engramCount` engrams, and one published document. */
export async function legacyData(
  baseUrl: string,
  workshop: FakeWorkshop,
  engramCount: number,
  modId = BENCH_MOD_ID,
): Promise<LegacyData> {
  const signer = new Signer();
  await call(
    baseUrl,
    'POST',
    '/v1/user.php',
    { 'content-type': 'application/json' },
    JSON.stringify({ user_id: signer.userId, public_key: signer.publicPem }),
  );
  workshop.items.set(modId, { name: 'Benchmark Mod' });
  const registration = JSON.stringify({ mod_id: modId });
  const mod = await call(
    baseUrl,
    'POST',
    '/v1/mod.php',
    signer.headers('POST', '/v1/mod.php', registration),
    registration,
  );
  workshop.items.get(modId)!.description = `Proof: ${mod.confirmation_code}`;
  const confirm = `/v1/mod.php/${modId}?action=confirm`;
  await call(baseUrl, 'GET', confirm, signer.headers('GET', confirm));

  const BATCH = 5_000;
  // Engram paths are unique across mods (their uid is the path's hash): another mod's go elsewhere.
  const folder = modId === BENCH_MOD_ID ? '' : `_${modId}`;
  for (let from = 0; from < engramCount; from += BATCH) {
    const engrams = Array.from({ length: Math.min(BATCH, engramCount - from) }, (_, k) => {
      const n = from + k;
      return {
        path: `/Game/Mods/Bench${folder}/Items/Item_${n}/PrimalItem_Bench_${n}.PrimalItem_Bench_${n}`,
        label: `Bench Item ${n}`,
        mod_id: modId,
        availability: 3,
        can_blueprint: n % 3 !== 0,
      };
    });
    const body = JSON.stringify(engrams);
    await call(baseUrl, 'POST', '/v1/engram.php', signer.headers('POST', '/v1/engram.php', body), body);
  }
  const engramUid = createHash('md5')
    .update(`/Game/Mods/Bench${folder}/Items/Item_0/PrimalItem_Bench_0.PrimalItem_Bench_0`.toLowerCase())
    .digest('hex');

  const documentId = randomUUID();
  const document = JSON.stringify({
    Identifier: documentId,
    Title: 'Benchmark Loot',
    Description: 'A typical document of a few kilobytes',
    Version: 2,
    LootSources: Array.from({ length: 40 }, (_, n) => ({
      Class: `DinoDropInventoryComponent_Bench_${n}_C`,
      Multipliers: { Min: 1, Max: 2 },
    })),
  });
  await call(baseUrl, 'POST', '/v1/document.php', signer.headers('POST', '/v1/document.php', document), document);
  return { signer, modId, engramUid, documentId };
}

/** `count` projects of the caller of `accessToken`, made through the bulk POST; answers one id. */
export async function projects(baseUrl: string, accessToken: string, count: number): Promise<string> {
  const body = JSON.stringify(
    Array.from({ length: count }, (_, n) => ({
      title: `Benchmark Project ${n}`,
      description: 'Made for the benchmark',
    })),
  );
  const result = await call(
    baseUrl,
    'POST',
    '/v4/projects',
    { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
    body,
  );
  return result.created[0].projectId;
}
