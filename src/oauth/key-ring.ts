import { type CryptoKey, importPKCS8, type JWK, type JWTPayload, jwtVerify, SignJWT } from 'jose';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import type { Secrets } from '../secrets/sealed.ts';
import type { SigningAlg } from './signing-algs.ts';
import { ensureSigningKeys, type PublishedKey, publishedKeys, readKeyRows, sealingContext } from './signing-keys.ts';

/** How often an instance reads the keys again, so a rotation elsewhere is seen within a minute. */
export const KEY_RELOAD_INTERVAL_MS = 30_000;

/**
 * This instance's view of the signing keys: read from the database at most once per reload
 * interval (not per token), private keys opened and imported once each and kept as CryptoKeys.
 * Which key is current is worked out at each use, so a key announced earlier starts signing on
 * time without a reload.
 */
export class KeyRing {
  readonly #db: Kysely<Schema>;
  readonly #secrets: Secrets;
  readonly #reloadMs: number;
  #rows: Awaited<ReturnType<typeof readKeyRows>> = [];
  #loadedAt = Number.NEGATIVE_INFINITY;
  #loading: Promise<void> | undefined;
  readonly #privateKeys = new Map<string, Promise<CryptoKey>>();

  constructor(db: Kysely<Schema>, secrets: Secrets, reloadMs = KEY_RELOAD_INTERVAL_MS) {
    this.#db = db;
    this.#secrets = secrets;
    this.#reloadMs = reloadMs;
  }

  /** Reads the keys now (creating the first ones on a new database). */
  reload(): Promise<void> {
    this.#loading ??= (async () => {
      try {
        const now = Date.now();
        if (!this.#rows.length) await ensureSigningKeys(this.#db, this.#secrets, now);
        this.#rows = await readKeyRows(this.#db);
        this.#loadedAt = now;
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  /** Reloads unless that was done in the last second: a stream of made-up kids cannot flood the database. */
  async #reloadSoon(now: number): Promise<void> {
    if (now - this.#loadedAt >= 1000) await this.reload();
  }

  async #fresh(now: number): Promise<void> {
    if (now - this.#loadedAt >= this.#reloadMs) await this.reload();
  }

  /** The keys the JWKS publishes now. */
  async published(now = Date.now()): Promise<PublishedKey[]> {
    await this.#fresh(now);
    return publishedKeys(this.#rows, now);
  }

  /** The JWK Set: public keys only. */
  async jwks(now = Date.now()): Promise<{ keys: JWK[] }> {
    return { keys: (await this.published(now)).map((key) => key.publicJwk) };
  }

  /** Signs `payload` as a JWT with the current key of `alg` (`typ` for logout tokens and the like). */
  async sign(payload: JWTPayload, alg: SigningAlg, typ = 'JWT', now = Date.now()): Promise<string> {
    let key = (await this.published(now)).find((k) => k.alg === alg && k.state === 'current');
    if (!key) {
      await this.#reloadSoon(now);
      key = publishedKeys(this.#rows, now).find((k) => k.alg === alg && k.state === 'current');
      if (!key) throw new Error(`no signing key for ${alg}`);
    }
    return new SignJWT(payload).setProtectedHeader({ alg, kid: key.kid, typ }).sign(await this.#privateKey(key));
  }

  #privateKey(key: PublishedKey): Promise<CryptoKey> {
    let imported = this.#privateKeys.get(key.kid);
    if (!imported) {
      const pem = this.#secrets.open(key.sealedPrivateKey, sealingContext(key.kid));
      if (pem === undefined)
        return Promise.reject(new Error(`the signing key ${key.kid} was sealed under another secrets key`));
      imported = importPKCS8(pem, key.alg);
      imported.catch(() => this.#privateKeys.delete(key.kid));
      this.#privateKeys.set(key.kid, imported);
    }
    return imported;
  }

  /**
   * The payload of a JWT this server signed with a key it publishes, expired or not (an
   * id_token_hint may be an old ID token); undefined for anything else: a bad signature, an
   * unknown key, another issuer. A kid not known here is looked up once more in the database
   * (a key created by another instance a moment ago).
   */
  async verifyOwn(jwt: string, issuer: string, now = Date.now()): Promise<JWTPayload | undefined> {
    let reloaded = false;
    for (;;) {
      try {
        const keys = await this.published(now);
        const { payload } = await jwtVerify(
          jwt,
          async (header) => {
            const key = keys.find((k) => k.kid === header.kid && k.alg === header.alg);
            if (!key) throw new UnknownKey();
            return key.publicJwk;
          },
          { issuer, algorithms: [...new Set(keys.map((k) => k.alg))], currentDate: new Date(0) },
        );
        return payload;
      } catch (error) {
        if (error instanceof UnknownKey && !reloaded) {
          reloaded = true;
          await this.#reloadSoon(now);
          continue;
        }
        return undefined;
      }
    }
  }
}

class UnknownKey extends Error {}

declare module 'fastify' {
  interface FastifyInstance {
    /** The keys ID tokens are signed with, as this instance last read them. */
    signingKeys: KeyRing;
  }
}
