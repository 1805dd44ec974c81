import { generateKeyPairSync, type KeyObject, randomUUID, sign } from 'node:crypto';
import { TEST_HOST } from './server.ts';

export type Algorithm = 'rsa-sha1' | 'rsa-sha256' | 'ed25519';

export interface TestUser {
  userId: string;
  privateKey: KeyObject;
  /** The public key as SPKI PEM. */
  publicPem: string;
  algorithm: Algorithm;
}

// RSA key generation is slow; tests reuse a small pool of key pairs.
const rsaPool: Array<{ privateKey: KeyObject; publicKey: KeyObject }> = [];

export function rsaKeyPair(index = 0) {
  while (rsaPool.length <= index) rsaPool.push(generateKeyPairSync('rsa', { modulusLength: 2048 }));
  return rsaPool[index]!;
}

export function newUser(algorithm: Algorithm = 'rsa-sha256', keyIndex = 0): TestUser {
  const pair = algorithm === 'ed25519' ? generateKeyPairSync('ed25519') : rsaKeyPair(keyIndex);
  return {
    userId: randomUUID(),
    privateKey: pair.privateKey,
    publicPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    algorithm,
  };
}

/** The text a v1 client signs, written out independently of the server's code. */
export function textToSign(method: string, pathAndQuery: string, body = ''): string {
  const url = `https://${TEST_HOST}${pathAndQuery}`;
  return method === 'GET' ? `GET\n${url}` : `${method}\n${url}\n${body}`;
}

export function signatureHex(user: TestUser, text: string): string {
  const data = Buffer.from(text);
  if (user.algorithm === 'ed25519') return sign(null, data, user.privateKey).toString('hex');
  return sign(user.algorithm === 'rsa-sha1' ? 'sha1' : 'sha256', data, user.privateKey).toString('hex');
}

export function basicAuth(userId: string, signature: string): string {
  return `Basic ${Buffer.from(`${userId}:${signature}`).toString('base64')}`;
}

/** Headers for a signed v1 request (Authorization, and Content-Type when a body is given). */
export function signedHeaders(
  user: TestUser,
  method: string,
  pathAndQuery: string,
  body?: string,
  contentType = 'application/json',
) {
  const headers: Record<string, string> = {
    authorization: basicAuth(user.userId, signatureHex(user, textToSign(method, pathAndQuery, body ?? ''))),
  };
  if (body !== undefined) headers['content-type'] = contentType;
  return headers;
}
