import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, preValidationHookHandler } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { isDatabaseBusy, isDatabaseUnreachable } from '../db/errors.ts';
import { ApiError, codeForStatus } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A catch-all route that answers unknown paths (the pages' 404 page): it makes no path known. */
    unknownPaths?: true;
  }
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * Installs the error model on the root instance: ApiError and Fastify's own errors become
 * {"code","message","details"?}; unknown paths are 404, known paths with another method 405
 * with an Allow header (a route with `config: { unknownPaths: true }`, a catch-all that answers unknown
 * paths in its own way, is not counted as a method the path supports). Must be called before any route is registered. `notFoundPreValidation`: the
 * hooks a request without a route runs before its 404 (the input guard; onRoute hooks never see it).
 */
export function installErrorModel(app: FastifyInstance, notFoundPreValidation: preValidationHookHandler[] = []): void {
  // A second router that only knows which methods exist per path, so a miss can be told
  // apart as 404 (no such path) or 405 (path exists, method does not).
  const routes = FindMyWay({ ignoreTrailingSlash: true, ignoreDuplicateSlashes: true });
  app.addHook('onRoute', (route) => {
    // A catch-all route answering unknown paths (the pages' 404 page) makes no path known.
    if (route.config?.unknownPaths) return;
    for (const method of [route.method].flat().map((name) => name.toUpperCase() as HTTPMethod)) {
      if (!routes.hasRoute(method, route.url)) routes.on(method, route.url, () => {});
    }
  });

  app.setNotFoundHandler({ preValidation: notFoundPreValidation }, (request, reply) => {
    const path = request.url.split('?', 1)[0] ?? '/';
    const allowed = METHODS.filter((method) => routes.find(method, path) !== null);
    if (allowed.length > 0) {
      return sendError(
        reply,
        new ApiError(405, `${request.method} is not supported on ${path}`, { headers: { allow: allowed.join(', ') } }),
      );
    }
    return sendError(reply, new ApiError(404, `No resource at ${path}`));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => sendError(reply, apiErrorForThrown(error, request)));
}

/** Longest error message sent: a message may quote client input, which must not come back unbounded. */
const MAX_MESSAGE = 1_000;

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  const body = error.toBody();
  if (body.message.length > MAX_MESSAGE) body.message = `${body.message.slice(0, MAX_MESSAGE)}…`;
  // Serialised here, so details that cannot be serialised (too deep) lose their details, not the shape.
  let text: string;
  try {
    text = JSON.stringify(body);
  } catch {
    text = JSON.stringify({ code: body.code, message: body.message });
  }
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(text);
}

/**
 * What answers any thrown error: an ApiError as is, a validation or other 4xx error of Fastify's as
 * one, a database out of reach or with no room in time a 503 to retry, anything else a logged 500.
 */
export function apiErrorForThrown(error: FastifyError | ApiError, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  if (error.validation) return validationError(error.validationContext ?? 'body', error.validation);
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new ApiError(status, clientMessage(error), { code: codeForStatus(status) });
  }
  const unavailable = databaseUnavailable(error, request);
  if (unavailable) return unavailable;
  request.log.error({ err: error }, 'unhandled error');
  return new ApiError(500, 'Internal server error', { details: { requestId: request.id } });
}

/** Seconds a client is asked to wait before trying again while the database cannot serve it. */
const RETRY_AFTER_SECONDS = '1';

/**
 * The 503 for a request the database could not serve for now, or undefined when `error` is not
 * such a failure: the database out of reach (refused, reset, timed out, restarting, closed to
 * connections), logged as a warning once per outage; or no room for it in time (the pool's wait,
 * SQLite's busy timeout), logged per request. Every face answers these with the 503 and
 * Retry-After, in its own shape (OAuth's `temporarily_unavailable`, pages' message).
 */
export function databaseUnavailable(error: unknown, request: FastifyRequest): ApiError | undefined {
  if (isDatabaseUnreachable(error)) {
    const { outage } = request.server.database;
    if (outage.unreachable())
      request.log.warn({ err: error }, 'the database cannot be reached: answering 503 until it is back');
    return new ApiError(503, 'The database cannot be reached; try again in a moment', {
      headers: { 'retry-after': RETRY_AFTER_SECONDS },
    });
  }
  if (isDatabaseBusy(error)) {
    request.log.warn({ err: error }, 'the database had no room for the request in time');
    return new ApiError(503, 'The service is busy; try again in a moment', {
      headers: { 'retry-after': RETRY_AFTER_SECONDS },
    });
  }
  return undefined;
}

interface ValidationIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

const LOCATION: Record<string, string> = {
  querystring: 'query parameter',
  params: 'path parameter',
  headers: 'header',
  body: 'body',
};

/** A 400 naming the offending parameter or property, from schema validation issues. */
function validationError(context: string, issues: ValidationIssue[]): ApiError {
  const where = LOCATION[context] ?? context;
  const unknown = issues.find((issue) => issue.keyword === 'additionalProperties');
  if (unknown) {
    const names = (unknown.params.additionalProperties as string[] | undefined) ?? [];
    const at = unknown.instancePath ? ` at ${unknown.instancePath}` : '';
    const noun = context === 'querystring' ? 'query parameter' : 'property';
    return new ApiError(400, `Unknown ${noun}${names.length > 1 ? 's' : ''} ${names.join(', ')}${at}`, {
      details: { location: context, unknown: names },
    });
  }
  // In a union (one object or an array of them) the deepest issue is the informative one.
  const issue =
    [...issues]
      .filter((i) => i.keyword !== 'anyOf' && i.keyword !== 'boolean')
      .sort((a, b) => b.instancePath.length - a.instancePath.length)[0] ?? issues[0]!;
  const name = issue.instancePath.replace(/^\//, '');
  const allowed = issue.params.allowedValues as unknown[] | undefined;
  const problem = allowed ? `must be one of ${allowed.join(', ')}` : issue.message;
  const message = name ? `Invalid ${where} ${name}: ${problem}` : `Invalid ${where}: ${problem}`;
  return new ApiError(400, message, { details: { location: context, path: issue.instancePath || undefined, problem } });
}

function clientMessage(error: FastifyError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'Request body is larger than the 1 MiB limit';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'Unsupported Content-Type';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'Body is empty but Content-Type is application/json';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return `Malformed JSON body: ${error.message}`;
    default:
      return error.message;
  }
}
