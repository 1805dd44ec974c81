import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findAccount } from '../accounts/accounts.ts';
import { recordSecurityEvent } from '../accounts/security-events.ts';
import { isTrustedDevice, trustDevice } from '../accounts/trusted-devices.ts';
import { authorizationResponseUrl } from '../oauth/authorization-response.ts';
import { redirectWithError } from '../oauth/authorize.ts';
import { findApplication } from '../oauth/clients.ts';
import { decideInteraction } from '../oauth/consent.ts';
import { displayedUserCode } from '../oauth/device-authorizations.ts';
import { AccessDenied } from '../oauth/errors.ts';
import { findInteraction } from '../oauth/interactions.ts';
import { SCOPES, isScope, scopeList } from '../oauth/scopes.ts';
import { sendMessage, sendPage, tooManyAttempts } from './pages.ts';
import { passkeySignInView } from './passkey-pages.ts';
import { checkSignInPassword, checkTwoStepCode } from './sign-in.ts';
import { completeTwoStep, endPendingSignIns, endWebSession, readWebSession, startWebSession } from './web-sessions.ts';

const PAGE = '/login/:interaction';

type LoginRequest = FastifyRequest<{ Params: { interaction: string }; Body: Record<string, string | undefined> }>;

const expired = (reply: FastifyReply) =>
  sendMessage(reply, 'This sign-in has expired', 'This sign-in link has expired or was already used. Go back to the application and start again.', 404);

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
    return { interaction, app, action: `/login/${request.params.interaction}` };
  }

  web.get<{ Params: { interaction: string } }>(PAGE, async (request, reply) => {
    const loaded = await load(request as LoginRequest, reply);
    if (!loaded) return reply;
    const session = await readWebSession(request);
    if (!session) return sendPage(reply, 'signin', { appName: loaded.app.name, action: `${loaded.action}/password`, ...passkeySignInView(web, `${loaded.action}/passkey`) });
    if (session.mfaPending) return sendPage(reply, 'two-step', { action: `${loaded.action}/two-step`, canTrustDevice: loaded.interaction.device_id !== null });
    const account = await findAccount(db(), session.userId);
    return sendPage(reply, 'consent', {
      appName: loaded.app.name,
      username: account?.username ?? '',
      scopes: scopeList(loaded.interaction.scope).map((scope) => (isScope(scope) ? SCOPES[scope] : scope)),
      userCode: loaded.interaction.device_code === null ? undefined : await displayedUserCode(db(), loaded.interaction.device_code),
      action: `${loaded.action}/consent`,
      switchAction: `${loaded.action}/switch`,
    });
  });

  web.post<{ Params: { interaction: string }; Body: Record<string, string | undefined> }>(`${PAGE}/password`, csrf, async (request, reply) => {
    const loaded = await load(request, reply);
    if (!loaded) return reply;
    const username = String(request.body?.username ?? '').trim();
    const password = String(request.body?.password ?? '');
    const again = (error: string, status: number) =>
      sendPage(reply, 'signin', { appName: loaded.app.name, action: `${loaded.action}/password`, ...passkeySignInView(web, `${loaded.action}/passkey`), username, error }, status);
    const checked = await checkSignInPassword(request, password, { login: username }, { page: 'sign_in', clientId: loaded.app.clientId });
    if (!checked.ok) return checked.retryAfterMs > 0 ? again(tooManyAttempts(reply, 'failed sign-ins', checked.retryAfterMs), 429) : again('Wrong username or password.', 401);
    const { account } = checked;
    const needsCode = account.totpSecret !== null && !(await isTrustedDevice(db(), account.userId, loaded.interaction.device_id));
    await startWebSession(request, reply, account.userId, needsCode);
    if (!needsCode) await recordSecurityEvent(db(), request, { kind: 'sign_in_succeeded', userId: account.userId, clientId: loaded.app.clientId, details: { two_step: account.totpSecret !== null ? 'trusted_device' : 'off', page: 'sign_in' } });
    return reply.code(303).header('location', loaded.action).send();
  });

  web.post<{ Params: { interaction: string }; Body: Record<string, string | undefined> }>(`${PAGE}/two-step`, csrf, async (request, reply) => {
    const loaded = await load(request, reply);
    if (!loaded) return reply;
    const session = await readWebSession(request);
    if (!session?.mfaPending) return reply.code(303).header('location', loaded.action).send();
    const again = (error: string, status: number) =>
      sendPage(reply, 'two-step', { action: `${loaded.action}/two-step`, canTrustDevice: loaded.interaction.device_id !== null, error }, status);
    const account = await findAccount(db(), session.userId);
    if (!account?.totpSecret) return reply.code(303).header('location', loaded.action).send();
    const checked = await checkTwoStepCode(request, account, String(request.body?.code ?? ''), { page: 'sign_in', clientId: loaded.app.clientId });
    if (!checked.ok && checked.accountLimited) {
      // Past the account's limit the pending sign-in ends (all of them, from any browser).
      await endPendingSignIns(request, reply, session.userId);
      const error = tooManyAttempts(reply, 'wrong codes', checked.retryAfterMs, 'Sign in again');
      return sendPage(reply, 'signin', { appName: loaded.app.name, action: `${loaded.action}/password`, ...passkeySignInView(web, `${loaded.action}/passkey`), error }, 429);
    }
    if (!checked.ok && checked.retryAfterMs > 0) return again(tooManyAttempts(reply, 'wrong codes', checked.retryAfterMs), 429);
    if (!checked.ok) return again(checked.used ? 'That code was used already. Wait for the next one.' : 'That code is not right. Codes change every 30 seconds.', 401);
    if (request.body?.trust_device && loaded.interaction.device_id) await trustDevice(db(), session.userId, loaded.interaction.device_id);
    await completeTwoStep(request, reply, session);
    await recordSecurityEvent(db(), request, { kind: 'sign_in_succeeded', userId: account.userId, clientId: loaded.app.clientId, details: { two_step: 'code', page: 'sign_in' } });
    return reply.code(303).header('location', loaded.action).send();
  });

  web.post<{ Params: { interaction: string }; Body: Record<string, string | undefined> }>(`${PAGE}/consent`, csrf, async (request, reply) => {
    const loaded = await load(request, reply);
    if (!loaded) return reply;
    const session = await readWebSession(request);
    if (!session || session.mfaPending) return reply.code(303).header('location', loaded.action).send();
    const decision = request.body?.decision;
    if (decision !== 'approve' && decision !== 'deny') return reply.code(303).header('location', loaded.action).send();
    const { interaction } = loaded;
    const outcome = await decideInteraction(db(), request.params.interaction, interaction, session.userId, decision === 'approve');
    if (outcome.kind === 'ended') return expired(reply);
    if (outcome.kind === 'device expired') return sendMessage(reply, 'This code has expired', 'Start the sign-in on your device again to get a new code.', 410);
    if (outcome.kind === 'device') {
      return outcome.approved
        ? sendMessage(reply, 'Device connected', 'You are signed in on your device. You can close this page and return to it.')
        : sendMessage(reply, 'Request denied', 'The device was not given access. You can close this page.');
    }
    if (outcome.kind === 'denied') return redirectWithError(reply, interaction.redirect_uri!, new AccessDenied('The user denied the request'), interaction.state);
    const target = authorizationResponseUrl(interaction.redirect_uri!, { code: outcome.code, state: interaction.state }, web.config.baseUrl);
    return reply.code(303).header('location', target).header('cache-control', 'no-store').send();
  });

  web.post<{ Params: { interaction: string } }>(`${PAGE}/switch`, csrf, async (request, reply) => {
    await endWebSession(request, reply);
    return reply.code(303).header('location', `/login/${encodeURIComponent(request.params.interaction)}`).send();
  });
}
