import { Type } from 'typebox';
import { errorResponses } from '../http/openapi-schemas.ts';

/**
 * OpenAPI descriptions of the OAuth endpoints. Every field is an optional string: the
 * endpoints check parameters themselves, so that each problem gets its RFC 6749 error code.
 */
const params = (names: Record<string, string>) =>
  Type.Object(
    Object.fromEntries(
      Object.entries(names).map(([name, description]) => [name, Type.Optional(Type.String({ description }))]),
    ),
    { additionalProperties: true },
  );

const oauthError = Type.Object(
  { error: Type.String({ description: 'RFC 6749 §5.2 / RFC 8628 error code' }), error_description: Type.String() },
  { description: 'OAuth error' },
);

const tokenResponse = Type.Object({
  token_type: Type.Literal('Bearer'),
  access_token: Type.String(),
  refresh_token: Type.String(),
  access_token_expiration: Type.Integer({ description: 'Unix time (s)' }),
  refresh_token_expiration: Type.Integer({ description: 'Unix time (s)' }),
  access_token_expires_in: Type.Number(),
  refresh_token_expires_in: Type.Number(),
  expires_in: Type.Integer({ description: 'RFC 6749: seconds until the access token expires' }),
  scope: Type.String(),
  now: Type.Number({ description: 'Server Unix time (s)' }),
  id_token: Type.Optional(
    Type.String({
      description: 'OpenID Connect: a signed JWT, when the scope holds openid (code exchange and refresh)',
    }),
  ),
});

const consumes = ['application/x-www-form-urlencoded', 'application/json'];

export const authorizeSchema = {
  tags: ['Login'],
  operationId: 'authorize',
  security: [],
  summary: 'Start a browser sign-in (authorization endpoint)',
  querystring: params({
    client_id: 'Application UUID',
    scope: 'Space-separated scopes',
    redirect_uri: 'A registered redirect URI, exactly',
    state: 'Random value, returned unchanged',
    response_type: 'code',
    code_challenge: 'BASE64URL(SHA-256(code_verifier)), 43 characters',
    code_challenge_method: 'S256',
    device_id: 'Optional device identifier for trusted-device two-step verification',
    no_redirect: 'true: answer 200 {"login_url"} instead of a 302',
    nonce: 'OpenID Connect: echoed in the ID token; at most 255 characters',
    prompt: 'OpenID Connect: none, login, consent (none alone)',
    max_age: 'OpenID Connect: seconds; an older sign-in is asked again',
    login_hint: 'OpenID Connect: pre-fills the username',
    id_token_hint: 'OpenID Connect: an ID token this server issued to the application',
  }),
  response: {
    200: Type.Object({ login_url: Type.String() }),
    302: Type.Null({ description: 'To the login page; or back to redirect_uri with error and state' }),
    400: oauthError,
  },
};

export const tokenSchema = {
  tags: ['Login'],
  operationId: 'token',
  // Public clients send only client_id; confidential ones authenticate in the body or with Basic.
  security: [{}, { clientSecretBasic: [] }] as Array<Record<string, string[]>>,
  summary: 'Token endpoint: authorization_code, refresh_token and device_code grants',
  consumes,
  body: params({
    grant_type: 'authorization_code, refresh_token, device_code or urn:ietf:params:oauth:grant-type:device_code',
    client_id: 'Application UUID',
    client_secret: 'Confidential clients (or HTTP Basic)',
    code: 'authorization_code grant',
    redirect_uri: 'authorization_code grant',
    code_verifier: 'authorization_code and device_code grants',
    device_id: 'authorization_code grant, as at the start',
    device_code: 'device_code grant',
    refresh_token: 'refresh_token grant',
    scope: 'refresh_token grant: omitted or the original scope',
  }),
  response: { 200: tokenResponse, 400: oauthError, 401: oauthError },
};

export const deviceSchema = {
  tags: ['Login'],
  operationId: 'startDeviceAuthorization',
  security: [],
  summary: 'Start a device sign-in (RFC 8628, with PKCE)',
  consumes,
  body: params({
    client_id: 'Application UUID',
    client_secret: 'Confidential clients (or HTTP Basic)',
    scope: 'Space-separated scopes',
    code_challenge: 'BASE64URL(SHA-256(code_verifier)), 43 characters',
    code_challenge_method: 'S256',
  }),
  response: {
    201: Type.Object({
      device_code: Type.String({ format: 'uuid' }),
      user_code: Type.String({ description: 'XXXX-XXXX' }),
      verification_uri: Type.String(),
      verification_uri_complete: Type.String(),
      interval: Type.Integer(),
      expires_in: Type.Number(),
    }),
    400: oauthError,
    401: oauthError,
  },
};

export const revocationSchema = {
  tags: ['Login'],
  operationId: 'revokeToken',
  // Public clients send only client_id; confidential ones authenticate in the body or with Basic.
  security: [{}, { clientSecretBasic: [] }] as Array<Record<string, string[]>>,
  summary: 'Revoke a token (RFC 7009): either token of a session ends the whole session',
  description:
    'Client authentication as at the token endpoint. 200 with an empty body whether or not anything was revoked: ' +
    'unknown, expired and already revoked tokens, and tokens of other clients (which stay valid), are all 200.',
  consumes,
  body: params({
    token: 'The access token or refresh token',
    token_type_hint: 'Optional: access_token or refresh_token (both are looked up anyway)',
    client_id: 'Application UUID',
    client_secret: 'Confidential clients (or HTTP Basic)',
  }),
  response: {
    200: Type.Null({ description: 'Revoked, or nothing to revoke (empty body)' }),
    400: oauthError,
    401: oauthError,
  },
};

export const introspectionSchema = {
  tags: ['Login'],
  operationId: 'introspectToken',
  // Confidential clients only: client_secret in the body or HTTP Basic.
  security: [{ clientSecretBasic: [] }] as Array<Record<string, string[]>>,
  summary: 'Introspect a token (RFC 7662); confidential clients only',
  description:
    'A public client is invalid_client (401). Only a live access or refresh token issued to the calling client is active; ' +
    'anything else, including another client\'s token, is {"active":false}.',
  consumes,
  body: params({
    token: 'The access token or refresh token',
    token_type_hint: 'Optional: access_token or refresh_token (both are looked up anyway)',
    client_id: 'Application UUID',
    client_secret: 'The client secret (or HTTP Basic)',
  }),
  response: {
    200: Type.Object(
      {
        active: Type.Boolean(),
        scope: Type.Optional(Type.String({ description: 'Space-separated scopes' })),
        client_id: Type.Optional(Type.String({ format: 'uuid' })),
        username: Type.Optional(Type.String()),
        sub: Type.Optional(Type.String({ format: 'uuid', description: 'The user id' })),
        token_type: Type.Optional(Type.Literal('Bearer')),
        exp: Type.Optional(
          Type.Integer({ description: 'Unix time (s) the token expires (for a refresh token, the refresh expiry)' }),
        ),
        iat: Type.Optional(Type.Integer({ description: 'Unix time (s) the token was issued' })),
      },
      { description: 'Every field but active is present only when active is true' },
    ),
    400: oauthError,
    401: oauthError,
  },
};

const stringList = Type.Array(Type.String());

const serverMetadataFields = {
  issuer: Type.String({ description: 'BASE_URL; also the iss of every authorization response (RFC 9207)' }),
  authorization_endpoint: Type.String(),
  token_endpoint: Type.String(),
  device_authorization_endpoint: Type.String(),
  revocation_endpoint: Type.String(),
  introspection_endpoint: Type.String(),
  jwks_uri: Type.String({ description: 'The public keys ID tokens are signed with' }),
  scopes_supported: stringList,
  response_types_supported: stringList,
  response_modes_supported: stringList,
  grant_types_supported: stringList,
  code_challenge_methods_supported: stringList,
  token_endpoint_auth_methods_supported: stringList,
  revocation_endpoint_auth_methods_supported: stringList,
  introspection_endpoint_auth_methods_supported: stringList,
  authorization_response_iss_parameter_supported: Type.Boolean(),
  service_documentation: Type.String(),
};

export const discoverySchema = {
  tags: ['Login'],
  operationId: 'authorizationServerMetadata',
  security: [],
  summary: 'Authorization server metadata (RFC 8414)',
  response: {
    200: Type.Object(serverMetadataFields),
    ...errorResponses({ 400: 'A repeated query parameter or a NUL in the request' }),
  },
};

export const openIdConfigurationSchema = {
  tags: ['Login'],
  operationId: 'openIdProviderMetadata',
  security: [],
  summary: 'OpenID Provider metadata (OpenID Connect Discovery 1.0): the RFC 8414 metadata and OpenID Connect fields',
  response: {
    200: Type.Object({
      ...serverMetadataFields,
      userinfo_endpoint: Type.String(),
      end_session_endpoint: Type.String(),
      subject_types_supported: stringList,
      id_token_signing_alg_values_supported: stringList,
      claims_supported: stringList,
      prompt_values_supported: stringList,
      backchannel_logout_supported: Type.Boolean(),
      backchannel_logout_session_supported: Type.Boolean(),
      claims_parameter_supported: Type.Boolean(),
      request_parameter_supported: Type.Boolean(),
      request_uri_parameter_supported: Type.Boolean(),
    }),
    ...errorResponses({ 400: 'A repeated query parameter or a NUL in the request' }),
  },
};

export const jwksSchema = {
  tags: ['Login'],
  operationId: 'jwks',
  security: [],
  summary: 'The public keys ID tokens and logout tokens are signed with (JWK Set, RFC 7517)',
  response: {
    200: Type.Object({
      keys: Type.Array(
        Type.Object({ kid: Type.String(), alg: Type.String(), use: Type.String() }, { additionalProperties: true }),
      ),
    }),
    400: Type.Object(oauthError.properties, {
      description: 'A repeated query parameter or a NUL in the request (invalid_request)',
    }),
  },
};

export const userInfoSchema = {
  tags: ['Login'],
  operationId: 'userInfo',
  security: [{ bearer: [] }] as Array<Record<string, string[]>>,
  summary: 'UserInfo (OpenID Connect Core §5.3): sub and the claims of the granted scopes',
  response: {
    200: Type.Object(
      {
        sub: Type.String({ description: 'The user id' }),
        preferred_username: Type.Optional(Type.String()),
        updated_at: Type.Optional(Type.Integer()),
        email: Type.Optional(Type.String()),
        email_verified: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false },
    ),
    401: oauthError,
    403: oauthError,
  },
};

const htmlPage = (description: string) => ({ description, content: { 'text/html': { schema: Type.String() } } });
const logoutParams = params({
  id_token_hint: 'An ID token this server issued to the application; names the browser sign-in to end',
  client_id: 'The application asking (needed with post_logout_redirect_uri when there is no id_token_hint)',
  post_logout_redirect_uri: "Where to send the browser afterwards; one of the application's registered ones, exactly",
  state: 'Random value, returned unchanged to post_logout_redirect_uri',
});
const logoutResponses = {
  200: htmlPage('The confirmation page (when no valid id_token_hint names this browser), or "You are signed out"'),
  303: Type.Null({ description: 'Signed out: to post_logout_redirect_uri with state' }),
  400: htmlPage(
    'A forged, expired or foreign id_token_hint, or an unregistered post_logout_redirect_uri: an error page',
  ),
};

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): a browser page, so its errors are
 * pages too. Its parameters are described for the document only (http/openapi.ts): the page reads
 * them itself and answers a repeated or missing one with its own error page.
 */
export const logoutSchemas = {
  get: {
    tags: ['Login'],
    operationId: 'logout',
    security: [],
    summary: 'End the browser sign-in and its sessions with the application (RP-initiated logout)',
    'x-document-query': logoutParams,
    response: logoutResponses,
  },
  post: {
    tags: ['Login'],
    operationId: 'logoutByForm',
    security: [],
    summary: 'RP-initiated logout by form post; logout=yes with _csrf is the confirmation page',
    'x-document-body': logoutParams,
    response: logoutResponses,
  },
};
