// Reading the public keys users sign with: the v1 API's users and the v4 User class both store a
// key in the one form normalizePublicKey answers.
import { createPublicKey, type KeyObject } from 'node:crypto';

export class InvalidPublicKeyError extends Error {}

const MIN_RSA_BITS = 1024;

/**
 * Accepts a public key as PEM (SPKI or PKCS#1) or hex-encoded DER (SPKI or PKCS#1) and returns
 * it as SPKI PEM, the one stored and emitted form. Only RSA and Ed25519 keys are accepted.
 */
export function normalizePublicKey(input: string): string {
  return exportSpki(parse(input.trim()));
}

function parse(text: string): KeyObject {
  try {
    if (text.startsWith('-----BEGIN')) return checkType(createPublicKey(text));
    if (/^(?:[0-9a-fA-F]{2})+$/.test(text)) {
      const der = Buffer.from(text, 'hex');
      try {
        return checkType(createPublicKey({ key: der, format: 'der', type: 'spki' }));
      } catch {
        return checkType(createPublicKey({ key: der, format: 'der', type: 'pkcs1' }));
      }
    }
  } catch (error) {
    if (error instanceof InvalidPublicKeyError) throw error;
    throw new InvalidPublicKeyError('public_key is not a readable RSA or Ed25519 public key');
  }
  throw new InvalidPublicKeyError('public_key must be PEM or hex-encoded DER');
}

function checkType(key: KeyObject): KeyObject {
  if (key.asymmetricKeyType === 'ed25519') return key;
  if (key.asymmetricKeyType === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) throw new InvalidPublicKeyError(`RSA keys must have at least ${MIN_RSA_BITS} bits`);
    return key;
  }
  throw new InvalidPublicKeyError(`public_key has unsupported type ${key.asymmetricKeyType}; use RSA or Ed25519`);
}

function exportSpki(key: KeyObject): string {
  return key.export({ type: 'spki', format: 'pem' }).toString();
}
