import { createHash, randomBytes } from 'node:crypto';

/** A fresh opaque token, code or secret: 32 random bytes, base64url. */
export const newSecret = () => randomBytes(32).toString('base64url');

/** What is stored in place of a token, code or secret. They are random, so a plain hash suffices. */
export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('base64url');
