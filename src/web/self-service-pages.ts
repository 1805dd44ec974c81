import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkEmailAddress, EMAIL_RULE, USERNAME_RULE } from '../accounts/account-names.ts';
import { findAccount } from '../accounts/accounts.ts';
import { PASSWORD_RULE } from '../accounts/password-rules.ts';
import { completeReset, completeSignUp, confirmEmailChange, requestCode } from '../accounts/self-service.ts';
import {
  findByFlow,
  findByLink,
  type Purpose,
  proveByCode,
  proveByLink,
  type VerificationRequest,
} from '../accounts/verification-requests.ts';
import { completeInvitedSignUpPage, INVITATION_FIELD, showInvitedSignUp } from './invited-sign-up.ts';
import { sendNotFoundPage } from './not-found-pages.ts';
import { ACCOUNT_LOCKED, sendMessage, sendPage, tooManyAttempts, wrongCodeMessage } from './pages.ts';
import {
  accountMailer,
  clearFlowCookie,
  countCodeRequest,
  field,
  flowToken,
  invitationsAccepted,
  safeReturnTo,
  selfServiceContext,
  setFlowCookie,
  signUpOpen,
} from './self-service-support.ts';
import { onlyOnce } from './single-use-submit.ts';
import { startBrowserSignIn } from './web-sessions.ts';

const SIGN_UP = '/account/sign-up';
const FORGOT = '/account/forgot';
const VERIFY = '/account/verify';

type FormRequest = FastifyRequest<{ Body: Record<string, unknown> | undefined }>;

const MAIL_FAILED = 'We could not send the e-mail just now. Nothing was changed: please try again in a few minutes.';
/** What the pages show beside their inputs before anything is submitted (from the rules' own modules). */
const RULES = { email: EMAIL_RULE, username: USERNAME_RULE, password: PASSWORD_RULE };
const ENDED =
  'That code has expired, was replaced by a newer one or was tried too often. Enter your address again to get a new one.';

/**
 * The self-service pages (DESIGN "Self-service accounts"): sign-up at /account/sign-up, password
 * reset at /account/forgot, and the links of their messages (and of the e-mail change) at
 * /account/verify. A browser's place in a flow is its flow cookie; every step is a form that
 * redirects (303) to the flow's page, or shows it again with the error next to the input.
 *
 * A link opened with GET only shows a button that POSTs it: mail scanners and link prefetchers
 * open links by themselves, and must not use up (or complete) a request.
 */
export async function selfServicePages(web: FastifyInstance): Promise<void> {
  const db = () => web.database.db;
  const csrf = { preHandler: web.csrfProtection };
  const send = accountMailer(web);
  const links = { baseUrl: web.config.baseUrl, signUpOpen: web.config.signUp === 'open' };
  const seeOther = (reply: FastifyReply, location: string) =>
    reply.code(303).header('location', location).header('cache-control', 'no-store').send();

  // --- Sign-up ---

  type SignUpView = {
    step: 'email' | 'code' | 'details';
    error?: Partial<Record<'email' | 'code' | 'resend' | 'username' | 'password' | 'form', string>>;
    /** The address typed (email step), or the one the code went to (code and details steps). */
    email?: string;
    username?: string;
    returnTo?: string | null;
    resent?: boolean;
  };
  const signUpPage = (reply: FastifyReply, view: SignUpView, status = 200) =>
    sendPage(reply, 'sign-up', { error: {}, returnTo: null, rules: RULES, ...view }, status);
  /** The browser's request of `purpose` at `stage`: the address its code went to. */
  const requestOf = (request: FastifyRequest, purpose: 'sign_up' | 'reset', stage: 'sent' | 'verified') =>
    findByFlow(db(), purpose, flowToken(request, purpose), stage);

  /**
   * "Send the code again" of a code page: a new request for the address the code went to, as if
   * the address were entered again (the same limits; the new code replaces the old one).
   */
  async function resend(
    request: FormRequest,
    reply: FastifyReply,
    purpose: 'sign_up' | 'reset',
    show: (
      view: { step: 'email' | 'code'; email?: string; error?: { email?: string; resend?: string } },
      status: number,
    ) => FastifyReply,
  ) {
    const pending: VerificationRequest | undefined = await requestOf(request, purpose, 'sent');
    if (!pending) return show({ step: 'email', error: { email: ENDED } }, 410);
    const wait = await countCodeRequest(request, pending.address);
    if (wait > 0)
      return show(
        {
          step: 'code',
          email: pending.address,
          error: { resend: tooManyAttempts(reply, 'requests for this address or from your network', wait) },
        },
        429,
      );
    const outcome = await requestCode(db(), send, links, {
      purpose,
      address: pending.address,
      returnTo: pending.return_to,
    });
    // The earlier code was replaced already: the address is entered again.
    if (outcome.kind === 'mail failed')
      return show({ step: 'email', email: pending.address, error: { email: MAIL_FAILED } }, 503);
    setFlowCookie(request, reply, purpose, outcome.flowToken);
    return seeOther(reply, `${purpose === 'sign_up' ? SIGN_UP : FORGOT}?resent`);
  }

  // With SIGN_UP=closed the sign-up pages do not exist (404); with SIGN_UP=invite only an
  // invitation's link and form do (invited-sign-up.ts), and the rest of the sign-up is 404.
  if (invitationsAccepted(web)) {
    web.get<{ Querystring: { return_to?: unknown; restart?: unknown; resent?: unknown; invitation?: unknown } }>(
      SIGN_UP,
      async (request, reply) => {
        if (request.query.invitation !== undefined) return showInvitedSignUp(request, reply, request.query.invitation);
        if (!signUpOpen(web)) return sendNotFoundPage(reply);
        const returnTo = safeReturnTo(request.query.return_to);
        if (request.query.restart === undefined) {
          const proven = await requestOf(request, 'sign_up', 'verified');
          if (proven) return signUpPage(reply, { step: 'details', email: proven.address });
          const sent = await requestOf(request, 'sign_up', 'sent');
          if (sent)
            return signUpPage(reply, { step: 'code', email: sent.address, resent: request.query.resent !== undefined });
        }
        return signUpPage(reply, { step: 'email', returnTo });
      },
    );

    // Without an invitation, the 404 comes before the CSRF check (as for any unknown page).
    const invitedOrOpen = async (request: FormRequest, reply: FastifyReply) => {
      if (!signUpOpen(web) && field(request, INVITATION_FIELD) === '') return sendNotFoundPage(reply);
    };
    web.post<{ Body: Record<string, unknown> | undefined }>(
      SIGN_UP,
      { preHandler: [invitedOrOpen, web.csrfProtection] },
      async (request, reply) => {
        if (field(request, INVITATION_FIELD) !== '') return completeInvitedSignUpPage(request, reply);
        return emailSignUp(request, reply);
      },
    );
  }

  async function emailSignUp(request: FormRequest, reply: FastifyReply) {
    if (await onlyOnce(request, reply)) return reply;
    const returnTo = safeReturnTo(field(request, 'return_to'));
    const email = checkEmailAddress(field(request, 'email'));
    if (!email.ok)
      return signUpPage(
        reply,
        // Shown as typed, however long: an address is refused, never cut.
        { step: 'email', returnTo, email: field(request, 'email'), error: { email: email.reason } },
        400,
      );
    const wait = await countCodeRequest(request, email.value);
    if (wait > 0)
      return signUpPage(
        reply,
        {
          step: 'email',
          returnTo,
          email: email.value,
          error: { email: tooManyAttempts(reply, 'requests for this address or from your network', wait) },
        },
        429,
      );
    const outcome = await requestCode(db(), send, links, { purpose: 'sign_up', address: email.value, returnTo });
    if (outcome.kind === 'mail failed')
      return signUpPage(reply, { step: 'email', returnTo, email: email.value, error: { email: MAIL_FAILED } }, 503);
    setFlowCookie(request, reply, 'sign_up', outcome.flowToken);
    return seeOther(reply, SIGN_UP);
  }

  if (signUpOpen(web)) {
    web.post<{ Body: Record<string, unknown> | undefined }>(`${SIGN_UP}/code`, csrf, async (request, reply) => {
      const outcome = await proveByCode(db(), 'sign_up', flowToken(request, 'sign_up'), field(request, 'code'));
      if (outcome.kind === 'ended') return signUpPage(reply, { step: 'email', error: { email: ENDED } }, 410);
      if (outcome.kind === 'wrong') {
        const email = (await requestOf(request, 'sign_up', 'sent'))?.address;
        return signUpPage(reply, { step: 'code', email, error: { code: wrongCode(outcome.attemptsLeft) } }, 400);
      }
      setFlowCookie(request, reply, 'sign_up', outcome.flowToken);
      return seeOther(reply, SIGN_UP);
    });

    web.post<{ Body: Record<string, unknown> | undefined }>(`${SIGN_UP}/resend`, csrf, async (request, reply) =>
      resend(request, reply, 'sign_up', (view, status) => signUpPage(reply, view, status)),
    );

    web.post<{ Body: Record<string, unknown> | undefined }>(`${SIGN_UP}/details`, csrf, async (request, reply) => {
      const token = flowToken(request, 'sign_up');
      const typed = field(request, 'username').slice(0, 100);
      const outcome = token
        ? await completeSignUp(selfServiceContext(request, 'sign_up'), {
            flowToken: token,
            username: typed,
            password: field(request, 'password'),
          })
        : ({ kind: 'ended' } as const);
      // Everything but the password is shown again as it was.
      const email = token ? (await requestOf(request, 'sign_up', 'verified'))?.address : undefined;
      const again = (error: SignUpView['error'], status: number) =>
        signUpPage(reply, { step: 'details', username: typed, email, error }, status);
      if (outcome.kind === 'invalid') return again({ [outcome.field]: outcome.message }, 400);
      if (outcome.kind === 'username taken')
        return again(
          {
            username:
              'That username is taken (names differing only in capital letters count as the same). Choose another.',
          },
          409,
        );
      if (outcome.kind === 'email taken')
        return again(
          { form: 'An account with this e-mail address was created meanwhile. Sign in, or reset its password.' },
          409,
        );
      if (outcome.kind === 'ended') return signUpPage(reply, { step: 'email', error: { email: ENDED } }, 410);
      if (outcome.account) await startBrowserSignIn(request, reply, { kind: 'signed_in', account: outcome.account });
      clearFlowCookie(reply, 'sign_up');
      return seeOther(reply, safeReturnTo(outcome.returnTo) ?? '/account');
    });
  }

  // --- Password reset ---

  type ForgotView = {
    step: 'email' | 'code' | 'password';
    twoStep?: boolean;
    /** The address typed (email step), or the one the code went to (code step). */
    email?: string;
    resent?: boolean;
    error?: Partial<Record<'email' | 'code' | 'resend' | 'new_password' | 'two_step_code', string>>;
  };
  const forgotPage = (reply: FastifyReply, view: ForgotView, status = 200) =>
    sendPage(reply, 'forgot', { error: {}, twoStep: false, rules: RULES, ...view }, status);

  /** The proven reset of this browser and its account. */
  async function provenReset(request: FastifyRequest) {
    const token = flowToken(request, 'reset');
    const proven = await findByFlow(db(), 'reset', token, 'verified');
    const account = proven?.user_id ? await findAccount(db(), proven.user_id) : undefined;
    return proven && account && token ? { token, account } : undefined;
  }

  web.get<{ Querystring: { restart?: unknown; resent?: unknown } }>(FORGOT, async (request, reply) => {
    if (request.query.restart === undefined) {
      const proven = await provenReset(request);
      if (proven) return forgotPage(reply, { step: 'password', twoStep: proven.account.totpSecret !== null });
      const sent = await requestOf(request, 'reset', 'sent');
      if (sent)
        return forgotPage(reply, { step: 'code', email: sent.address, resent: request.query.resent !== undefined });
    }
    return forgotPage(reply, { step: 'email' });
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(FORGOT, csrf, async (request, reply) => {
    if (await onlyOnce(request, reply)) return reply;
    const email = checkEmailAddress(field(request, 'email'));
    if (!email.ok)
      return forgotPage(reply, { step: 'email', email: field(request, 'email'), error: { email: email.reason } }, 400);
    const wait = await countCodeRequest(request, email.value);
    if (wait > 0)
      return forgotPage(
        reply,
        {
          step: 'email',
          email: email.value,
          error: { email: tooManyAttempts(reply, 'requests for this address or from your network', wait) },
        },
        429,
      );
    const outcome = await requestCode(db(), send, links, { purpose: 'reset', address: email.value });
    if (outcome.kind === 'mail failed')
      return forgotPage(reply, { step: 'email', email: email.value, error: { email: MAIL_FAILED } }, 503);
    setFlowCookie(request, reply, 'reset', outcome.flowToken);
    return seeOther(reply, FORGOT);
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${FORGOT}/code`, csrf, async (request, reply) => {
    const outcome = await proveByCode(db(), 'reset', flowToken(request, 'reset'), field(request, 'code'));
    if (outcome.kind === 'ended') return forgotPage(reply, { step: 'email', error: { email: ENDED } }, 410);
    if (outcome.kind === 'wrong') {
      const email = (await requestOf(request, 'reset', 'sent'))?.address;
      return forgotPage(reply, { step: 'code', email, error: { code: wrongCode(outcome.attemptsLeft) } }, 400);
    }
    setFlowCookie(request, reply, 'reset', outcome.flowToken);
    return seeOther(reply, FORGOT);
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${FORGOT}/resend`, csrf, async (request, reply) =>
    resend(request, reply, 'reset', (view, status) => forgotPage(reply, view, status)),
  );

  web.post<{ Body: Record<string, unknown> | undefined }>(`${FORGOT}/password`, csrf, async (request, reply) => {
    const token = flowToken(request, 'reset');
    if (!token) return forgotPage(reply, { step: 'email', error: { email: ENDED } }, 410);
    const outcome = await completeReset(selfServiceContext(request, 'forgot'), {
      flowToken: token,
      password: field(request, 'new_password'),
      twoStepCode: field(request, 'two_step_code'),
    });
    if (outcome.kind === 'ended') {
      clearFlowCookie(reply, 'reset');
      return forgotPage(reply, { step: 'email', error: { email: ENDED } }, 410);
    }
    if (outcome.kind === 'locked') {
      clearFlowCookie(reply, 'reset');
      return sendMessage(reply, 'This account is locked', ACCOUNT_LOCKED, 403);
    }
    if (outcome.kind !== 'reset') {
      const again = (error: ForgotView['error'], status: number) =>
        forgotPage(reply, { step: 'password', twoStep: outcome.twoStep, error }, status);
      if (outcome.kind === 'invalid') return again({ new_password: outcome.message }, 400);
      if (outcome.kind === 'limited')
        return again({ two_step_code: tooManyAttempts(reply, 'wrong codes', outcome.retryAfterMs) }, 429);
      return again({ two_step_code: wrongCodeMessage(outcome) }, 401);
    }
    clearFlowCookie(reply, 'reset');
    return sendMessage(
      reply,
      'Your password was changed',
      'Every application and every browser signed in to your account was signed out. Sign in again with your new password.',
      200,
      [{ href: '/account/sign-in', text: 'Sign in' }],
    );
  });

  // --- Links from the messages ---

  const CONFIRM: Record<Purpose, { title: string; button: string }> = {
    sign_up: { title: 'Confirm your e-mail address', button: 'Continue creating my account' },
    reset: { title: 'Reset your password', button: 'Continue to choose a new password' },
    email_change: { title: 'Confirm your new e-mail address', button: 'Use this e-mail address' },
  };
  const deadLink = (reply: FastifyReply) =>
    sendMessage(
      reply,
      'This link has expired',
      'This link has expired, was replaced by a newer one or was used already. Start again to get a new one.',
      410,
      startAgain(signUpOpen(web)),
    );

  web.get<{ Querystring: { token?: unknown } }>(VERIFY, async (request, reply) => {
    const token = typeof request.query.token === 'string' ? request.query.token : '';
    const found = await findByLink(db(), token);
    if (!found || (found.purpose === 'sign_up' && !signUpOpen(web))) return deadLink(reply);
    return sendPage(reply, 'verify', { ...CONFIRM[found.purpose], token });
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(VERIFY, csrf, async (request: FormRequest, reply) => {
    const token = field(request, 'token');
    const found = await findByLink(db(), token);
    if (!found || (found.purpose === 'sign_up' && !signUpOpen(web))) return deadLink(reply);
    if (found.purpose === 'email_change') {
      const outcome = await confirmEmailChange(selfServiceContext(request, 'verify'), token);
      if (outcome.kind === 'ended') return deadLink(reply);
      if (outcome.kind === 'taken')
        return sendMessage(
          reply,
          'That address is taken',
          'Another account uses this e-mail address now, so yours was not changed.',
          409,
          [TO_ACCOUNT],
        );
      return sendMessage(
        reply,
        'E-mail address changed',
        `Your account's e-mail address is now ${outcome.newEmail}.`,
        200,
        [TO_ACCOUNT],
      );
    }
    const outcome = await proveByLink(db(), found);
    if (outcome.kind !== 'proven') return deadLink(reply);
    const purpose = found.purpose;
    setFlowCookie(request, reply, purpose, outcome.flowToken);
    return seeOther(reply, purpose === 'sign_up' ? SIGN_UP : FORGOT);
  });
}

const TO_ACCOUNT = { href: '/account', text: 'Go to your account' };

/** Where an expired link's page leads: each flow whose message holds such a link, started again. */
const startAgain = (signUp: boolean) => [
  { href: '/account/forgot', text: 'Reset the password again' },
  ...(signUp ? [{ href: '/account/sign-up', text: 'Create an account again' }] : []),
  { href: '/account', text: 'Change the e-mail address again' },
];

const wrongCode = (attemptsLeft: number) =>
  `That code is not right. ${attemptsLeft} attempt${attemptsLeft === 1 ? '' : 's'} left before you need a new code.`;
