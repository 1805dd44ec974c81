// The argon2 addon is loaded on the first hash or verification, not at start (issue 12: memory).
const argon2 = () => import('@node-rs/argon2');

// OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane).
// algorithm 2 is Argon2id (a const enum in the typings, which verbatimModuleSyntax cannot import).
const OPTIONS = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 1024;

export async function hashPassword(password: string): Promise<string> {
  return (await argon2()).hash(password, OPTIONS);
}

// Verifying against this when the account does not exist keeps the answer time the same, so
// the timing does not tell which usernames exist. It is the hash, with these OPTIONS, of 32 random
// bytes that were thrown away (written once instead of hashing a decoy at every start).
const DECOY = '$argon2id$v=19$m=19456,t=2,p=1$rsQf2hxRsjP0CXtyBY7z7Q$TdMrf/J4WnO1CC8PgiuWH6WCagpz0lDdKU3zPVy2grs';

export async function verifyPassword(passwordHash: string | null | undefined, password: string): Promise<boolean> {
  if (password.length > MAX_PASSWORD_LENGTH) return false;
  const { verify } = await argon2();
  if (!passwordHash) {
    await verify(DECOY, password).catch(() => false);
    return false;
  }
  return verify(passwordHash, password).catch(() => false);
}
