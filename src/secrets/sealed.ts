import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets kept at rest (users' private keys), sealed with AES-256-GCM under SECRETS_KEY.
 *
 * A sealed value is `v1.<key id>.<iv>.<ciphertext>.<tag>` (base64url parts): a version, so the
 * format can change; the key's id (the first 8 bytes of its SHA-256), so a value sealed under
 * another key is told apart from a tampered one; a random 96-bit IV per value; the 128-bit tag.
 * `context` is authenticated but not stored (GCM's associated data): a value opens only for the
 * context it was sealed for (e.g. its user and public key), so it cannot be moved to another row.
 */
export class Secrets {
  readonly keyId: string;
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the secrets key must be 32 bytes');
    this.#key = Buffer.from(key);
    this.keyId = createHash('sha256').update(key).digest().subarray(0, 8).toString('base64url');
    opened.set(this.keyId, this);
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [
      'v1',
      this.keyId,
      iv.toString('base64url'),
      ciphertext.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
    ].join('.');
  }

  /** The plaintext, or undefined when the value is not one sealed by this key for this context. */
  open(sealed: string, context: string): string | undefined {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== 'v1' || parts[1] !== this.keyId) return undefined;
    const [iv, ciphertext, tag] = parts.slice(2).map((part) => Buffer.from(part, 'base64url'));
    if (iv!.length !== 12 || tag!.length !== 16) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, iv!, { authTagLength: 16 });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tag!);
      return Buffer.concat([decipher.update(ciphertext!), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }

  /** Never shows the key (a log line or an inspection of the app). */
  toJSON(): string {
    return `[Secrets ${this.keyId}]`;
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toJSON();
  }
}

/**
 * Every key opened in this process, by id. The REST engine turns a row into JSON with per-column
 * functions that see no app (src/classes/user.ts), so they find the key here from the value
 * itself; a process normally opens one key (tests open several, one per server).
 */
const opened = new Map<string, Secrets>();

/** Opens a sealed value with whichever key of this process sealed it; undefined when none can. */
export function openSealed(sealed: string, context: string): string | undefined {
  const keyId = sealed.split('.', 2)[1];
  return keyId === undefined ? undefined : opened.get(keyId)?.open(sealed, context);
}
