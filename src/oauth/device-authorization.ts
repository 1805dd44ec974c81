import { randomInt, randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import type { Schema } from '../db/schema.ts';
import { authenticateClient, readCredentials } from './client-auth.ts';
import { InvalidRequest } from './errors.ts';
import { readParams } from './params.ts';
import { isCodeChallenge } from './pkce.ts';
import { deviceSchema } from './schemas.ts';
import { grantableScope } from './scopes.ts';

const USER_CODE_ALPHABET = '23456789ABCDEFGHJKLMNPRSTUVWXYZ';
export const DEVICE_CODE_TTL_SECONDS = 600;
export const DEVICE_POLL_INTERVAL_SECONDS = 5;

/** Eight characters of an alphabet without look-alikes (31^8 ≈ 8.5e11 codes). */
function newUserCode(): string {
  return Array.from({ length: 8 }, () => USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]).join('');
}

export const formatUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

/** What a person typed: any case, hyphen and spaces optional. Undefined when it cannot be a code. */
export function normalizeUserCode(typed: string): string | undefined {
  const code = typed.toUpperCase().replace(/[\s-]/g, '');
  return code.length === 8 && [...code].every((c) => USER_CODE_ALPHABET.includes(c)) ? code : undefined;
}

async function insertDeviceAuthorization(db: Kysely<Schema>, values: { clientId: string; scope: string; codeChallenge: string }, now: number) {
  for (let attempt = 0; ; attempt++) {
    const row = {
      device_code: randomUUID(),
      user_code: newUserCode(),
      client_id: values.clientId,
      scope: values.scope,
      code_challenge: values.codeChallenge,
      status: 'pending' as const,
      user_id: null,
      interval_seconds: DEVICE_POLL_INTERVAL_SECONDS,
      last_polled_at: null,
      expires_at: now + DEVICE_CODE_TTL_SECONDS * 1000,
    };
    try {
      await db.insertInto('device_authorizations').values(row).execute();
      return row;
    } catch (error) {
      // A user code still in use (expired rows are swept out first): draw another.
      if (!isUniqueViolation(error) || attempt >= 4) throw error;
      await db.deleteFrom('device_authorizations').where('expires_at', '<', now).execute();
    }
  }
}

/** POST /v4/device: starts a device login (RFC 8628 §3.1, with PKCE). */
export async function deviceAuthorizationRoute(app: FastifyInstance): Promise<void> {
  app.post('/device', { schema: deviceSchema }, async (request, reply) => {
    const params = readParams(request.body);
    const client = await authenticateClient(app.database.db, readCredentials(request.headers.authorization, params));
    const scope = grantableScope(params.scope ?? 'common', client.scopes);
    if (params.code_challenge_method !== 'S256') throw new InvalidRequest('code_challenge_method must be S256');
    if (!isCodeChallenge(params.code_challenge)) throw new InvalidRequest('code_challenge must be the 43-character base64url SHA-256 of the code_verifier');
    const row = await insertDeviceAuthorization(app.database.db, { clientId: client.clientId, scope, codeChallenge: params.code_challenge }, Date.now());
    const verificationUri = `${app.config.baseUrl}/device`;
    return reply
      .code(201)
      .header('cache-control', 'no-store')
      .send({
        device_code: row.device_code,
        user_code: formatUserCode(row.user_code),
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${formatUserCode(row.user_code)}`,
        interval: DEVICE_POLL_INTERVAL_SECONDS,
        expires_in: DEVICE_CODE_TTL_SECONDS,
      });
  });
}
