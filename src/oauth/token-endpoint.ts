import type { FastifyInstance } from 'fastify';
import { writesInWith } from '../db/dialect.ts';
import { countTokenGrant } from '../http/metrics.ts';
import { authenticateClient, type Credentials, clientProof, readCredentials } from './client-auth.ts';
import { InvalidRequest, OAuthError, UnsupportedGrantType } from './errors.ts';
import { authorizationCodeGrant, exchangeForAuthenticatedClient } from './grants/authorization-code.ts';
import type { FoldedGrantContext, GrantContext } from './grants/context.ts';
import { deviceCodeGrant } from './grants/device-code.ts';
import { refreshTokenGrant, rotateForAuthenticatedClient } from './grants/refresh-token.ts';
import { idTokenFor } from './id-tokens.ts';
import { readParams } from './params.ts';
import { tokenSchema } from './schemas.ts';
import type { IssuedTokens } from './sessions.ts';

type Grant = (context: GrantContext) => Promise<IssuedTokens>;
type FoldedGrant = (context: FoldedGrantContext) => Promise<IssuedTokens | undefined>;

/** The grants, by their standard names (the device grant by RFC 8628's URN); discovery lists them. */
const STANDARD_GRANTS: Record<string, Grant> = {
  authorization_code: authorizationCodeGrant,
  refresh_token: refreshTokenGrant,
  'urn:ietf:params:oauth:grant-type:device_code': deviceCodeGrant,
};

export const GRANT_TYPES = Object.keys(STANDARD_GRANTS);

/**
 * Grants whose usual case, where the dialect runs writes inside WITH (PostgreSQL), is one statement
 * that also authenticates the client: no round trip of its own for the client lookup. When that
 * statement finds anything amiss it changes nothing, and the full path runs as before
 * (authenticateClient, then the grant), so every error, its order and the failed-authentication
 * event stay as they were; only a failure costs that one statement more.
 */
const FOLDED_GRANTS: Record<string, FoldedGrant> = {
  authorization_code: exchangeForAuthenticatedClient,
  refresh_token: rotateForAuthenticatedClient,
};

/** The grant's usual case as FOLDED_GRANTS runs it; undefined when there is none here or it did not happen. */
async function foldedGrant(
  grantType: string,
  { credentials, ...context }: Omit<FoldedGrantContext, 'client'> & { credentials: Credentials },
): Promise<IssuedTokens | undefined> {
  const folded = Object.hasOwn(FOLDED_GRANTS, grantType) ? FOLDED_GRANTS[grantType] : undefined;
  if (!folded || !writesInWith(context.db)) return undefined;
  const client = clientProof(credentials);
  return client && folded({ ...context, client });
}

/** The spec's short name for the device grant is accepted too. */
const GRANTS: Record<string, Grant> = { ...STANDARD_GRANTS, device_code: deviceCodeGrant };

/** POST /v4/login: the token endpoint, for form or JSON bodies. */
export async function tokenRoute(app: FastifyInstance): Promise<void> {
  app.post('/login', { schema: tokenSchema }, async (request, reply) => {
    // The metric's label is one of the known grant names, never the client's text.
    let grantType = 'other';
    try {
      const params = readParams(request.body);
      if (!params.grant_type) throw new InvalidRequest('grant_type is required');
      if (Object.hasOwn(GRANTS, params.grant_type)) grantType = params.grant_type;
      const grant = grantType === 'other' ? undefined : GRANTS[grantType];
      if (!grant) throw new UnsupportedGrantType(`grant_type ${params.grant_type} is not supported`);
      const db = app.database.db;
      const credentials = readCredentials(request.headers.authorization, params);
      const now = Date.now();
      const tokens =
        (await foldedGrant(grantType, { db, params, credentials, now })) ??
        (await grant({ db, params, client: await authenticateClient(db, credentials), now, origin: request }));
      // OpenID Connect: an ID token from the code exchange (with the request's nonce) and each refresh.
      const idToken = tokens.scope.split(' ').includes('openid')
        ? await idTokenFor(db, app.signingKeys, app.config.baseUrl, tokens, grantType === 'authorization_code')
        : undefined;
      countTokenGrant(grantType, 'success');
      return reply
        .header('cache-control', 'no-store')
        .header('pragma', 'no-cache')
        .send({ ...tokenResponse(tokens), ...(idToken === undefined ? {} : { id_token: idToken }) });
    } catch (error) {
      countTokenGrant(grantType, error instanceof OAuthError ? error.error : 'server_error');
      throw error;
    }
  });
}

/** The token response: every field of the spec plus RFC 6749's expires_in. */
function tokenResponse(tokens: IssuedTokens) {
  const now = tokens.issuedAt / 1000;
  return {
    token_type: 'Bearer',
    access_token: tokens.accessToken,
    refresh_token: tokens.refreshToken,
    access_token_expiration: Math.floor(tokens.accessExpiresAt / 1000),
    refresh_token_expiration: Math.floor(tokens.refreshExpiresAt / 1000),
    access_token_expires_in: tokens.accessExpiresAt / 1000 - now,
    refresh_token_expires_in: tokens.refreshExpiresAt / 1000 - now,
    expires_in: Math.round((tokens.accessExpiresAt - tokens.issuedAt) / 1000),
    scope: tokens.scope,
    now,
  };
}
