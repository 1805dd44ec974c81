import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from './errors.ts';

/** The caller a valid access token stands for. */
export interface BearerAuth {
  userId: string;
  clientId: string;
  sessionId: string;
  scopes: ReadonlySet<string>;
}

/** What the token lookup answers: the caller, and when the token expires (the plugin refuses it then). */
export interface BearerToken extends BearerAuth {
  expiresAt: number;
}

export interface BearerAuthOptions {
  /**
   * The caller whose current access token `token` is, expired or not; undefined when it is
   * unknown or revoked. Called once per request that carries a token.
   */
  lookup(token: string, now: number, log: FastifyBaseLogger): Promise<BearerToken | undefined>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The v4 caller (in a scope where bearerAuth is registered). Reading it on a request that
     * carried no valid token throws the 401 that asks for one, so a route reads it without a check.
     */
    readonly auth: BearerAuth;
  }
}

const CALLER = Symbol('bearer caller');
const REFUSAL = Symbol('bearer refusal');
type Slots = { [CALLER]: BearerAuth | undefined; [REFUSAL]: ApiError | undefined };
const slots = (request: FastifyRequest) => request as FastifyRequest & Slots;

const invalidToken = (message: string) =>
  new ApiError(401, message, {
    headers: { 'www-authenticate': `Bearer realm="v4", error="invalid_token", error_description="${message}"` },
  });

const tokenRequired = () =>
  new ApiError(401, 'An access token is required: Authorization: Bearer <token> or X-Service-Token', {
    headers: { 'www-authenticate': 'Bearer realm="v4"' },
  });

function tokenOf(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw invalidToken('The Authorization header is not a Bearer token');
    return match[1];
  }
  const header = request.headers['x-service-token'];
  return typeof header === 'string' && header !== '' ? header : undefined;
}

/** The caller of a request, or undefined when it carried no valid token (for a rate limit's key, say). */
export function callerOf(request: FastifyRequest): BearerAuth | undefined {
  return slots(request)[CALLER];
}

/**
 * Bearer authentication for the scope it is registered in (fastify-plugin: the hooks and
 * `request.auth` apply to that scope). A request with a token is authenticated in onRequest; a
 * request without one goes on unauthenticated and meets `requireScopes`. A refused token (unknown,
 * revoked, expired, malformed header) is answered 401 in preParsing, that is after every onRequest
 * hook, so that a rate limit registered in the same scope (onRequest, per route) counts guessed
 * tokens too and refuses them with 429 past its limit.
 */
export const bearerAuth = fp(
  async function bearerAuth(scope: FastifyInstance, options: BearerAuthOptions): Promise<void> {
    if (typeof options?.lookup !== 'function')
      throw new TypeError('bearerAuth: the lookup option (token → caller) is required');
    const { lookup } = options;
    scope.decorateRequest(CALLER, undefined);
    scope.decorateRequest(REFUSAL, undefined);
    scope.decorateRequest('auth', {
      getter(this: FastifyRequest) {
        const caller = slots(this)[CALLER];
        if (caller === undefined) throw tokenRequired();
        return caller;
      },
    });

    // A callback hook like the two below: an async one would add its own promise and a turn to
    // every request on top of the lookup's.
    scope.addHook('onRequest', (request, _reply, done) => {
      const own = slots(request);
      let token: string | undefined;
      try {
        token = tokenOf(request);
      } catch (error) {
        own[REFUSAL] = error as ApiError;
        return done();
      }
      if (token === undefined) return done();
      const now = Date.now();
      lookup(token, now, request.log).then(
        (found) => {
          if (!found) own[REFUSAL] = invalidToken('The access token is unknown or revoked');
          else if (found.expiresAt <= now) own[REFUSAL] = invalidToken('The access token has expired; refresh it');
          else own[CALLER] = found;
          done();
        },
        (error: unknown) => {
          // A refusal from the lookup is answered with the others, in preParsing; anything else is an error.
          if (!(error instanceof ApiError)) return done(error as Error);
          own[REFUSAL] = error;
          done();
        },
      );
    });
    scope.addHook('preParsing', (request, _reply, payload, done) => {
      const refusal = slots(request)[REFUSAL];
      if (refusal) done(refusal);
      else done(null, payload);
    });
  },
  { name: 'bearer-auth', fastify: '5.x' },
);

/** preHandler: the request must carry a valid access token granting every scope named. */
export function requireScopes(...scopes: string[]) {
  return function requireScopesHook(
    request: FastifyRequest,
    _reply: FastifyReply,
    done: (error?: Error) => void,
  ): void {
    let granted: ReadonlySet<string>;
    try {
      granted = request.auth.scopes;
    } catch (error) {
      done(error as Error);
      return;
    }
    if (scopes.every((scope) => granted.has(scope))) {
      done();
      return;
    }
    const missing = scopes.filter((scope) => !granted.has(scope));
    done(
      new ApiError(403, `This needs the scope ${missing.join(' ')}`, {
        headers: { 'www-authenticate': `Bearer realm="v4", error="insufficient_scope", scope="${scopes.join(' ')}"` },
        details: { missingScopes: missing },
      }),
    );
  };
}
