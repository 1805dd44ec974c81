import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkEmailAddress } from '../accounts/account-names.ts';
import type { Account } from '../accounts/accounts.ts';
import { pendingEmailChange, requestEmailChange } from '../accounts/self-service.ts';
import { checkCurrentPassword } from '../accounts/sign-in.ts';
import { tooManyAttempts } from './pages.ts';
import { accountMailer, countCodeRequest, field } from './self-service-support.ts';
import { signInContext } from './sign-in.ts';
import { onlyOnce } from './single-use-submit.ts';
import type { WebSession } from './web-sessions.ts';

/** What a refused e-mail change shows: the sentence, the address typed (shown again), and whether it was a resend. */
export interface EmailChangeError {
  message: string;
  typed?: string;
  resend?: boolean;
}

/** What the account page lends this form: its sign-in check and its rendering with an error in the e-mail section. */
export interface AccountPageParts {
  signedIn(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<{ session: WebSession; account: Account } | undefined>;
  showEmailError(
    reply: FastifyReply,
    current: { session: WebSession; account: Account },
    error: EmailChangeError,
    status: number,
  ): Promise<FastifyReply>;
}

const MAIL_FAILED = 'We could not send the e-mail just now. Nothing was changed: please try again in a few minutes.';
const TOO_MANY = 'requests for this address or from your network';

/**
 * POST /account/email (DESIGN "E-mail change"): inputs `new_email` and `current_password`; the new
 * address gets a link (24 hours; /account/verify changes the address), the old one a notice.
 * POST /account/email/resend sends the link of the change waiting for it once more (a new link
 * replaces the old one), under the same limits as a new change.
 */
export function registerEmailChange(web: FastifyInstance, parts: AccountPageParts): void {
  const send = accountMailer(web);
  const links = { baseUrl: web.config.baseUrl };
  const csrf = { preHandler: web.csrfProtection };
  web.post<{ Body: Record<string, unknown> | undefined }>('/account/email', csrf, async (request, reply) => {
    const current = await parts.signedIn(request, reply);
    if (!current) return reply;
    if (await onlyOnce(request, reply)) return reply;
    // The address is shown again as typed (a refused one is never cut); the password is not.
    const typed = field(request, 'new_email');
    const refuse = (message: string, status: number) =>
      parts.showEmailError(reply, current, { message, typed }, status);
    const email = checkEmailAddress(typed);
    if (!email.ok) return refuse(email.reason, 400);
    const checked = await checkCurrentPassword(
      signInContext(request, { page: 'account' }),
      current.account,
      field(request, 'current_password'),
    );
    if (checked.kind === 'limited') return refuse(tooManyAttempts(reply, 'failed sign-ins', checked.retryAfterMs), 429);
    if (checked.kind === 'wrong') return refuse('The current password is not right.', 401);
    const wait = await countCodeRequest(request, email.value);
    if (wait > 0) return refuse(tooManyAttempts(reply, TOO_MANY, wait), 429);
    const outcome = await requestEmailChange(web.database.db, send, links, {
      userId: current.account.userId,
      oldEmail: current.account.email,
      newEmail: email.value,
    });
    if (outcome.kind === 'same') return refuse('That is your address already.', 400);
    if (outcome.kind === 'taken') return refuse('Another account uses that e-mail address.', 409);
    if (outcome.kind === 'mail failed') return refuse(MAIL_FAILED, 503);
    return reply.code(303).header('location', '/account?done=email-link-sent').send();
  });

  web.post('/account/email/resend', csrf, async (request, reply) => {
    const current = await parts.signedIn(request, reply);
    if (!current) return reply;
    const refuse = (message: string, status: number) =>
      parts.showEmailError(reply, current, { message, resend: true }, status);
    const address = await pendingEmailChange(web.database.db, current.account.userId);
    if (!address)
      return parts.showEmailError(
        reply,
        current,
        { message: 'No link is waiting to be opened (it was used or expired). Enter the new address again.' },
        410,
      );
    const wait = await countCodeRequest(request, address);
    if (wait > 0) return refuse(tooManyAttempts(reply, TOO_MANY, wait), 429);
    const outcome = await requestEmailChange(web.database.db, send, links, {
      userId: current.account.userId,
      oldEmail: current.account.email,
      newEmail: address,
      again: true,
    });
    if (outcome.kind === 'same') return refuse('That is your address already.', 400);
    if (outcome.kind === 'taken') return refuse('Another account uses that e-mail address now.', 409);
    if (outcome.kind === 'mail failed') return refuse(MAIL_FAILED, 503);
    return reply.code(303).header('location', '/account?done=email-link-resent').send();
  });
}
