import type { FastifyRequest } from 'fastify';
import { findPublicKey } from '../accounts/user-store.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { keyObjectFor } from './public-key.ts';
import { signedText, verifySignature } from './signature.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The v1 user whose signature this request carries; set by requireSignature. */
    signedBy?: string;
  }
}

const BASIC = /^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i;

/** preHandler for v1 routes that need a signed request (HTTP Basic: user UUID and hex signature). */
export async function requireSignature(request: FastifyRequest): Promise<void> {
  const header = request.headers.authorization;
  if (!header) {
    throw new ApiError(401, 'This request must be signed: send Authorization: Basic base64(user_id:hex_signature)', {
      headers: { 'www-authenticate': 'Basic realm="v1", charset="UTF-8"' },
    });
  }
  const text = signedText(
    request.method,
    request.server.config.publicHost,
    request.raw.url ?? request.url,
    request.rawBody,
  );
  const reject = (reason: string) =>
    new ApiError(403, `Signature rejected: ${reason}`, { details: text.toString('utf8') });

  const match = BASIC.exec(header);
  if (!match) throw reject('Authorization is not HTTP Basic with base64 credentials');
  const credentials = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = credentials.indexOf(':');
  if (colon < 0) throw reject('credentials are not user_id:signature');
  const userId = credentials.slice(0, colon);
  const signature = credentials.slice(colon + 1);
  if (!isUuid(userId)) throw reject('the username is not a user UUID');

  const publicKey = await findPublicKey(request.server.database.db, normalizeUuid(userId));
  if (!publicKey) throw reject('unknown user, or a user without a public key');
  if (!verifySignature(keyObjectFor(publicKey), text, signature)) {
    throw reject('the signature does not match the text in details');
  }
  request.signedBy = normalizeUuid(userId);
}
