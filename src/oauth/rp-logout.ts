import type { Kysely } from 'kysely';
import { deleteWebSession } from '../accounts/web-sessions.ts';
import type { Schema } from '../db/schema.ts';
import { type Application, findApplication } from './clients.ts';
import type { KeyRing } from './key-ring.ts';
import { isRegisteredRedirectUri } from './redirect-uris.ts';
import { endSessionsOfBrowserSignIn, isSessionOfBrowserSignIn, REFRESH_TOKEN_TTL_MS } from './sessions.ts';

// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0) at /v4/logout: the request's check
// and the logout itself. The page (src/web/logout-pages.ts) reads the parameters and the browser's
// sign-in, asks the person to confirm when needed, and shows where it goes on.

/** A logout request that cannot be honoured: the sentence its 400 page shows. Nothing ended. */
export class LogoutRefused extends Error {}

/** A logout request, checked. */
export interface LogoutRequest {
  /** The application named by client_id or the hint's audience; null: none (only the browser sign-in ends). */
  application: Application | null;
  postLogoutRedirectUri: string | null;
  state: string | null;
  /** The ID token given as id_token_hint (carried through the confirmation form), and what it names. */
  idTokenHint: { token: string; userId: string; sessionId: string | null } | null;
}

const MAX_HINT_LENGTH = 8192;
const MAX_URI_LENGTH = 2048;
const MAX_STATE_LENGTH = 1024;

/**
 * Checks the parameters: an id_token_hint must be an ID token this server signed (expired is
 * fine, OpenID Connect says so, unless older than any session it could name), a client_id an
 * application that exists and the hint's audience, and a post_logout_redirect_uri one the named
 * application registered. Refuses otherwise (LogoutRefused).
 */
export async function readLogoutRequest(
  db: Kysely<Schema>,
  keys: KeyRing,
  issuer: string,
  params: { id_token_hint: string; client_id: string; post_logout_redirect_uri: string; state: string },
  now = Date.now(),
): Promise<LogoutRequest> {
  const { id_token_hint: hint, client_id: clientId, post_logout_redirect_uri: redirectUri, state } = params;
  if (hint.length > MAX_HINT_LENGTH || redirectUri.length > MAX_URI_LENGTH || state.length > MAX_STATE_LENGTH)
    throw new LogoutRefused('The sign-out request is too long.');
  let idTokenHint: LogoutRequest['idTokenHint'] = null;
  let hintedClientId: string | undefined;
  if (hint !== '') {
    const claims = await keys.verifyOwn(hint, issuer, now);
    const audience = claims && (Array.isArray(claims.aud) ? claims.aud : [claims.aud]);
    if (
      !claims ||
      typeof claims.sub !== 'string' ||
      audience?.length !== 1 ||
      typeof audience[0] !== 'string' ||
      claims.events !== undefined
    )
      throw new LogoutRefused('The id_token_hint is not an ID token this service issued.');
    if (typeof claims.exp !== 'number' || claims.exp * 1000 < now - REFRESH_TOKEN_TTL_MS)
      throw new LogoutRefused('The id_token_hint is too old to name any sign-in.');
    hintedClientId = audience[0];
    idTokenHint = { token: hint, userId: claims.sub, sessionId: typeof claims.sid === 'string' ? claims.sid : null };
  }
  if (clientId !== '' && hintedClientId !== undefined && clientId !== hintedClientId)
    throw new LogoutRefused('The id_token_hint was issued to another application than the client_id names.');
  const named = clientId !== '' ? clientId : hintedClientId;
  const application = named === undefined ? null : ((await findApplication(db, named)) ?? null);
  if (named !== undefined && !application)
    throw new LogoutRefused('The application asking to sign you out is unknown.');
  if (redirectUri !== '') {
    if (!application)
      throw new LogoutRefused('A post_logout_redirect_uri needs the application named (client_id or id_token_hint).');
    if (!isRegisteredRedirectUri(application.postLogoutRedirectUris, redirectUri))
      throw new LogoutRefused(
        `${application.name} did not register ${redirectUri} as an address to return to after signing out.`,
      );
  }
  return {
    application,
    postLogoutRedirectUri: redirectUri === '' ? null : redirectUri,
    state: state === '' ? null : state,
    idTokenHint,
  };
}

/**
 * Whether the request's hint names the browser's current sign-in: the session it names (sid) was
 * started from it. Then the logout needs no confirmation, and is the application's own request.
 */
export async function hintNamesSignIn(
  db: Kysely<Schema>,
  request: LogoutRequest,
  signIn: { userId: string; sessionHash: string },
): Promise<boolean> {
  const hint = request.idTokenHint;
  if (!hint?.sessionId || hint.userId !== signIn.userId) return false;
  return isSessionOfBrowserSignIn(db, hint.sessionId, signIn.sessionHash);
}

/**
 * Ends the browser sign-in (`token`, its `sessionHash`) and the named application's sessions
 * started from it, in one transaction. The application is told through its back channel unless
 * `ownRequest` (a hint naming this sign-in proved the request is its own). Answers how many of its
 * sessions ended.
 */
export async function logOut(
  db: Kysely<Schema>,
  request: LogoutRequest,
  signIn: { token: string; sessionHash: string },
  ownRequest: boolean,
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await deleteWebSession(trx, signIn.token);
    if (!request.application) return 0;
    return endSessionsOfBrowserSignIn(trx, signIn.sessionHash, request.application.clientId, !ownRequest);
  });
}

/** Where the browser returns to after the logout, with the request's state; null: the signed-out page. */
export function returnAddress(request: LogoutRequest): string | null {
  if (request.postLogoutRedirectUri === null) return null;
  const url = new URL(request.postLogoutRedirectUri);
  if (request.state !== null) url.searchParams.set('state', request.state);
  return url.href;
}
