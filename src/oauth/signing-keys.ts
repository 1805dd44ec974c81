import { randomBytes } from 'node:crypto';
import { exportJWK, exportPKCS8, generateKeyPair, type JWK } from 'jose';
import type { Kysely } from 'kysely';
import type { Schema, SigningKeysTable } from '../db/schema.ts';
import type { Secrets } from '../secrets/sealed.ts';
import { ACCESS_TOKEN_TTL_MS } from './sessions.ts';
import { SIGNING_ALGS, type SigningAlg } from './signing-algs.ts';

/**
 * The keys ID tokens (and logout tokens) are signed with (table signing_keys), one series per
 * algorithm. A key signs from its signs_from until a newer key of its algorithm does; a rotation
 * publishes new keys an hour before they sign (ROTATION_NOTICE_MS), so relying parties that cache
 * the JWKS have them by then. A key that stopped signing stays published while any token it
 * signed may still be checked (SIGNED_TOKEN_TTL_MS), then is left out of the JWKS.
 */

export const ROTATION_NOTICE_MS = 60 * 60 * 1000;
/** The longest any signed token lives: an ID token, which expires with its access token. */
export const SIGNED_TOKEN_TTL_MS = ACCESS_TOKEN_TTL_MS;

export type KeyState = 'next' | 'current' | 'retired';

export interface PublishedKey {
  kid: string;
  alg: SigningAlg;
  state: KeyState;
  publicJwk: JWK;
  /** The sealed PKCS#8 private key; opened only by whoever signs with it. */
  sealedPrivateKey: string;
  createdAt: number;
  signsFrom: number;
}

/** The additional data a private key is sealed for: it opens only as the key of this kid. */
export const sealingContext = (kid: string) => `signing key ${kid}`;

async function newKeyRow(secrets: Secrets, alg: SigningAlg, signsFrom: number, now: number): Promise<SigningKeysTable> {
  const { publicKey, privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}),
  });
  const kid = `${alg.toLowerCase()}-${randomBytes(12).toString('base64url')}`;
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return {
    kid,
    alg,
    public_jwk: JSON.stringify(publicJwk),
    private_key: secrets.seal(await exportPKCS8(privateKey), sealingContext(kid)),
    created_at: now,
    signs_from: signsFrom,
  };
}

export async function readKeyRows(db: Kysely<Schema>): Promise<SigningKeysTable[]> {
  const rows = await db.selectFrom('signing_keys').selectAll().execute();
  return rows.map((row) => ({ ...row, created_at: Number(row.created_at), signs_from: Number(row.signs_from) }));
}

/**
 * The keys to publish at `now`, each with its state: per algorithm the newest key whose time has
 * come is current, newer ones are next, and older ones retired, published until every token they
 * signed has expired. (Keys created at the same instant by two instances starting at once are
 * ordered by kid; the loser is retired at once and published for a while, harmlessly.)
 */
export function publishedKeys(rows: readonly SigningKeysTable[], now: number): PublishedKey[] {
  const published: PublishedKey[] = [];
  for (const alg of SIGNING_ALGS) {
    const series = rows
      .filter((row) => row.alg === alg)
      .sort((a, b) => a.signs_from - b.signs_from || (a.kid < b.kid ? -1 : 1));
    let currentIndex = -1;
    series.forEach((row, index) => {
      if (row.signs_from <= now) currentIndex = index;
    });
    series.forEach((row, index) => {
      let state: KeyState;
      if (index > currentIndex) state = 'next';
      else if (index === currentIndex) state = 'current';
      else {
        // It stopped signing when its successor started.
        if (series[index + 1]!.signs_from + SIGNED_TOKEN_TTL_MS <= now) return;
        state = 'retired';
      }
      published.push({
        kid: row.kid,
        alg,
        state,
        publicJwk: JSON.parse(row.public_jwk) as JWK,
        sealedPrivateKey: row.private_key,
        createdAt: row.created_at,
        signsFrom: row.signs_from,
      });
    });
  }
  return published;
}

/** Gives every algorithm without a key that signs by now one that signs at once (the first start). */
export async function ensureSigningKeys(db: Kysely<Schema>, secrets: Secrets, now = Date.now()): Promise<boolean> {
  const rows = await readKeyRows(db);
  const missing = SIGNING_ALGS.filter((alg) => !rows.some((row) => row.alg === alg && row.signs_from <= now));
  if (missing.length === 0) return false;
  const created = await Promise.all(missing.map((alg) => newKeyRow(secrets, alg, now, now)));
  await db.insertInto('signing_keys').values(created).execute();
  return true;
}

/**
 * A new key for every algorithm at once: published now, signing after ROTATION_NOTICE_MS, or at
 * once (`immediately`: a key is compromised). The keys they replace retire when these start.
 */
export async function rotateSigningKeys(
  db: Kysely<Schema>,
  secrets: Secrets,
  immediately: boolean,
  now = Date.now(),
): Promise<SigningKeysTable[]> {
  await ensureSigningKeys(db, secrets, now);
  const signsFrom = immediately ? now : now + ROTATION_NOTICE_MS;
  const created = await Promise.all(SIGNING_ALGS.map((alg) => newKeyRow(secrets, alg, signsFrom, now)));
  await db.insertInto('signing_keys').values(created).execute();
  return created;
}
