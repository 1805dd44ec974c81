/** The error body of every non-OAuth endpoint: {"code","message","details"?}. */
export interface ErrorBody {
  code: string;
  message: string;
  details?: unknown;
}

const codeByStatus: Record<number, string> = {
  400: 'badRequest',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'notFound',
  405: 'methodNotAllowed',
  406: 'notAcceptable',
  408: 'requestTimeout',
  409: 'conflict',
  411: 'lengthRequired',
  412: 'preconditionFailed',
  413: 'payloadTooLarge',
  414: 'uriTooLong',
  415: 'unsupportedMediaType',
  417: 'expectationFailed',
  429: 'tooManyRequests',
  431: 'headersTooLarge',
  500: 'internalError',
  503: 'serviceUnavailable',
};

export function codeForStatus(status: number): string {
  return codeByStatus[status] ?? (status >= 500 ? 'internalError' : 'badRequest');
}

/** An error the client caused or may see; the error handler renders it as an ErrorBody. */
export class ApiError extends Error {
  readonly statusCode: number;
  readonly code: string;
  readonly details: unknown;
  readonly headers: Record<string, string>;

  constructor(
    statusCode: number,
    message: string,
    options: { code?: string; details?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.statusCode = statusCode;
    this.code = options.code ?? codeForStatus(statusCode);
    this.details = options.details;
    this.headers = options.headers ?? {};
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export const badRequest = (message: string, details?: unknown) => new ApiError(400, message, { details });
export const notFound = (message: string, details?: unknown) => new ApiError(404, message, { details });
export const forbidden = (message: string, details?: unknown) => new ApiError(403, message, { details });
export const preconditionFailed = (message: string, details?: unknown) => new ApiError(412, message, { details });
export const serviceUnavailable = (message: string) => new ApiError(503, message);
