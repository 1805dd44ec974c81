import { hash, timingSafeEqual } from 'node:crypto';

/** The only challenge method: `plain` would give the code away to whoever sees the request. */
export const CODE_CHALLENGE_METHODS = ['S256'] as const;

export const isCodeChallengeMethod = (value: unknown) => (CODE_CHALLENGE_METHODS as readonly unknown[]).includes(value);

/** S256 challenges are exactly 43 base64url characters (32 bytes, no padding). */
export const isCodeChallenge = (value: unknown): value is string =>
  typeof value === 'string' && /^[A-Za-z0-9_-]{43}$/.test(value);

/** RFC 7636 §4.1: 43–128 unreserved characters. */
export const isCodeVerifier = (value: unknown): value is string =>
  typeof value === 'string' && /^[A-Za-z0-9\-._~]{43,128}$/.test(value);

/** The S256 challenge of a verifier (ASCII by isCodeVerifier, so its UTF-8 bytes are the ASCII ones RFC 7636 hashes). */
export function challengeOf(verifier: string): string {
  return hash('sha256', verifier, 'base64url');
}

/** True when `verifier` is well formed and hashes to `challenge`, compared in constant time. */
export function verifierMatches(verifier: unknown, challenge: string): boolean {
  if (!isCodeVerifier(verifier)) return false;
  const expected = Buffer.from(challenge);
  const actual = Buffer.from(challengeOf(verifier));
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
