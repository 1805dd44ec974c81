import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance } from 'fastify';
import { recordSecurityEvent } from '../accounts/security-events.ts';
import { databaseUnavailable } from '../http/error-handler.ts';
import { limitRequests } from '../http/rate-limit.ts';
import { authorizeRoute } from './authorize.ts';
import { claimedClientId } from './client-auth.ts';
import { deviceAuthorizationRoute } from './device-authorization.ts';
import { InvalidClient, OAuthError, ServerError, TemporarilyUnavailable } from './errors.ts';
import { introspectionRoute } from './introspection.ts';
import { jwksRoute } from './jwks.ts';
import { revocationRoute } from './revocation.ts';
import { tokenRoute } from './token-endpoint.ts';
import { userInfoRoute } from './userinfo.ts';

/**
 * The OAuth endpoints under /v4: GET /login (authorize), POST /login (token), POST /device,
 * POST /revoke, POST /introspect, and OpenID Connect's GET /jwks and GET|POST /userinfo.
 * Their errors are RFC 6749 §5.2 bodies, not the API's {code,message}.
 */
export async function oauthEndpoints(scope: FastifyInstance): Promise<void> {
  await scope.register(formbody);
  await limitRequests(scope, { perMinute: scope.config.rateLimitV4, name: 'v4-oauth' });

  scope.setErrorHandler(async (error: FastifyError | OAuthError, request, reply) => {
    let oauthError: OAuthError;
    if (error instanceof OAuthError) oauthError = error;
    else if ((error.statusCode ?? 500) < 500) {
      // Malformed bodies, wrong media types, oversized bodies, rate limits: keep their status.
      oauthError = new OAuthError('invalid_request', error.message, error.statusCode ?? 400);
    } else {
      const unavailable = databaseUnavailable(error, request);
      if (unavailable) oauthError = new TemporarilyUnavailable(unavailable.message, unavailable.headers);
      else {
        request.log.error({ err: error }, 'unhandled error');
        oauthError = new ServerError(`Internal server error (request ${request.id})`);
      }
    }
    // Every endpoint that authenticates clients (token, revocation, introspection) ends up here.
    if (oauthError instanceof InvalidClient)
      await recordSecurityEvent(scope.database.db, request, {
        kind: 'client_authentication_failed',
        clientId: claimedClientId(request),
        details: { endpoint: request.url.split('?', 1)[0]!.slice(0, 200), reason: oauthError.message },
      });
    for (const [name, value] of Object.entries(oauthError.headers)) reply.header(name, value);
    return reply
      .code(oauthError.statusCode)
      .header('cache-control', 'no-store')
      .type('application/json; charset=utf-8')
      .send(oauthError.toBody());
  });

  await scope.register(authorizeRoute);
  await scope.register(tokenRoute);
  await scope.register(deviceAuthorizationRoute);
  await scope.register(revocationRoute);
  await scope.register(introspectionRoute);
  await scope.register(jwksRoute);
  await scope.register(userInfoRoute);
}

export { discoveryRoute } from './discovery.ts';
