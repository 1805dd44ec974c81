import { hash, randomBytes } from 'node:crypto';

// Random bytes are drawn 2 KiB at a time (as node's randomUUID keeps a cache): one call into the
// system's generator per 64 secrets instead of one each, which was 4 % of a token grant's
// profile. Bytes handed out are zeroed, so the buffer never holds a secret already issued.
const SECRET_BYTES = 32;
const POOL_BYTES = 64 * SECRET_BYTES;
let pool = Buffer.alloc(0);
let offset = 0;

/** A fresh opaque token, code or secret: 32 random bytes, base64url. */
export function newSecret(): string {
  if (offset + SECRET_BYTES > pool.length) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  const secret = pool.toString('base64url', offset, offset + SECRET_BYTES);
  pool.fill(0, offset, offset + SECRET_BYTES);
  offset += SECRET_BYTES;
  return secret;
}

/**
 * What is stored in place of a token, code or secret. They are random, so a plain hash suffices.
 * (`hash` is one call into OpenSSL where createHash().update().digest() is three and an object:
 * a third of the time, and a v4 request hashes its bearer token.)
 */
export const hashSecret = (secret: string) => hash('sha256', secret, 'base64url');
