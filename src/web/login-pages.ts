import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findAccount } from '../accounts/accounts.ts';
import { codeStep, passwordStep } from '../accounts/sign-in.ts';
import { authorizationResponseUrl } from '../oauth/authorization-response.ts';
import { redirectWithError } from '../oauth/authorize.ts';
import { findApplication } from '../oauth/clients.ts';
import { decideInteraction } from '../oauth/consent.ts';
import { displayedUserCode } from '../oauth/device-authorizations.ts';
import { AccessDenied } from '../oauth/errors.ts';
import { findInteraction, type Interaction } from '../oauth/interactions.ts';
import { isScope, SCOPES, scopeList } from '../oauth/scopes.ts';
import { ACCOUNT_LOCKED, field, sendMessage, sendPage, tooManyAttempts, wrongCodeMessage } from './pages.ts';
import { passkeySignInView } from './passkey-pages.ts';
import { signInContext } from './sign-in.ts';
import {
  endWebSession,
  forgetWebSession,
  readWebSession,
  startBrowserSignIn,
  type WebSession,
} from './web-sessions.ts';

const PAGE = '/login/:interaction';

type LoginRequest = FastifyRequest<{ Params: { interaction: string } }>;

/** Whether the browser's sign-in is as recent as the request asks (prompt=login, max_age). */
const signedInRecently = (session: WebSession, interaction: Interaction) =>
  interaction.min_auth_time === null || session.signedInAt >= interaction.min_auth_time;

const expired = (reply: FastifyReply) =>
  sendMessage(
    reply,
    'This sign-in has expired',
    'This sign-in link has expired or was already used. Go back to the application and start again.',
    404,
  );

/**
 * The pages of an interaction: sign in, then the two-step code when the account has one (and
 * the device is not trusted), then consent. Each POST redirects back to the page (303), which
 * shows whatever step the browser is at.
 */
export async function loginPages(web: FastifyInstance): Promise<void> {
  const db = () => web.database.db;
  const csrf = { preHandler: web.csrfProtection };

  async function load(request: LoginRequest, reply: FastifyReply) {
    const interaction = await findInteraction(db(), request.params.interaction);
    if (!interaction) {
      expired(reply);
      return undefined;
    }
    const app = await findApplication(db(), interaction.client_id);
    if (!app) {
      expired(reply);
      return undefined;
    }
    if (app.suspendedAt !== null) {
      sendMessage(
        reply,
        'This application is suspended',
        `The operator of this service has suspended ${app.name}: it cannot sign anyone in for now.`,
        403,
      );
      return undefined;
    }
    return { interaction, app, action: `/login/${request.params.interaction}` };
  }

  web.get<{ Params: { interaction: string } }>(PAGE, async (request, reply) => {
    const loaded = await load(request as LoginRequest, reply);
    if (!loaded) return reply;
    const session = await readWebSession(request);
    // prompt=login and max_age: a sign-in older than the request accepts is asked again.
    if (!session || (!session.mfaPending && !signedInRecently(session, loaded.interaction)))
      return sendPage(reply, 'signin', {
        appName: loaded.app.name,
        action: `${loaded.action}/password`,
        ...passkeySignInView(web, `${loaded.action}/passkey`),
        username: loaded.interaction.login_hint ?? undefined,
      });
    if (session.mfaPending)
      return sendPage(reply, 'two-step', {
        action: `${loaded.action}/two-step`,
        canTrustDevice: loaded.interaction.device_id !== null,
      });
    const account = await findAccount(db(), session.userId);
    const developer = loaded.app.ownerId === null ? undefined : await findAccount(db(), loaded.app.ownerId);
    return sendPage(reply, 'consent', {
      appName: loaded.app.name,
      appWebsite: loaded.app.website?.startsWith('https://') ? loaded.app.website : undefined,
      developer: developer?.username ?? undefined,
      username: account?.username ?? '',
      scopes: scopeList(loaded.interaction.scope).map((scope) => (isScope(scope) ? SCOPES[scope] : scope)),
      userCode:
        loaded.interaction.device_code === null
          ? undefined
          : await displayedUserCode(db(), loaded.interaction.device_code),
      action: `${loaded.action}/consent`,
      switchAction: `${loaded.action}/switch`,
    });
  });

  web.post<{ Params: { interaction: string }; Body: Record<string, unknown> | undefined }>(
    `${PAGE}/password`,
    csrf,
    async (request, reply) => {
      const loaded = await load(request as LoginRequest, reply);
      if (!loaded) return reply;
      const username = field(request.body, 'username').trim();
      const again = (error: string, status: number) =>
        sendPage(
          reply,
          'signin',
          {
            appName: loaded.app.name,
            action: `${loaded.action}/password`,
            ...passkeySignInView(web, `${loaded.action}/passkey`),
            username,
            error,
          },
          status,
        );
      const context = signInContext(request, { page: 'sign_in', clientId: loaded.app.clientId });
      const outcome = await passwordStep(context, {
        login: username,
        password: field(request.body, 'password'),
        deviceId: loaded.interaction.device_id,
      });
      if (outcome.kind === 'limited')
        return again(tooManyAttempts(reply, 'failed sign-ins', outcome.retryAfterMs), 429);
      if (outcome.kind === 'locked') return again(ACCOUNT_LOCKED, 403);
      if (outcome.kind !== 'signed_in' && outcome.kind !== 'needs_code')
        return again('Wrong username or password.', 401);
      await startBrowserSignIn(request, reply, outcome);
      return reply.code(303).header('location', loaded.action).send();
    },
  );

  web.post<{ Params: { interaction: string }; Body: Record<string, unknown> | undefined }>(
    `${PAGE}/two-step`,
    csrf,
    async (request, reply) => {
      const loaded = await load(request as LoginRequest, reply);
      if (!loaded) return reply;
      const session = await readWebSession(request);
      if (!session?.mfaPending) return reply.code(303).header('location', loaded.action).send();
      const canTrustDevice = loaded.interaction.device_id !== null;
      const again = (error: string, status: number) =>
        sendPage(reply, 'two-step', { action: `${loaded.action}/two-step`, canTrustDevice, error }, status);
      const context = signInContext(request, { page: 'sign_in', clientId: loaded.app.clientId });
      const trust = field(request.body, 'trust_device') !== '' && canTrustDevice;
      const outcome = await codeStep(context, session.userId, {
        code: field(request.body, 'code'),
        trustDeviceId: trust ? loaded.interaction.device_id : null,
      });
      if (outcome.kind === 'start_again') return reply.code(303).header('location', loaded.action).send();
      if (outcome.kind === 'limited' && outcome.accountLimited) {
        // Past the account's limit the pending sign-in ended (all of them, from any browser).
        forgetWebSession(reply);
        const error = tooManyAttempts(reply, 'wrong codes', outcome.retryAfterMs, 'Sign in again');
        return sendPage(
          reply,
          'signin',
          {
            appName: loaded.app.name,
            action: `${loaded.action}/password`,
            ...passkeySignInView(web, `${loaded.action}/passkey`),
            error,
          },
          429,
        );
      }
      if (outcome.kind === 'limited') return again(tooManyAttempts(reply, 'wrong codes', outcome.retryAfterMs), 429);
      if (outcome.kind === 'wrong') return again(wrongCodeMessage(outcome), 401);
      if (outcome.kind !== 'signed_in') return reply.code(303).header('location', loaded.action).send();
      await startBrowserSignIn(request, reply, outcome);
      return reply.code(303).header('location', loaded.action).send();
    },
  );

  web.post<{ Params: { interaction: string }; Body: Record<string, string | undefined> }>(
    `${PAGE}/consent`,
    csrf,
    async (request, reply) => {
      const loaded = await load(request, reply);
      if (!loaded) return reply;
      const session = await readWebSession(request);
      if (!session || session.mfaPending || !signedInRecently(session, loaded.interaction))
        return reply.code(303).header('location', loaded.action).send();
      const decision = request.body?.decision;
      if (decision !== 'approve' && decision !== 'deny')
        return reply.code(303).header('location', loaded.action).send();
      const { interaction } = loaded;
      const outcome = await decideInteraction(
        db(),
        request.params.interaction,
        interaction,
        session,
        decision === 'approve',
      );
      if (outcome.kind === 'ended') return expired(reply);
      if (outcome.kind === 'device expired')
        return sendMessage(
          reply,
          'This code has expired',
          'Start the sign-in on your device again to get a new code.',
          410,
        );
      if (outcome.kind === 'device') {
        return outcome.approved
          ? sendMessage(
              reply,
              'Device connected',
              'You are signed in on your device. You can close this page and return to it.',
            )
          : sendMessage(reply, 'Request denied', 'The device was not given access. You can close this page.');
      }
      if (outcome.kind === 'denied')
        return redirectWithError(
          reply,
          interaction.redirect_uri!,
          new AccessDenied('The user denied the request'),
          interaction.state,
        );
      const target = authorizationResponseUrl(
        interaction.redirect_uri!,
        { code: outcome.code, state: interaction.state },
        web.config.baseUrl,
      );
      return reply.code(303).header('location', target).header('cache-control', 'no-store').send();
    },
  );

  web.post<{ Params: { interaction: string } }>(`${PAGE}/switch`, csrf, async (request, reply) => {
    await endWebSession(request, reply);
    return reply
      .code(303)
      .header('location', `/login/${encodeURIComponent(request.params.interaction)}`)
      .send();
  });
}
