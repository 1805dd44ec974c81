import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EMAIL_RULE } from '../accounts/account-names.ts';
import {
  backupCodesLeft,
  changePassword,
  endApplicationSession,
  endBrowserSignIn,
  endOtherBrowserSignIns,
  endTrustedDevice,
  renewBackupCodes,
  turnTwoStepOff,
  turnTwoStepOn,
  twoStepSetupSecret,
} from '../accounts/account-service.ts';
import { type Account, findAccount } from '../accounts/accounts.ts';
import { PASSWORD_RULE } from '../accounts/password-rules.ts';
import { pendingEmailChange } from '../accounts/self-service.ts';
import { codeStep, type Limited, passwordStep, type Wrong } from '../accounts/sign-in.ts';
import { totpUri } from '../accounts/totp.ts';
import { listTrustedDevices } from '../accounts/trusted-devices.ts';
import { listWebSessions } from '../accounts/web-sessions.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { isScope, SCOPES, scopeList } from '../oauth/scopes.ts';
import { listUserSessions } from '../oauth/user-sessions.ts';
import { returnAfterSignIn } from './apps-pages.ts';
import { backupCodesPage, toBackupCodes } from './backup-codes-page.ts';
import { describeBrowser, networkOf } from './browser-description.ts';
import { registerEmailChange } from './email-change.ts';
import { ACCOUNT_LOCKED, field as formField, sendPage, tooManyAttempts, wrongCodeMessage } from './pages.ts';
import { PASSKEY_NOTICES, passkeyAccountRoutes, passkeySectionView, passkeySignInView } from './passkey-pages.ts';
import { accountContext } from './sign-in.ts';
import { onlyOnce } from './single-use-submit.ts';
import {
  endWebSession,
  forgetWebSession,
  readWebSession,
  startBrowserSignIn,
  type WebSession,
} from './web-sessions.ts';

const ACCOUNT = '/account';
const SIGN_IN = '/account/sign-in';

type FormRequest = FastifyRequest<{ Body: Record<string, unknown> | undefined }>;

/** A form field as one string: a missing or repeated field is ''. */
const field = (request: FormRequest, name: string): string => formField(request.body, name);

/** What a successful action says on the page it returns to (`/account?done=…`). */
const NOTICES: Record<string, string> = {
  'session-ended': 'The application was signed out. It has to ask you again to use your account.',
  'trust-ended': 'That device will be asked for a two-step code at its next sign-in.',
  'browser-ended': 'That browser was signed out. It has to sign in again to use your account.',
  'other-browsers-ended': 'Every other browser was signed out. They have to sign in again to use your account.',
  'password-changed':
    'Your password was changed. Every application and every other browser was signed out, and no device is trusted any more.',
  'two-step-off': 'Two-step verification is off.',
  'email-link-sent':
    'We sent a link to the new address. Your e-mail address changes when you open it (within 24 hours).',
  'email-link-resent': 'We sent a new link to the new address. The link sent before no longer works.',
  'backup-codes-new': 'You have a new set of backup codes. The old ones no longer work.',
  'backup-codes-saved': 'Keep your backup codes somewhere safe, apart from your phone.',
  ...PASSKEY_NOTICES,
};

/** Errors shown in the section of the form that caused them. */
type SectionErrors = Partial<
  Record<
    'sessions' | 'browsers' | 'devices' | 'password' | 'twoStep' | 'backupCodes' | 'passkeys' | 'email' | 'emailResend',
    string
  >
>;

const formatTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/**
 * The account page (DESIGN "Account page"): the signed-in user's applications (sessions),
 * trusted devices, password and two-step verification. A signed-out visitor signs in at
 * /account/sign-in (the login pages' sign-in, under the same failure limits) and comes back.
 */
export async function accountPages(web: FastifyInstance): Promise<void> {
  const db = () => web.database.db;
  const csrf = { preHandler: web.csrfProtection };
  const context = (request: FastifyRequest) => accountContext(request, { page: 'account' });

  /** A refused password or code, as the sentence shown next to its input, and its status. */
  const refusal = (reply: FastifyReply, outcome: Wrong | Limited, what: 'password' | 'code'): [string, number] => {
    if (outcome.kind === 'limited')
      return [
        tooManyAttempts(reply, what === 'password' ? 'failed sign-ins' : 'wrong codes', outcome.retryAfterMs),
        429,
      ];
    return [what === 'password' ? 'The current password is not right.' : wrongCodeMessage(outcome), 401];
  };

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

  async function showAccount(
    reply: FastifyReply,
    session: WebSession,
    account: Account,
    options: {
      notice?: string;
      errors?: SectionErrors;
      status?: number;
      newEmail?: string;
      emailResent?: boolean;
    } = {},
  ) {
    let setup: { uri: string; qrSvg: string } | undefined;
    if (account.totpSecret === null) {
      const uri = totpUri(await twoStepSetupSecret(context(reply.request), session), account.username);
      setup = {
        uri,
        qrSvg: await (await import('qrcode')).default.toString(uri, {
          type: 'svg',
          margin: 2,
          errorCorrectionLevel: 'M',
        }),
      };
    }
    // The new codes themselves are shown once on their own page (backup-codes-page.ts).
    const backupCodes =
      account.totpSecret === null ? undefined : { left: await backupCodesLeft({ db: db() }, account) };
    const [sessions, devices, browsers] = await Promise.all([
      listUserSessions(db(), account.userId),
      listTrustedDevices(db(), account.userId),
      listWebSessions(db(), account.userId),
    ]);
    return sendPage(
      reply,
      'account',
      {
        username: account.username,
        email: account.email,
        // The address a link went to (an e-mail change not confirmed yet), and what a refused change had typed.
        pendingEmail: await pendingEmailChange(db(), account.userId),
        emailResent: options.emailResent ?? false,
        newEmail: options.newEmail,
        rules: { email: EMAIL_RULE, password: PASSWORD_RULE },
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
        // This browser first, then the others as last seen.
        browsers: [
          ...browsers.filter((b) => b.publicId === session.publicId),
          ...browsers.filter((b) => b.publicId !== session.publicId),
        ].map((b) => ({
          id: b.publicId,
          ...describeBrowser(b.userAgent),
          network: networkOf(b.ip),
          thisBrowser: b.publicId === session.publicId,
          since: formatTime(b.createdAt),
          sinceIso: new Date(b.createdAt).toISOString(),
          lastActive: formatTime(b.lastSeenAt),
          lastActiveIso: new Date(b.lastSeenAt).toISOString(),
        })),
        devices: devices.map((d, index) => ({
          trustId: d.trustId,
          label: `Device ${devices.length - index}`,
          since: formatTime(d.createdAt),
          sinceIso: new Date(d.createdAt).toISOString(),
        })),
        twoStepOn: account.totpSecret !== null,
        setup,
        backupCodes,
        passkeys: await passkeySectionView(web, account.userId, session),
      },
      options.status ?? 200,
    );
  }

  registerEmailChange(web, {
    signedIn,
    showEmailError: (reply, current, error, status) =>
      showAccount(reply, current.session, current.account, {
        errors: { [error.resend ? 'emailResend' : 'email']: error.message },
        newEmail: error.typed,
        status,
      }),
  });

  const backToAccount = (reply: FastifyReply, done: keyof typeof NOTICES | undefined) =>
    reply
      .code(303)
      .header('location', done ? `${ACCOUNT}?done=${done}` : ACCOUNT)
      .send();

  await backupCodesPage(web, { signedIn });

  web.get<{ Querystring: { done?: unknown } }>(ACCOUNT, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current || returnAfterSignIn(request, reply)) return reply;
    const done = request.query.done;
    const notice = typeof done === 'string' && Object.hasOwn(NOTICES, done) ? NOTICES[done] : undefined;
    return showAccount(reply, current.session, current.account, {
      ...(notice ? { notice } : {}),
      emailResent: done === 'email-link-resent',
    });
  });

  // --- Signing in (for a browser that is not signed in yet) ---

  const signInPage = (
    reply: FastifyReply,
    data: { username?: string; error?: string; notice?: string } = {},
    status = 200,
  ) =>
    sendPage(
      reply,
      'signin',
      { appName: 'your account', action: SIGN_IN, ...passkeySignInView(web, `${SIGN_IN}/passkey`), ...data },
      status,
    );
  const twoStepPage = (reply: FastifyReply, error?: string, status = 200) =>
    sendPage(
      reply,
      'two-step',
      { action: `${SIGN_IN}/two-step`, canTrustDevice: false, ...(error ? { error } : {}) },
      status,
    );

  web.get<{ Querystring: { signed_out?: unknown } }>(SIGN_IN, async (request, reply) => {
    const session = await readWebSession(request);
    if (!session)
      return signInPage(reply, request.query.signed_out === undefined ? {} : { notice: 'You are signed out.' });
    if (session.mfaPending) return twoStepPage(reply);
    return reply.code(303).header('location', ACCOUNT).send();
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(SIGN_IN, csrf, async (request, reply) => {
    const username = field(request, 'username').trim();
    const outcome = await passwordStep(context(request), { login: username, password: field(request, 'password') });
    if (outcome.kind === 'limited')
      return signInPage(
        reply,
        { username, error: tooManyAttempts(reply, 'failed sign-ins', outcome.retryAfterMs) },
        429,
      );
    if (outcome.kind === 'locked') return signInPage(reply, { username, error: ACCOUNT_LOCKED }, 403);
    if (outcome.kind !== 'signed_in' && outcome.kind !== 'needs_code')
      return signInPage(reply, { username, error: 'Wrong username or password.' }, 401);
    await startBrowserSignIn(request, reply, outcome);
    return reply
      .code(303)
      .header('location', outcome.kind === 'needs_code' ? SIGN_IN : ACCOUNT)
      .send();
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${SIGN_IN}/two-step`, csrf, async (request, reply) => {
    const session = await readWebSession(request);
    if (!session?.mfaPending) return reply.code(303).header('location', SIGN_IN).send();
    const outcome = await codeStep(context(request), session.userId, { code: field(request, 'code') });
    if (outcome.kind === 'limited' && outcome.accountLimited) {
      // Past the account's limit the pending sign-in ended (DESIGN), all of them: the password is asked again.
      forgetWebSession(reply);
      return signInPage(
        reply,
        { error: tooManyAttempts(reply, 'wrong codes', outcome.retryAfterMs, 'Sign in again') },
        429,
      );
    }
    if (outcome.kind === 'limited')
      return twoStepPage(reply, tooManyAttempts(reply, 'wrong codes', outcome.retryAfterMs), 429);
    if (outcome.kind === 'wrong') return twoStepPage(reply, wrongCodeMessage(outcome), 401);
    if (outcome.kind !== 'signed_in') return reply.code(303).header('location', SIGN_IN).send();
    await startBrowserSignIn(request, reply, outcome);
    return reply.code(303).header('location', ACCOUNT).send();
  });

  web.post(`${ACCOUNT}/sign-out`, csrf, async (request, reply) => {
    await endWebSession(request, reply);
    // The sign-in page then says the sign-out worked (it shows this only to a signed-out browser).
    return reply.code(303).header('location', `${SIGN_IN}?signed_out=1`).send();
  });

  // --- The account's actions ---

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/sessions`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const sessionId = field(request, 'end_session');
    const ended =
      isUuid(sessionId) && (await endApplicationSession(context(request), current.account, normalizeUuid(sessionId)));
    if (!ended)
      return showAccount(reply, current.session, current.account, {
        errors: { sessions: 'That application is not signed in to your account (any more).' },
        status: 404,
      });
    return backToAccount(reply, 'session-ended');
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/browsers`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const publicId = field(request, 'end_browser');
    const ended =
      isUuid(publicId) && (await endBrowserSignIn(context(request), current.account, normalizeUuid(publicId)));
    if (!ended)
      return showAccount(reply, current.session, current.account, {
        errors: { browsers: 'That browser is not signed in to your account (any more).' },
        status: 404,
      });
    // Signing out this very browser from its own list is a sign-out.
    if (normalizeUuid(publicId) === current.session.publicId) {
      forgetWebSession(reply);
      return reply.code(303).header('location', `${SIGN_IN}?signed_out=1`).send();
    }
    return backToAccount(reply, 'browser-ended');
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(
    `${ACCOUNT}/browsers/others`,
    csrf,
    async (request, reply) => {
      const current = await signedIn(request, reply);
      if (!current) return reply;
      // The button says which form was sent; anything else just reloads.
      if (field(request, 'end_other_browsers') !== 'all') return backToAccount(reply, undefined);
      await endOtherBrowserSignIns(context(request), current.account, current.session);
      return backToAccount(reply, 'other-browsers-ended');
    },
  );

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/devices`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const trustId = field(request, 'end_trust');
    const ended =
      /^[A-Za-z0-9_-]{43}$/.test(trustId) && (await endTrustedDevice(context(request), current.account, trustId));
    if (!ended)
      return showAccount(reply, current.session, current.account, {
        errors: { devices: 'That device is not trusted (any more).' },
        status: 404,
      });
    return backToAccount(reply, 'trust-ended');
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/password`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const { session, account } = current;
    const outcome = await changePassword(context(request), account, {
      currentPassword: field(request, 'current_password'),
      newPassword: field(request, 'new_password'),
      session,
    });
    if (outcome.kind === 'changed') return backToAccount(reply, 'password-changed');
    const [message, status] = outcome.kind === 'invalid' ? [outcome.message, 400] : refusal(reply, outcome, 'password');
    return showAccount(reply, session, account, { errors: { password: message }, status });
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/two-step`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const { session, account } = current;
    const turningOn = account.totpSecret === null;
    // The button says which form was sent; a stale page (already on, or already off) just reloads.
    if (field(request, 'two_step') !== (turningOn ? 'on' : 'off')) return backToAccount(reply, undefined);
    const code = field(request, 'code');
    const outcome = turningOn
      ? await turnTwoStepOn(context(request), account, { session, code })
      : await turnTwoStepOff(context(request), account, code);
    if (outcome.kind === 'stale') return backToAccount(reply, undefined);
    if (outcome.kind === 'wrong' || outcome.kind === 'limited') {
      const [message, status] = refusal(reply, outcome, 'code');
      return showAccount(reply, session, account, { errors: { twoStep: message }, status });
    }
    if (outcome.kind === 'on') return toBackupCodes(reply, 'two-step-on');
    return backToAccount(reply, 'two-step-off');
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${ACCOUNT}/backup-codes`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const { session, account } = current;
    if (field(request, 'backup_codes') !== 'new') return backToAccount(reply, undefined);
    if (await onlyOnce(request, reply)) return reply;
    const outcome = await renewBackupCodes(context(request), account, { session, code: field(request, 'code') });
    if (outcome.kind === 'stale') return backToAccount(reply, undefined);
    if (outcome.kind === 'wrong' || outcome.kind === 'limited') {
      const [message, status] = refusal(reply, outcome, 'code');
      return showAccount(reply, session, account, { errors: { backupCodes: message }, status });
    }
    return toBackupCodes(reply, 'backup-codes-new');
  });
  await passkeyAccountRoutes(web, {
    signedIn,
    showError: (reply, { session, account }, message, status) =>
      showAccount(reply, session, account, { errors: { passkeys: message }, status }),
  });
}
