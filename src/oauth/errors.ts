/**
 * RFC 6749 §5.2 errors (and RFC 8628's device-flow ones), one class per error code. The token
 * and device endpoints render them as {"error","error_description"}; the authorization endpoint
 * redirects with them once the client and redirect URI are known.
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

export class InvalidRequest extends OAuthError {
  constructor(description: string) {
    super('invalid_request', description);
  }
}

/** Client authentication failed: 401, with a Basic challenge when the client used Basic. */
export class InvalidClient extends OAuthError {
  constructor(description: string, usedBasic = false) {
    super('invalid_client', description, 401, usedBasic ? { 'www-authenticate': 'Basic realm="v4", charset="UTF-8"' } : {});
  }
}

export class InvalidGrant extends OAuthError {
  constructor(description: string) {
    super('invalid_grant', description);
  }
}

export class UnauthorizedClient extends OAuthError {
  constructor(description: string) {
    super('unauthorized_client', description);
  }
}

export class UnsupportedGrantType extends OAuthError {
  constructor(description: string) {
    super('unsupported_grant_type', description);
  }
}

export class UnsupportedResponseType extends OAuthError {
  constructor(description: string) {
    super('unsupported_response_type', description);
  }
}

export class InvalidScope extends OAuthError {
  constructor(description: string) {
    super('invalid_scope', description);
  }
}

export class AccessDenied extends OAuthError {
  constructor(description: string) {
    super('access_denied', description);
  }
}

export class AuthorizationPending extends OAuthError {
  constructor() {
    super('authorization_pending', 'The user has not yet approved or denied this request');
  }
}

export class SlowDown extends OAuthError {
  constructor(interval: number) {
    super('slow_down', `Polling too fast; wait at least ${interval} seconds between polls`);
  }
}

export class ExpiredToken extends OAuthError {
  constructor() {
    super('expired_token', 'The device code has expired; start a new device login');
  }
}
