import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findAccount, findAccountByLogin, type Account } from '../accounts/accounts.ts';
import { verifyPassword } from '../accounts/passwords.ts';
import { verifyTotp } from '../accounts/totp.ts';
import { isTrustedDevice, trustDevice } from '../accounts/trusted-devices.ts';
import { failureLimiter } from '../http/rate-limit.ts';
import { issueAuthorizationCode } from '../oauth/authorization-codes.ts';
import { redirectWithError } from '../oauth/authorize.ts';
import { findApplication } from '../oauth/clients.ts';
import { formatUserCode } from '../oauth/device-authorization.ts';
import { AccessDenied } from '../oauth/errors.ts';
import { endInteraction, findInteraction, type Interaction } from '../oauth/interactions.ts';
import { SCOPES, isScope, scopeList } from '../oauth/scopes.ts';
import { sendMessage, sendPage, tooManyAttempts } from './pages.ts';
import { completeTwoStep, endWebSession, readWebSession, startWebSession } from './web-sessions.ts';

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
  // The account a sign-in names, looked up once per request: the per-account limit and the
  // password check both need it.
  const loginOf = (request: FastifyRequest) => String((request.body as Record<string, unknown> | undefined)?.username ?? '').trim();
  const accountsNamed = new WeakMap<FastifyRequest, Promise<Account | undefined>>();
  const accountNamedIn = (request: FastifyRequest) => {
    let account = accountsNamed.get(request);
    if (!account) accountsNamed.set(request, (account = findAccountByLogin(db(), loginOf(request))));
    return account;
  };
  const passwordFailuresByIp = failureLimiter(web, { name: 'password-ip', max: 30, windowMs: 15 * 60_000, key: (r) => r.ip });
  const passwordFailuresByAccount = failureLimiter(web, {
    name: 'password-account',
    max: 10,
    windowMs: 15 * 60_000,
    // Keyed by the account, so its username and its email address share one count.
    key: async (r) => (await accountNamedIn(r))?.userId ?? loginOf(r).toLowerCase(),
  });
  const codeFailures = failureLimiter(web, { name: 'totp-ip', max: 10, windowMs: 15 * 60_000, key: (r) => r.ip });
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
    if (!session) return sendPage(reply, 'signin', { appName: loaded.app.name, action: `${loaded.action}/password` });
    if (session.mfaPending) return sendPage(reply, 'two-step', { action: `${loaded.action}/two-step`, canTrustDevice: loaded.interaction.device_id !== null });
    const account = await findAccount(db(), session.userId);
    return sendPage(reply, 'consent', {
      appName: loaded.app.name,
      username: account?.username ?? '',
      scopes: scopeList(loaded.interaction.scope).map((scope) => (isScope(scope) ? SCOPES[scope] : scope)),
      userCode: await userCodeOf(loaded.interaction),
      action: `${loaded.action}/consent`,
      switchAction: `${loaded.action}/switch`,
    });
  });

  web.post<{ Params: { interaction: string }; Body: Record<string, string | undefined> }>(`${PAGE}/password`, csrf, async (request, reply) => {
    const loaded = await load(request, reply);
    if (!loaded) return reply;
    const username = loginOf(request);
    const password = String(request.body?.password ?? '');
    const again = (error: string, status: number) => sendPage(reply, 'signin', { appName: loaded.app.name, action: `${loaded.action}/password`, username, error }, status);
    const wait = Math.max(await passwordFailuresByIp.retryAfter(request), await passwordFailuresByAccount.retryAfter(request));
    if (wait > 0) return again(tooManyAttempts(reply, 'failed sign-ins', wait), 429);
    const account = await accountNamedIn(request);
    if (!(await verifyPassword(account?.passwordHash, password)) || !account) {
      await Promise.all([passwordFailuresByIp.recordFailure(request), passwordFailuresByAccount.recordFailure(request)]);
      return again('Wrong username or password.', 401);
    }
    const needsCode = account.totpSecret !== null && !(await isTrustedDevice(db(), account.userId, loaded.interaction.device_id));
    await startWebSession(request, reply, account.userId, needsCode);
    return reply.code(303).header('location', loaded.action).send();
  });

  web.post<{ Params: { interaction: string }; Body: Record<string, string | undefined> }>(`${PAGE}/two-step`, csrf, async (request, reply) => {
    const loaded = await load(request, reply);
    if (!loaded) return reply;
    const session = await readWebSession(request);
    if (!session?.mfaPending) return reply.code(303).header('location', loaded.action).send();
    const again = (error: string, status: number) =>
      sendPage(reply, 'two-step', { action: `${loaded.action}/two-step`, canTrustDevice: loaded.interaction.device_id !== null, error }, status);
    const wait = await codeFailures.retryAfter(request);
    if (wait > 0) return again(tooManyAttempts(reply, 'wrong codes', wait), 429);
    const account = await findAccount(db(), session.userId);
    if (!account?.totpSecret || !verifyTotp(account.totpSecret, String(request.body?.code ?? ''))) {
      await codeFailures.recordFailure(request);
      return again('That code is not right. Codes change every 30 seconds.', 401);
    }
    if (request.body?.trust_device && loaded.interaction.device_id) await trustDevice(db(), account.userId, loaded.interaction.device_id);
    await completeTwoStep(request, reply, session);
    return reply.code(303).header('location', loaded.action).send();
  });

  web.post<{ Params: { interaction: string }; Body: Record<string, string | undefined> }>(`${PAGE}/consent`, csrf, async (request, reply) => {
    const loaded = await load(request, reply);
    if (!loaded) return reply;
    const session = await readWebSession(request);
    if (!session || session.mfaPending) return reply.code(303).header('location', loaded.action).send();
    const decision = request.body?.decision;
    if (decision !== 'approve' && decision !== 'deny') return reply.code(303).header('location', loaded.action).send();
    if (!(await endInteraction(db(), request.params.interaction))) return expired(reply);
    const { interaction } = loaded;
    if (interaction.device_code !== null) return finishDeviceLogin(reply, interaction.device_code, session.userId, decision === 'approve');
    if (decision === 'deny') return redirectWithError(reply, interaction.redirect_uri!, new AccessDenied('The user denied the request'), interaction.state);
    const code = await issueAuthorizationCode(db(), {
      clientId: interaction.client_id,
      userId: session.userId,
      redirectUri: interaction.redirect_uri!,
      scope: interaction.scope,
      codeChallenge: interaction.code_challenge!,
      deviceId: interaction.device_id,
    });
    const target = new URL(interaction.redirect_uri!);
    target.searchParams.set('code', code);
    if (interaction.state) target.searchParams.set('state', interaction.state);
    return reply.code(303).header('location', target.toString()).header('cache-control', 'no-store').send();
  });

  web.post<{ Params: { interaction: string } }>(`${PAGE}/switch`, csrf, async (request, reply) => {
    await endWebSession(request, reply);
    return reply.code(303).header('location', `/login/${request.params.interaction}`).send();
  });

  async function userCodeOf(interaction: Interaction): Promise<string | undefined> {
    if (interaction.device_code === null) return undefined;
    const row = await db().selectFrom('device_authorizations').select('user_code').where('device_code', '=', interaction.device_code).executeTakeFirst();
    return row && formatUserCode(row.user_code);
  }

  async function finishDeviceLogin(reply: FastifyReply, deviceCode: string, userId: string, approved: boolean) {
    const updated = await db()
      .updateTable('device_authorizations')
      .set(approved ? { status: 'approved', user_id: userId } : { status: 'denied' })
      .where('device_code', '=', deviceCode)
      .where('status', '=', 'pending')
      .where('expires_at', '>', Date.now())
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) return sendMessage(reply, 'This code has expired', 'Start the sign-in on your device again to get a new code.', 410);
    return approved
      ? sendMessage(reply, 'Device connected', 'You are signed in on your device. You can close this page and return to it.')
      : sendMessage(reply, 'Request denied', 'The device was not given access. You can close this page.');
  }
}
