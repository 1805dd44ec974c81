import type { FastifyInstance } from 'fastify';
import { authenticateClient, readCredentials } from './client-auth.ts';
import { InvalidRequest, UnsupportedGrantType } from './errors.ts';
import { authorizationCodeGrant } from './grants/authorization-code.ts';
import type { GrantContext } from './grants/context.ts';
import { deviceCodeGrant } from './grants/device-code.ts';
import { refreshTokenGrant } from './grants/refresh-token.ts';
import { readParams } from './params.ts';
import { tokenSchema } from './schemas.ts';
import { tokenResponse, type IssuedTokens } from './sessions.ts';

const GRANTS: Record<string, (context: GrantContext) => Promise<IssuedTokens>> = {
  authorization_code: authorizationCodeGrant,
  refresh_token: refreshTokenGrant,
  device_code: deviceCodeGrant,
  'urn:ietf:params:oauth:grant-type:device_code': deviceCodeGrant,
};

/** POST /v4/login: the token endpoint, for form or JSON bodies. */
export async function tokenRoute(app: FastifyInstance): Promise<void> {
  app.post('/login', { schema: tokenSchema }, async (request, reply) => {
    const params = readParams(request.body);
    if (!params.grant_type) throw new InvalidRequest('grant_type is required');
    const grant = GRANTS[params.grant_type];
    if (!grant) throw new UnsupportedGrantType(`grant_type ${params.grant_type} is not supported`);
    const client = await authenticateClient(app.database.db, readCredentials(request.headers.authorization, params));
    const tokens = await grant({ db: app.database.db, params, client, now: Date.now() });
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(tokenResponse(tokens));
  });
}
