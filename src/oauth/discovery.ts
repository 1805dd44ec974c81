import type { FastifyInstance } from 'fastify';
import { RESPONSE_TYPES } from './authorize.ts';
import { CLIENT_AUTH_METHODS } from './client-auth.ts';
import { ID_TOKEN_CLAIMS } from './id-tokens.ts';
import { PROMPT_VALUES } from './oidc-request.ts';
import { CODE_CHALLENGE_METHODS } from './pkce.ts';
import { discoverySchema, openIdConfigurationSchema } from './schemas.ts';
import { SCOPES } from './scopes.ts';
import { SIGNING_ALGS } from './signing-algs.ts';
import { GRANT_TYPES } from './token-endpoint.ts';

/**
 * The authorization server metadata (RFC 8414), built from BASE_URL and from the modules that
 * implement each capability, so it cannot drift from what the endpoints accept. The OpenID
 * Provider metadata is this document plus OpenID Connect's fields: one source for both.
 */
export function authorizationServerMetadata(baseUrl: string) {
  return {
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}/v4/login`,
    token_endpoint: `${baseUrl}/v4/login`,
    device_authorization_endpoint: `${baseUrl}/v4/device`,
    revocation_endpoint: `${baseUrl}/v4/revoke`,
    introspection_endpoint: `${baseUrl}/v4/introspect`,
    jwks_uri: `${baseUrl}/v4/jwks`,
    scopes_supported: Object.keys(SCOPES),
    response_types_supported: [...RESPONSE_TYPES],
    response_modes_supported: ['query'],
    grant_types_supported: GRANT_TYPES,
    code_challenge_methods_supported: [...CODE_CHALLENGE_METHODS],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    introspection_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${baseUrl}/v4/docs`,
  };
}

/** OpenID Provider metadata (OpenID Connect Discovery 1.0 §3): the RFC 8414 document and OpenID Connect's fields. */
export function openIdProviderMetadata(baseUrl: string) {
  return {
    ...authorizationServerMetadata(baseUrl),
    userinfo_endpoint: `${baseUrl}/v4/userinfo`,
    end_session_endpoint: `${baseUrl}/v4/logout`,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [...SIGNING_ALGS],
    claims_supported: [...ID_TOKEN_CLAIMS],
    prompt_values_supported: [...PROMPT_VALUES],
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
  };
}

/**
 * GET /.well-known/oauth-authorization-server and /.well-known/openid-configuration: what a client
 * configured by discovery reads.
 */
export async function discoveryRoute(app: FastifyInstance): Promise<void> {
  const metadata = authorizationServerMetadata(app.config.baseUrl);
  const openIdMetadata = openIdProviderMetadata(app.config.baseUrl);
  app.get('/.well-known/oauth-authorization-server', { schema: discoverySchema }, async (_request, reply) =>
    // It changes only with a new deployment; an hour of caching spares clients a request per sign-in.
    reply.header('cache-control', 'public, max-age=3600').send(metadata),
  );
  app.get('/.well-known/openid-configuration', { schema: openIdConfigurationSchema }, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=3600').send(openIdMetadata),
  );
}
