import type { FastifyInstance } from 'fastify';
import { authenticateClient, readCredentials } from './client-auth.ts';
import {
  DEVICE_CODE_TTL_SECONDS,
  DEVICE_POLL_INTERVAL_SECONDS,
  formatUserCode,
  insertDeviceAuthorization,
} from './device-authorizations.ts';
import { InvalidRequest } from './errors.ts';
import { readParams } from './params.ts';
import { isCodeChallenge, isCodeChallengeMethod } from './pkce.ts';
import { deviceSchema } from './schemas.ts';
import { grantableScope } from './scopes.ts';

/** POST /v4/device: starts a device login (RFC 8628 §3.1, with PKCE). */
export async function deviceAuthorizationRoute(app: FastifyInstance): Promise<void> {
  app.post('/device', { schema: deviceSchema }, async (request, reply) => {
    const params = readParams(request.body);
    const client = await authenticateClient(app.database.db, readCredentials(request.headers.authorization, params));
    const scope = grantableScope(params.scope ?? 'common', client.scopes);
    if (!isCodeChallengeMethod(params.code_challenge_method))
      throw new InvalidRequest('code_challenge_method must be S256');
    if (!isCodeChallenge(params.code_challenge))
      throw new InvalidRequest('code_challenge must be the 43-character base64url SHA-256 of the code_verifier');
    const row = await insertDeviceAuthorization(
      app.database.db,
      { clientId: client.clientId, scope, codeChallenge: params.code_challenge },
      Date.now(),
    );
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
