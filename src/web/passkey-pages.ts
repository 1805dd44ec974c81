import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Account, findAccount } from '../accounts/accounts.ts';
import { CHALLENGE_TTL_MS } from '../accounts/passkey-challenges.ts';
import {
  type AccountContext,
  addPasskey,
  passkeyRegistrationOptions,
  removePasskeyOf,
  renamePasskeyOf,
} from '../accounts/passkey-registration.ts';
import { passkeySignInOptions, passkeyStep } from '../accounts/passkey-sign-in.ts';
import { listPasskeys } from '../accounts/passkeys.ts';
import { attemptLimit, countAttempt } from '../http/attempt-limits.ts';
import { apiErrorForThrown, sendError } from '../http/error-handler.ts';
import { ApiError } from '../http/errors.ts';
import { findApplication } from '../oauth/clients.ts';
import { findInteraction } from '../oauth/interactions.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';
import { isConfirmed, sendConfirmation } from './confirmation.ts';
import { ACCOUNT_LOCKED } from './pages.ts';
import { passkeySignInView, relyingPartyOf } from './passkey-availability.ts';
import { RECENT_SIGN_IN_MS, requireRecentSignIn } from './recent-sign-in.ts';
import { safeReturnPath } from './return-path.ts';
import { signInContext } from './sign-in.ts';
import { onlyOnce } from './single-use-submit.ts';
import { readWebSession, startBrowserSignIn, type WebSession } from './web-sessions.ts';

/**
 * The pages' side of passkeys (DESIGN "Passkeys"): JSON endpoints the page script
 * (/assets/passkeys.js) calls, and what the sign-in and account templates show. Every POST needs
 * the page's CSRF token (header x-csrf-token). A WebAuthn challenge is bound to the browser by a
 * cookie of its own (only its hash is stored), so an answer is only taken from the browser that
 * asked for its challenge.
 */

const BINDING_COOKIE = 'passkey_binding';

// Adding a passkey needs a browser sign-in this recent, as other actions that cannot be undone do.
export { passkeySignInView, RECENT_SIGN_IN_MS, relyingPartyOf };

/** Answers are small: a few KiB of base64url. */
const BODY_LIMIT = 64 * 1024;

const formatTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** The account page's passkey section (templates/passkeys.eta). */
export async function passkeySectionView(web: FastifyInstance, userId: string, session: WebSession) {
  const rp = relyingPartyOf(web);
  const passkeys = await listPasskeys(web.database.db, userId);
  return {
    available: rp.ok,
    unavailableReason: rp.ok ? undefined : rp.reason,
    canAdd: Date.now() - session.signedInAt <= RECENT_SIGN_IN_MS,
    list: passkeys.map((p) => ({
      id: p.credentialId,
      name: p.name,
      added: formatTime(p.createdAt),
      addedIso: new Date(p.createdAt).toISOString(),
      lastUsed: p.lastUsedAt === null ? undefined : formatTime(p.lastUsedAt),
      lastUsedIso: p.lastUsedAt === null ? undefined : new Date(p.lastUsedAt).toISOString(),
    })),
  };
}

/** The notices of the account page after a passkey action (`/account?done=…`). */
export const PASSKEY_NOTICES: Record<string, string> = {
  'passkey-added': 'The passkey was added. You can now sign in with it, without a password or a two-step code.',
  'passkey-renamed': 'The passkey was renamed.',
  'passkey-removed': 'The passkey was removed. It can no longer sign in to your account.',
};

/** The hash of the browser's binding cookie; with `create`, one is set (or renewed) first. */
function bindingHash(request: FastifyRequest, reply: FastifyReply, create: boolean): string | undefined {
  let token = request.cookies[BINDING_COOKIE];
  if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) {
    if (!create) return undefined;
    token = newSecret();
  }
  if (create) {
    const secure = request.server.config.baseUrl.startsWith('https:');
    reply.setCookie(BINDING_COOKIE, token, {
      path: '/',
      httpOnly: true,
      sameSite: 'strict',
      secure,
      maxAge: Math.floor(CHALLENGE_TTL_MS / 1000),
    });
  }
  return hashSecret(token);
}

/** The relying party, or a 404 when passkeys are not available (BASE_URL on an IP address). */
function relyingParty(request: FastifyRequest) {
  const rp = relyingPartyOf(request.server);
  if (!rp.ok) throw new ApiError(404, rp.reason);
  return rp.rp;
}

function context(request: FastifyRequest): AccountContext {
  return { db: request.server.database.db, origin: { ip: request.ip, log: request.log }, rp: relyingParty(request) };
}

const jsonBody = (request: FastifyRequest): Record<string, unknown> => {
  const body = request.body;
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
};

/** JSON routes answer errors in the API's shape ({"code","message"}), which the page script shows. */
function jsonErrors(scope: FastifyInstance): void {
  scope.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.code === 'FST_CSRF_INVALID_TOKEN' || error.code === 'FST_CSRF_MISSING_SECRET') {
      return sendError(reply, new ApiError(403, 'This page was open too long. Reload it and try again.'));
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return sendError(reply, new ApiError(413, `A passkey request is at most ${BODY_LIMIT / 1024} KiB`));
    return sendError(reply, apiErrorForThrown(error, request));
  });
}

/** The page's sign-in as JSON: where the script sends the browser next. */
async function signInWithPasskey(
  request: FastifyRequest,
  reply: FastifyReply,
  place: { page: string; clientId?: string },
  next: string,
  sameUserAs?: string,
) {
  const rp = relyingParty(request);
  const binding = bindingHash(request, reply, false);
  const outcome = await passkeyStep(signInContext(request, place), rp, {
    response: jsonBody(request),
    bindingHash: binding ?? 'none',
  });
  switch (outcome.kind) {
    case 'signed_in':
      if (sameUserAs !== undefined && outcome.account.userId !== sameUserAs)
        throw new ApiError(
          403,
          'That passkey is of another account. Use a passkey of the account you are signed in to.',
          {
            code: 'passkeyRefused',
          },
        );
      // Complete: user verification was required, so no password and no two-step code follow.
      await startBrowserSignIn(request, reply, outcome);
      return reply.header('cache-control', 'no-store').send({ redirect: next });
    case 'limited': {
      const seconds = Math.ceil(outcome.retryAfterMs / 1000);
      throw new ApiError(
        429,
        `Too many failed sign-ins. Try again in ${Math.max(1, Math.ceil(seconds / 60))} minute(s).`,
        { headers: { 'retry-after': String(seconds) } },
      );
    }
    case 'locked':
      throw new ApiError(403, ACCOUNT_LOCKED, { code: 'accountLocked' });
    case 'refused':
      throw new ApiError(
        outcome.reason === 'malformed' ? 400 : 401,
        outcome.reason === 'challenge'
          ? 'This sign-in request has expired or was already used. Try again.'
          : 'That passkey could not sign you in. Try again, or use your password.',
        { code: 'passkeyRefused' },
      );
  }
}

/** Sign-in routes: the options (any page) and the answer, on the OAuth login and the account sign-in. */
export async function passkeySignInRoutes(web: FastifyInstance): Promise<void> {
  jsonErrors(web);
  const csrf = { preHandler: web.csrfProtection, bodyLimit: BODY_LIMIT };
  // Issuing a challenge writes a row: at most this many per IP a minute.
  const optionsByIp = attemptLimit(web, { name: 'passkey-options-ip', max: 60, windowMs: 60_000 });

  web.post('/passkeys/sign-in-options', csrf, async (request, reply) => {
    const rp = relyingParty(request);
    const attempt = await countAttempt([optionsByIp.of(request.ip)]);
    if (attempt.refusedBy.length > 0)
      throw new ApiError(429, 'Too many passkey requests. Wait a minute.', {
        headers: { 'retry-after': String(Math.ceil(attempt.retryAfterMs / 1000)) },
      });
    const options = await passkeySignInOptions(request.server.database.db, rp, bindingHash(request, reply, true)!);
    return reply.header('cache-control', 'no-store').send(options);
  });

  web.post<{ Params: { interaction: string } }>('/login/:interaction/passkey', csrf, async (request, reply) => {
    const db = request.server.database.db;
    const interaction = await findInteraction(db, request.params.interaction);
    const app = interaction && (await findApplication(db, interaction.client_id));
    if (!interaction || !app)
      throw new ApiError(
        404,
        'This sign-in has expired or was already used. Go back to the application and start again.',
      );
    return signInWithPasskey(
      request,
      reply,
      { page: 'sign_in', clientId: app.clientId },
      `/login/${encodeURIComponent(request.params.interaction)}`,
    );
  });

  web.post('/account/sign-in/passkey', csrf, async (request, reply) =>
    signInWithPasskey(request, reply, { page: 'account' }, '/account'),
  );

  // The re-authentication page (recent-sign-in.ts): a passkey of the signed-in account, then back.
  web.post<{ Querystring: { return_to?: unknown } }>('/account/reauth/passkey', csrf, async (request, reply) => {
    const session = await readWebSession(request);
    if (!session || session.mfaPending) throw new ApiError(401, 'You are signed out. Sign in again.');
    const next = safeReturnPath(request.query.return_to) ?? '/account';
    return signInWithPasskey(request, reply, { page: 'reauth' }, next, session.userId);
  });
}

/** What the account page's own helpers give the passkey forms. */
export interface AccountPageHooks {
  /** The fully signed-in browser, or undefined after sending it to sign in. */
  signedIn(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<{ session: WebSession; account: Account } | undefined>;
  /** Renders the account page with an error in the passkeys section. */
  showError(
    reply: FastifyReply,
    current: { session: WebSession; account: Account },
    message: string,
    status: number,
  ): Promise<FastifyReply>;
}

const field = (request: FastifyRequest, name: string): string => {
  const value = jsonBody(request)[name];
  return typeof value === 'string' ? value : '';
};

/** The account page's passkey actions: add (JSON, from the page script), rename and remove (forms). */
export async function passkeyAccountRoutes(web: FastifyInstance, hooks: AccountPageHooks): Promise<void> {
  const formCsrf = { preHandler: web.csrfProtection };

  web.post('/account/passkeys/rename', formCsrf, async (request, reply) => {
    const current = await hooks.signedIn(request, reply);
    if (!current) return reply;
    const outcome = await renamePasskeyOf(
      context(request),
      current.account,
      field(request, 'rename_passkey'),
      field(request, 'passkey_name'),
    );
    if (outcome === 'bad_name') return hooks.showError(reply, current, 'A passkey name has 1 to 64 characters.', 400);
    if (outcome === 'not_found')
      return hooks.showError(reply, current, 'That passkey is not on your account (any more).', 404);
    return reply.code(303).header('location', '/account?done=passkey-renamed').send();
  });

  /**
   * Removing a passkey cannot be undone: a recent sign-in (else the re-authentication page, which
   * comes back to the confirmation), then the confirmation page unless this is its form. Answers
   * the passkey's id when the removal is to go ahead.
   */
  async function readyToRemove(request: FastifyRequest, reply: FastifyReply, id: string, confirmed: boolean) {
    const current = await hooks.signedIn(request, reply);
    if (!current) return undefined;
    const passkey = (await listPasskeys(request.server.database.db, current.account.userId)).find(
      (p) => p.credentialId === id,
    );
    if (!passkey) {
      await hooks.showError(reply, current, 'That passkey is not on your account (any more).', 404);
      return undefined;
    }
    const confirmPage = `/account/passkeys/${encodeURIComponent(passkey.credentialId)}/remove`;
    if (!(await requireRecentSignIn(request, reply, { returnTo: confirmPage, cancel: '/account#passkeys' })))
      return undefined;
    if (!confirmed) {
      await sendConfirmation(reply, {
        title: `Remove the passkey ${passkey.name}`,
        consequence:
          'This passkey can no longer sign in to your account, and the device keeps it unused: to sign in with that device again, you add it anew. This cannot be undone.',
        action: '/account/passkeys/remove',
        name: 'remove_passkey',
        value: passkey.credentialId,
        button: 'Remove the passkey',
        cancel: { href: '/account#passkeys', text: 'Cancel' },
      });
      return undefined;
    }
    return { current, id: passkey.credentialId };
  }

  web.get<{ Params: { id: string } }>('/account/passkeys/:id/remove', async (request, reply) => {
    await readyToRemove(request, reply, request.params.id, false);
    return reply;
  });

  web.post('/account/passkeys/remove', formCsrf, async (request, reply) => {
    const ready = await readyToRemove(request, reply, field(request, 'remove_passkey'), isConfirmed(request.body));
    if (!ready || (await onlyOnce(request, reply))) return reply;
    const { current } = ready;
    const outcome = await removePasskeyOf(context(request), current.account, ready.id);
    if (outcome === 'last_method') {
      return hooks.showError(
        reply,
        current,
        'This passkey is the only way to sign in to your account: it has no password and no other passkey. Add another passkey first.',
        409,
      );
    }
    if (outcome === 'not_found')
      return hooks.showError(reply, current, 'That passkey is not on your account (any more).', 404);
    return reply.code(303).header('location', '/account?done=passkey-removed').send();
  });

  await web.register(async (json) => {
    jsonErrors(json);
    const csrf = { preHandler: json.csrfProtection, bodyLimit: BODY_LIMIT };

    /** The signed-in account, signed in recently enough to add a passkey. */
    async function recentlySignedIn(request: FastifyRequest) {
      const session = await readWebSession(request);
      const account =
        session && !session.mfaPending ? await findAccount(request.server.database.db, session.userId) : undefined;
      if (!session || !account) throw new ApiError(401, 'You are signed out. Sign in again, then add the passkey.');
      if (Date.now() - session.signedInAt > RECENT_SIGN_IN_MS)
        throw new ApiError(403, 'Adding a passkey needs a recent sign-in. Sign in again, then add it.', {
          code: 'signInAgain',
        });
      return account;
    }

    json.post('/account/passkeys/options', csrf, async (request, reply) => {
      const ctx = context(request);
      const account = await recentlySignedIn(request);
      const options = await passkeyRegistrationOptions(ctx, account, bindingHash(request, reply, true)!);
      if (!options) throw new ApiError(409, 'Your account has as many passkeys as it may hold. Remove one first.');
      return reply.header('cache-control', 'no-store').send(options);
    });

    json.post('/account/passkeys', csrf, async (request, reply) => {
      const ctx = context(request);
      const account = await recentlySignedIn(request);
      const body = jsonBody(request);
      const outcome = await addPasskey(ctx, account, {
        response: body.response,
        name: body.name,
        bindingHash: bindingHash(request, reply, false) ?? 'none',
      });
      if (outcome.kind === 'refused') throw new ApiError(outcome.status, outcome.message);
      return reply.header('cache-control', 'no-store').send({ redirect: '/account?done=passkey-added' });
    });
  });
}
