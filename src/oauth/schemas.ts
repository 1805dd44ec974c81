import { Type } from 'typebox';

/**
 * OpenAPI descriptions of the OAuth endpoints. Every field is an optional string: the
 * endpoints check parameters themselves, so that each problem gets its RFC 6749 error code.
 */
const params = (names: Record<string, string>) =>
  Type.Object(
    Object.fromEntries(Object.entries(names).map(([name, description]) => [name, Type.Optional(Type.String({ description }))])),
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
});

const consumes = ['application/x-www-form-urlencoded', 'application/json'];

export const authorizeSchema = {
  tags: ['Login'],
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
  }),
  response: {
    200: Type.Object({ login_url: Type.String() }),
    302: Type.Null({ description: 'To the login page; or back to redirect_uri with error and state' }),
    400: oauthError,
  },
};

export const tokenSchema = {
  tags: ['Login'],
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
