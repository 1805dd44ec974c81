import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AccountError, acceptTotpCode, checkNewPassword, findAccount, setTotpSecret, storePasswordHash, type Account } from '../accounts/accounts.ts';
import { hashPassword } from '../accounts/passwords.ts';
import { recordSecurityEvent } from '../accounts/security-events.ts';
import { newTotpSecret, totpUri } from '../accounts/totp.ts';
import { endAllDeviceTrust, endDeviceTrust, listTrustedDevices } from '../accounts/trusted-devices.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { SCOPES, isScope, scopeList } from '../oauth/scopes.ts';
import { endAllUserSessions, endUserSession, listUserSessions } from '../oauth/sessions.ts';
import { sendPage, tooManyAttempts } from './pages.ts';
import { checkSignInPassword, checkTwoStepCode } from './sign-in.ts';
import { completeTwoStep, endOtherWebSessions, endPendingSignIns, endWebSession, readWebSession, setPendingTotpSecret, startWebSession, type WebSession } from './web-sessions.ts';

const ACCOUNT = '/account';
const SIGN_IN = '/account/sign-in';

type FormRequest = FastifyRequest<{ Body: Record<string, unknown> | undefined }>;

/** A form field as one string: a missing or repeated field is ''. */
const field = (request: FormRequest, name: string): string => {
  const value = request.body?.[name];
  return typeof value === 'string' ? value : '';
};

/** What a successful action says on the page it returns to (`/account?done=…`). */
const NOTICES: Record<string, string> = {
  'session-ended': 'The application was signed out. It has to ask you again to use your account.',
  'trust-ended': 'That device will be asked for a two-step code at its next sign-in.',
  'password-changed': 'Your password was changed. Every application and every other browser was signed out, and no device is trusted any more.',
  'two-step-on': 'Two-step verification is on. Signing in now needs a code from your authenticator app.',
  'two-step-off': 'Two-step verification is off.',
};

/** Errors shown in the section of the form that caused them. */
type SectionErrors = Partial<Record<'sessions' | 'devices' | 'password' | 'twoStep', string>>;

const formatTime = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ') + ' UTC';

/**
 * The account page (DESIGN "Account page"): the signed-in user's applications (sessions),
 * trusted devices, password and two-step verification. A signed-out visitor signs in at
 * /account/sign-in (the login pages' sign-in, under the same failure limits) and comes back.
 */
export async function accountPages(web: FastifyInstance): Promise<void> {
  const db = () => web.database.db;
  const csrf = { preHandler: web.csrfProtection };

  /** The fully signed-in browser and its account; otherwise sends it to sign in and answers undefined. */
  async function signedIn(request: FastifyRequest, reply: FastifyReply) {
    const session = await readWebSession(request);
    const account = session && !session.mfaPending ? await findAccount(db(), session.userId) : undefined;
    if (!session || !account) {
      reply.code(303).header('location', SIGN_IN).header('cache-control', 'no-store').send();
      return undefined;
    }
    return { session, account };
  }

  async function showAccount(reply: FastifyReply, session: WebSession, account: Account, options: { notice?: string; errors?: SectionErrors; status?: number } = {}) {
    let setup: { uri: string; qrSvg: string } | undefined;
    if (account.totpSecret === null) {
      // The secret to set up stays the same across reloads until a code confirms it.
      let secret = session.pendingTotpSecret;
      if (!secret) await setPendingTotpSecret(db(), session, (secret = newTotpSecret()));
      const uri = totpUri(secret, account.username);
      setup = { uri, qrSvg: await (await import('qrcode')).default.toString(uri, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' }) };
    }
    const [sessions, devices] = await Promise.all([listUserSessions(db(), account.userId), listTrustedDevices(db(), account.userId)]);
    return sendPage(
      reply,
      'account',
      {
        username: account.username,
        notice: options.notice,
        errors: options.errors ?? {},
        sessions: sessions.map((s) => ({
          sessionId: s.sessionId,
          applicationName: s.applicationName,
          scopes: scopeList(s.scope).map((scope) => (isScope(scope) ? SCOPES[scope] : scope)),
          since: formatTime(s.createdAt),
          sinceIso: new Date(s.createdAt).toISOString(),
          lastUsed: s.lastUsedAt === null ? undefined : formatTime(s.lastUsedAt),
          lastUsedIso: s.lastUsedAt === null ? undefined : new Date(s.lastUsedAt).toISOString(),
        })),
        devices: devices.map((d, index) => ({ trustId: d.trustId, label: `Device ${devices.length - index}`, since: formatTime(d.createdAt), sinceIso: new Date(d.createdAt).toISOString() })),
        twoStepOn: account.totpSecret !== null,
        setup,
      },
      options.status ?? 200,
    );
  }

  const backToAccount = (reply: FastifyReply, done: keyof typeof NOTICES | undefined) =>
    reply.code(303).header('location', done ? `${ACCOUNT}?done=${done}` : ACCOUNT).send();

  web.get<{ Querystring: { done?: unknown } }>(ACCOUNT, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const done = request.query.done;
    const notice = typeof done === 'string' && Object.hasOwn(NOTICES, done) ? NOTICES[done] : undefined;
    return showAccount(reply, current.session, current.account, notice ? { notice } : {});
  });

  // --- Signing in (for a browser that is not signed in yet) ---

  const signInPage = (reply: FastifyReply, data: { username?: string; error?: string } = {}, status = 200) =>
    sendPage(reply, 'signin', { appName: 'your account', action: SIGN_IN, ...data }, status);
  const twoStepPage = (reply: FastifyReply, error?: string, status = 200) =>
    sendPage(reply, 'two-step', { action: `${SIGN_IN}/two-step`, canTrustDevice: false, ...(error ? { error } : {}) }, status);

  web.get(SIGN_IN, async (request, reply) => {
    const session = await readWebSession(request);
    if (!session) return signInPage(reply);
    if (session.mfaPending) return twoStepPage(reply);
    return reply.code(303).header('location', ACCOUNT).send();
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(SIGN_IN, csrf, async (request, reply) => {
    const username = field(request, 'username').trim();
    const checked = await checkSignInPassword(request, field(request, 'password'), { login: username }, { page: 'account' });
    if (!checked.ok) {
      return checked.retryAfterMs > 0
        ? signInPage(reply, { username, error: tooManyAttempts(reply, 'failed sign-ins', checked.retryAfterMs) }, 429)
        : signInPage(reply, { username, error: 'Wrong username or password.' }, 401);
    }
    const needsCode = checked.account.totpSecret !== null;
    await startWebSession(request, reply, checked.account.userId, needsCode);
    if (!needsCode) await recordSecurityEvent(db(), request, { kind: 'sign_in_succeeded', userId: checked.account.userId, details: { two_step: 'off', page: 'account' } });
    return reply.code(303).header('location', needsCode ? SIGN_IN : ACCOUNT).send();
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${SIGN_IN}/two-step`, csrf, async (request, reply) => {
    const session = await readWebSession(request);
    if (!session?.mfaPending) return reply.code(303).header('location', SIGN_IN).send();
    const account = await findAccount(db(), session.userId);
    if (!account?.totpSecret) return reply.code(303).header('location', SIGN_IN).send();
    const checked = await checkTwoStepCode(request, account, field(request, 'code'), { page: 'account' });
    if (!checked.ok && checked.accountLimited) {
      // Past the account's limit the pending sign-in ends (DESIGN), all of them: the password is asked again.
      await endPendingSignIns(request, reply, account.userId);
      return signInPage(reply, { error: tooManyAttempts(reply, 'wrong codes', checked.retryAfterMs, 'Sign in again') }, 429);
    }
    if (!checked.ok && checked.retryAfterMs > 0) return twoStepPage(reply, tooManyAttempts(reply, 'wrong codes', checked.retryAfterMs), 429);
    if (!checked.ok) return twoStepPage(reply, checked.used ? 'That code was used already. Wait for the next one.' : 'That code is not right. Codes change every 30 seconds.', 401);
    await completeTwoStep(request, reply, session);
    await recordSecurityEvent(db(), request, { kind: 'sign_in_succeeded', userId: account.userId, details: { two_step: 'code', page: 'account' } });
    return reply.code(303).header('location', ACCOUNT).send();
  });

  web.post(`${ACCOUNT}/sign-out`, csrf, async (request, reply) => {
    await endWebSession(request, reply);
    return reply.code(303).header('location', SIGN_IN).send();
  });

  // --- The account's actions ---

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/sessions`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const sessionId = field(request, 'end_session');
    const ended = isUuid(sessionId) ? await endUserSession(db(), current.account.userId, normalizeUuid(sessionId)) : undefined;
    if (!ended) return showAccount(reply, current.session, current.account, { errors: { sessions: 'That application is not signed in to your account (any more).' }, status: 404 });
    await recordSecurityEvent(db(), request, { kind: 'session_ended', userId: current.account.userId, clientId: ended.clientId, details: { session_id: normalizeUuid(sessionId), page: 'account' } });
    return backToAccount(reply, 'session-ended');
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/devices`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const trustId = field(request, 'end_trust');
    const ended = /^[A-Za-z0-9_-]{43}$/.test(trustId) && (await endDeviceTrust(db(), current.account.userId, trustId));
    if (!ended) return showAccount(reply, current.session, current.account, { errors: { devices: 'That device is not trusted (any more).' }, status: 404 });
    await recordSecurityEvent(db(), request, { kind: 'device_trust_ended', userId: current.account.userId, details: { page: 'account' } });
    return backToAccount(reply, 'trust-ended');
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/password`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const { session, account } = current;
    const refuse = (message: string, status: number) => showAccount(reply, session, account, { errors: { password: message }, status });
    const newPassword = field(request, 'new_password');
    try {
      await checkNewPassword(newPassword, [account.username, account.email]);
    } catch (error) {
      if (error instanceof AccountError) return refuse(`${error.message}.`, 400);
      throw error;
    }
    const checked = await checkSignInPassword(request, field(request, 'current_password'), { account }, { page: 'account' });
    if (!checked.ok) {
      return checked.retryAfterMs > 0 ? refuse(tooManyAttempts(reply, 'failed sign-ins', checked.retryAfterMs), 429) : refuse('The current password is not right.', 401);
    }
    const passwordHash = await hashPassword(newPassword);
    const ended = await db()
      .transaction()
      .execute(async (trx) => {
        await storePasswordHash(trx, account.userId, passwordHash);
        await endOtherWebSessions(trx, session);
        return { sessions: await endAllUserSessions(trx, account.userId), devices: await endAllDeviceTrust(trx, account.userId) };
      });
    await recordSecurityEvent(db(), request, { kind: 'password_changed', userId: account.userId, details: { page: 'account', sessions_ended: ended.sessions, device_trusts_ended: ended.devices } });
    return backToAccount(reply, 'password-changed');
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/two-step`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const { session, account } = current;
    const turningOn = account.totpSecret === null;
    // The button says which form was sent; a stale page (already on, or already off) just reloads.
    if (field(request, 'two_step') !== (turningOn ? 'on' : 'off')) return backToAccount(reply, undefined);
    const secret = turningOn ? session.pendingTotpSecret : account.totpSecret;
    if (!secret) return backToAccount(reply, undefined);
    const code = field(request, 'code');
    const checked = await checkTwoStepCode(request, account, code, { page: 'account', ...(turningOn ? { setupSecret: secret } : {}) });
    if (!checked.ok) {
      const message =
        checked.retryAfterMs > 0 ? tooManyAttempts(reply, 'wrong codes', checked.retryAfterMs) : checked.used ? 'That code was used already. Wait for the next one.' : 'That code is not right. Codes change every 30 seconds.';
      return showAccount(reply, session, account, { errors: { twoStep: message }, status: checked.retryAfterMs > 0 ? 429 : 401 });
    }
    const devices = await db()
      .transaction()
      .execute(async (trx) => {
        await setTotpSecret(trx, account.userId, turningOn ? secret : null);
        // The confirming code is used up: it cannot sign in again (RFC 6238 §5.2).
        if (turningOn) await acceptTotpCode(trx, account.userId, code);
        await setPendingTotpSecret(trx, session, null);
        // A new (or no) second factor: trust given under the old one ends.
        return endAllDeviceTrust(trx, account.userId);
      });
    await recordSecurityEvent(db(), request, { kind: turningOn ? 'two_step_enabled' : 'two_step_disabled', userId: account.userId, details: { page: 'account', device_trusts_ended: devices } });
    return backToAccount(reply, turningOn ? 'two-step-on' : 'two-step-off');
  });
}
