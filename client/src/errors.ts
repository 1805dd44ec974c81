import * as oauth from 'oauth4webapi';

export interface ErrorFields {
  status: number;
  code: string;
  message: string;
  details?: unknown;
  /** RFC 6749 error code, for errors of the OAuth endpoints. */
  error?: string;
  error_description?: string;
  cause?: unknown;
}

/**
 * Every failure the library reports. `status` is the HTTP status (0 when no answer came), `code`
 * the service's error code (`notFound`, …) or, for OAuth errors, the RFC 6749 `error`, which is
 * also kept in `error` with its `error_description`.
 */
export class ContentServiceError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;
  readonly error?: string;
  readonly error_description?: string;

  constructor(fields: ErrorFields) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = 'ContentServiceError';
    this.status = fields.status;
    this.code = fields.code;
    if (fields.details !== undefined) this.details = fields.details;
    if (fields.error !== undefined) this.error = fields.error;
    if (fields.error_description !== undefined) this.error_description = fields.error_description;
  }
}

/** The error of a non-2xx answer of the service (body {code, message, details} or an OAuth error). */
export async function errorFromResponse(response: Response): Promise<ContentServiceError> {
  const text = await response.text().catch(() => '');
  let body: Record<string, unknown> | undefined;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (body && typeof body.error === 'string') {
    return oauthError(
      response.status,
      body.error,
      typeof body.error_description === 'string' ? body.error_description : undefined,
    );
  }
  if (body && typeof body.code === 'string') {
    return new ContentServiceError({
      status: response.status,
      code: body.code,
      message: String(body.message ?? body.code),
      details: body.details,
    });
  }
  return new ContentServiceError({
    status: response.status,
    code: `http${response.status}`,
    message: `The service answered ${response.status} ${response.statusText}`.trim(),
    details: text || undefined,
  });
}

export function oauthError(status: number, error: string, description?: string, cause?: unknown): ContentServiceError {
  return new ContentServiceError({
    status,
    code: error,
    message: description ?? error,
    error,
    ...(description !== undefined && { error_description: description }),
    cause,
  });
}

/** Turns what oauth4webapi (or fetch) throws into a ContentServiceError. */
export function fromOAuthFailure(failure: unknown): ContentServiceError {
  if (failure instanceof ContentServiceError) return failure;
  if (failure instanceof oauth.ResponseBodyError)
    return oauthError(failure.status, failure.error, failure.error_description, failure);
  if (failure instanceof oauth.AuthorizationResponseError)
    return oauthError(400, failure.error, failure.error_description, failure);
  if (failure instanceof oauth.WWWAuthenticateChallengeError) {
    const challenge = failure.cause[0];
    const error = challenge?.parameters.error ?? 'invalid_token';
    return oauthError(
      failure.status,
      error,
      challenge?.parameters.error_description ?? 'The access token was refused',
      failure,
    );
  }
  if (failure instanceof oauth.OperationProcessingError) {
    return new ContentServiceError({ status: 0, code: 'invalidResponse', message: failure.message, cause: failure });
  }
  if (failure instanceof TypeError && /fetch/i.test(failure.message)) {
    return new ContentServiceError({
      status: 0,
      code: 'networkError',
      message: `The service could not be reached: ${String((failure as { cause?: { message?: unknown } }).cause?.message ?? failure.message)}`,
      cause: failure,
    });
  }
  if (failure instanceof Error && failure.name === 'AbortError') {
    return new ContentServiceError({
      status: 0,
      code: 'aborted',
      message: 'The operation was cancelled',
      cause: failure,
    });
  }
  return new ContentServiceError({
    status: 0,
    code: 'clientError',
    message: failure instanceof Error ? failure.message : String(failure),
    cause: failure,
  });
}
