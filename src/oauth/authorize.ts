import type { FastifyInstance, FastifyReply } from 'fastify';
import { issueAuthorizationCode } from './authorization-codes.ts';
import { authorizationResponseUrl } from './authorization-response.ts';
import type { BrowserSignIn } from './browser-sign-in.ts';
import { findApplication } from './clients.ts';
import { hasGrantCovering, signInFacts } from './consent.ts';
import { InvalidRequest, OAuthError, UnsupportedResponseType } from './errors.ts';
import { createInteraction } from './interactions.ts';
import { type OidcRequest, readOidcRequest } from './oidc-request.ts';
import { readParams } from './params.ts';
import { isCodeChallenge, isCodeChallengeMethod } from './pkce.ts';
import { isRegisteredRedirectUri } from './redirect-uris.ts';
import { authorizeSchema } from './schemas.ts';
import { grantableScope } from './scopes.ts';

/** The only response type: the authorization code flow. */
export const RESPONSE_TYPES = ['code'] as const;

/** Sends the browser back to the client with an error (RFC 6749 §4.1.2.1, with RFC 9207's iss). */
export function redirectWithError(
  reply: FastifyReply,
  redirectUri: string,
  error: OAuthError,
  state: string | undefined | null,
) {
  const location = authorizationResponseUrl(
    redirectUri,
    { error: error.error, error_description: error.message, state },
    reply.server.config.baseUrl,
  );
  return reply.code(302).header('location', location).header('cache-control', 'no-store').send();
}

/**
 * GET /v4/login: starts a browser sign-in. Until the client and its redirect URI are known,
 * errors are 400 JSON; after that they go back to the client's redirect URI.
 */
export async function authorizeRoute(app: FastifyInstance): Promise<void> {
  app.get('/login', { schema: authorizeSchema }, async (request, reply) => {
    const params = readParams(request.query);
    if (!params.client_id) throw new InvalidRequest('client_id is required');
    const client = await findApplication(app.database.db, params.client_id);
    if (!client) throw new InvalidRequest('Unknown client_id');
    // An application registered without a redirect URI uses the device flow only.
    if (client.redirectUris.length === 0)
      throw new InvalidRequest('This client has no redirect URI: it signs in with the device flow only');
    if (!params.redirect_uri) throw new InvalidRequest('redirect_uri is required');
    if (!isRegisteredRedirectUri(client.redirectUris, params.redirect_uri))
      throw new InvalidRequest('redirect_uri is not registered for this client');

    let scope: string;
    let oidc: OidcRequest;
    try {
      if (!params.response_type) throw new InvalidRequest('response_type is required');
      if (!(RESPONSE_TYPES as readonly string[]).includes(params.response_type))
        throw new UnsupportedResponseType('response_type must be code');
      if (!params.state) throw new InvalidRequest('state is required');
      if (params.scope === undefined || params.scope.trim() === '') throw new InvalidRequest('scope is required');
      scope = grantableScope(params.scope, client.scopes);
      if (!isCodeChallengeMethod(params.code_challenge_method))
        throw new InvalidRequest('code_challenge_method must be S256');
      if (!isCodeChallenge(params.code_challenge))
        throw new InvalidRequest('code_challenge must be the 43-character base64url SHA-256 of the code_verifier');
      if (params.device_id !== undefined && (params.device_id === '' || params.device_id.length > 200))
        throw new InvalidRequest('device_id must be 1 to 200 characters');
      oidc = await readOidcRequest(params, {
        clientId: client.clientId,
        issuer: app.config.baseUrl,
        keys: app.signingKeys,
        now: Date.now(),
      });
    } catch (error) {
      if (error instanceof OAuthError) return redirectWithError(reply, params.redirect_uri, error, params.state);
      throw error;
    }

    if (oidc.prompts.has('none')) {
      const signIn = await app.readBrowserSignIn(request);
      const refusal = await silentRefusal(app, signIn, oidc, client.clientId, scope);
      if (refusal || !signIn) return redirectWithError(reply, params.redirect_uri, refusal!, params.state);
      const code = await issueAuthorizationCode(app.database.db, {
        clientId: client.clientId,
        userId: signIn.userId,
        redirectUri: params.redirect_uri,
        scope,
        codeChallenge: params.code_challenge,
        deviceId: params.device_id ?? null,
        signIn: signInFacts(signIn, oidc.nonce),
      });
      const location = authorizationResponseUrl(params.redirect_uri, { code, state: params.state }, app.config.baseUrl);
      return reply.code(302).header('location', location).header('cache-control', 'no-store').send();
    }

    const interactionId = await createInteraction(app.database.db, {
      client_id: client.clientId,
      scope,
      redirect_uri: params.redirect_uri,
      state: params.state,
      code_challenge: params.code_challenge,
      device_id: params.device_id ?? null,
      device_code: null,
      nonce: oidc.nonce,
      login_hint: oidc.loginHint,
      min_auth_time: oidc.minAuthTime,
    });
    const loginUrl = `${app.config.baseUrl}/login/${interactionId}`;
    reply.header('cache-control', 'no-store');
    if (params.no_redirect === 'true' || params.no_redirect === '1') return { login_url: loginUrl };
    return reply.code(302).header('location', loginUrl).send();
  });
}

/**
 * prompt=none (OpenID Connect Core §3.1.2.6): why no code can be issued without showing a page, or
 * undefined when one can: the browser is signed in (as the id_token_hint's user, recently enough)
 * and the user has granted this application the scope already.
 */
async function silentRefusal(
  app: FastifyInstance,
  signIn: BrowserSignIn | undefined,
  oidc: OidcRequest,
  clientId: string,
  scope: string,
): Promise<OAuthError | undefined> {
  if (!signIn) return new OAuthError('login_required', 'The user is not signed in');
  if (signIn.mfaPending) return new OAuthError('interaction_required', 'The sign-in is waiting for its two-step code');
  if (oidc.minAuthTime !== null && signIn.signedInAt < oidc.minAuthTime)
    return new OAuthError('login_required', 'The last sign-in is older than max_age allows');
  if (oidc.hintedUserId !== null && oidc.hintedUserId !== signIn.userId)
    return new OAuthError('login_required', 'Another user is signed in than the id_token_hint names');
  if (!(await hasGrantCovering(app.database.db, signIn.userId, clientId, scope)))
    return new OAuthError('consent_required', 'The user has not yet approved this application for this scope');
  return undefined;
}
