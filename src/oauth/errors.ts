/**
 * RFC 6749 §5.2 errors (and RFC 8628's device-flow ones), one class per error code, generated
 * from one table (as node-oidc-provider does). The token and device endpoints render them as
 * {"error","error_description"}; the authorization endpoint redirects with them once the client
 * and redirect URI are known.
 */
export class OAuthError extends Error {
  readonly error: string;
  readonly statusCode: number;
  readonly headers: Record<string, string>;

  constructor(error: string, description: string, statusCode = 400, headers: Record<string, string> = {}) {
    super(description);
    this.error = error;
    this.statusCode = statusCode;
    this.headers = headers;
  }

  toBody() {
    return { error: this.error, error_description: this.message };
  }
}

/** Every error code the server answers: its HTTP status and the description used when none is given. */
const OAUTH_ERRORS = {
  invalid_request: { status: 400, defaultDescription: 'The request is missing a parameter or is otherwise malformed' },
  invalid_client: { status: 401, defaultDescription: 'Client authentication failed' },
  invalid_grant: { status: 400, defaultDescription: 'The grant is invalid, expired or revoked' },
  unauthorized_client: { status: 400, defaultDescription: 'This client may not use this grant type' },
  unsupported_grant_type: { status: 400, defaultDescription: 'This grant type is not supported' },
  unsupported_response_type: { status: 400, defaultDescription: 'This response type is not supported' },
  invalid_scope: { status: 400, defaultDescription: 'The requested scope is invalid or unknown' },
  access_denied: { status: 400, defaultDescription: 'The user denied the request' },
  authorization_pending: { status: 400, defaultDescription: 'The user has not yet approved or denied this request' },
  slow_down: { status: 400, defaultDescription: 'Polling too fast; wait longer between polls' },
  expired_token: { status: 400, defaultDescription: 'The device code has expired; start a new device login' },
  server_error: { status: 500, defaultDescription: 'Internal server error' },
  temporarily_unavailable: { status: 503, defaultDescription: 'The server is busy; try again in a moment' },
} as const satisfies Record<string, { status: number; defaultDescription: string }>;

type OAuthErrorCode = keyof typeof OAUTH_ERRORS;

/** The class of one error code: `new InvalidGrant('why')`, or without a description its default. */
function oauthErrorClass(error: OAuthErrorCode, className: string) {
  const { status, defaultDescription } = OAUTH_ERRORS[error];
  const generated = class extends OAuthError {
    constructor(description: string = defaultDescription, headers: Record<string, string> = {}) {
      super(error, description, status, headers);
    }
  };
  Object.defineProperty(generated, 'name', { value: className });
  return generated;
}

export const InvalidRequest = oauthErrorClass('invalid_request', 'InvalidRequest');
export type InvalidRequest = InstanceType<typeof InvalidRequest>;
export const InvalidGrant = oauthErrorClass('invalid_grant', 'InvalidGrant');
export type InvalidGrant = InstanceType<typeof InvalidGrant>;
export const UnauthorizedClient = oauthErrorClass('unauthorized_client', 'UnauthorizedClient');
export type UnauthorizedClient = InstanceType<typeof UnauthorizedClient>;
export const UnsupportedGrantType = oauthErrorClass('unsupported_grant_type', 'UnsupportedGrantType');
export type UnsupportedGrantType = InstanceType<typeof UnsupportedGrantType>;
export const UnsupportedResponseType = oauthErrorClass('unsupported_response_type', 'UnsupportedResponseType');
export type UnsupportedResponseType = InstanceType<typeof UnsupportedResponseType>;
export const InvalidScope = oauthErrorClass('invalid_scope', 'InvalidScope');
export type InvalidScope = InstanceType<typeof InvalidScope>;
export const AccessDenied = oauthErrorClass('access_denied', 'AccessDenied');
export type AccessDenied = InstanceType<typeof AccessDenied>;
export const AuthorizationPending = oauthErrorClass('authorization_pending', 'AuthorizationPending');
export type AuthorizationPending = InstanceType<typeof AuthorizationPending>;
export const ExpiredToken = oauthErrorClass('expired_token', 'ExpiredToken');
export type ExpiredToken = InstanceType<typeof ExpiredToken>;
export const ServerError = oauthErrorClass('server_error', 'ServerError');
export type ServerError = InstanceType<typeof ServerError>;
export const TemporarilyUnavailable = oauthErrorClass('temporarily_unavailable', 'TemporarilyUnavailable');
export type TemporarilyUnavailable = InstanceType<typeof TemporarilyUnavailable>;

/** Client authentication failed: 401, with a Basic challenge when the client used Basic. */
export class InvalidClient extends oauthErrorClass('invalid_client', 'InvalidClient') {
  constructor(description: string, usedBasic = false) {
    super(description, usedBasic ? { 'www-authenticate': 'Basic realm="v4", charset="UTF-8"' } : {});
  }
}

/** slow_down names the interval the client must keep. */
export class SlowDown extends oauthErrorClass('slow_down', 'SlowDown') {
  constructor(interval: number) {
    super(`Polling too fast; wait at least ${interval} seconds between polls`);
  }
}
