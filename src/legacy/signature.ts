import { type KeyObject, verify } from 'node:crypto';

/**
 * The text a v1 client signs: the method, then https:// + the service's canonical host + the
 * path and query exactly as sent, then (for every method but GET) the raw body, even if empty.
 */
export function signedText(method: string, canonicalHost: string, rawUrl: string, body: Buffer | undefined): Buffer {
  const head = `${method.toUpperCase()}\nhttps://${canonicalHost}${rawUrl}`;
  if (method.toUpperCase() === 'GET') return Buffer.from(head);
  return Buffer.concat([Buffer.from(`${head}\n`), body ?? Buffer.alloc(0)]);
}

/**
 * RSA keys verify PKCS#1 v1.5 signatures over SHA-256 or SHA-1 (the existing desktop client
 * signs with SHA-1); Ed25519 keys verify pure Ed25519.
 */
export function verifySignature(key: KeyObject, text: Buffer, signatureHex: string): boolean {
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(signatureHex)) return false;
  const signature = Buffer.from(signatureHex, 'hex');
  try {
    if (key.asymmetricKeyType === 'ed25519') return verify(null, text, key, signature);
    return verify('sha256', text, key, signature) || verify('sha1', text, key, signature);
  } catch {
    return false;
  }
}
