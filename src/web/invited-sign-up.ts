import type { FastifyReply, FastifyRequest } from 'fastify';
import { USERNAME_RULE } from '../accounts/account-names.ts';
import { findInvitation, type InvitationEnd } from '../accounts/invitations.ts';
import { PASSWORD_RULE } from '../accounts/password-rules.ts';
import { completeInvitedSignUp } from '../accounts/self-service.ts';
import { sendMessage, sendPage } from './pages.ts';
import { field, selfServiceContext } from './self-service-support.ts';
import { onlyOnce } from './single-use-submit.ts';
import { startBrowserSignIn } from './web-sessions.ts';

/**
 * The sign-up of an operator's invitation (DESIGN "Operating a public service", SIGN_UP=invite):
 * the mail's link `/account/sign-up?invitation=…` shows the username and password inputs at once
 * (the link proves the address); the form posts back to /account/sign-up with the token in the
 * hidden input `invitation`. Opening the link changes nothing (mail scanners open links); only
 * the form uses it up.
 */

export const INVITATION_FIELD = 'invitation';

type Errors = Partial<Record<'username' | 'password' | 'form', string>>;

function invitedPage(
  reply: FastifyReply,
  view: { invitation: string; email: string; username?: string; error?: Errors },
  status = 200,
) {
  return sendPage(
    reply,
    'sign-up',
    {
      step: 'invited',
      error: {},
      returnTo: null,
      rules: { username: USERNAME_RULE, password: PASSWORD_RULE },
      ...view,
    },
    status,
  );
}

const ENDED: Record<InvitationEnd, { title: string; message: string; status: number }> = {
  used: {
    title: 'This invitation was used',
    message: 'An account was created with this invitation already. Sign in to it, or ask the operator for a new one.',
    status: 410,
  },
  revoked: {
    title: 'This invitation was withdrawn',
    message: 'The operator withdrew this invitation, so it no longer works. Ask the operator for a new one.',
    status: 410,
  },
  expired: {
    title: 'This invitation has expired',
    message: 'An invitation works for 7 days. Ask the operator of this service for a new one.',
    status: 410,
  },
  unknown: {
    title: 'This invitation link does not work',
    message:
      'Check that you opened the whole link from the e-mail. If it still does not work, ask the operator for a new invitation.',
    status: 404,
  },
};

function endedPage(reply: FastifyReply, why: InvitationEnd) {
  const page = ENDED[why];
  return sendMessage(reply, page.title, page.message, page.status, [
    { href: '/account/sign-in', text: 'Sign in' },
    { href: '/', text: 'Go to the start page' },
  ]);
}

/** GET /account/sign-up?invitation=…: the inputs, or a page saying why the link no longer works. */
export async function showInvitedSignUp(request: FastifyRequest, reply: FastifyReply, token: unknown) {
  const invitation = typeof token === 'string' ? token : '';
  const found = await findInvitation(request.server.database.db, invitation);
  if (found.kind !== 'pending') return endedPage(reply, found.kind);
  return invitedPage(reply, { invitation, email: found.invitation.email });
}

/** POST /account/sign-up with `invitation`: creates the account and signs it in. */
export async function completeInvitedSignUpPage(
  request: FastifyRequest<{ Body: Record<string, unknown> | undefined }>,
  reply: FastifyReply,
) {
  if (await onlyOnce(request, reply)) return reply;
  const invitation = field(request, INVITATION_FIELD);
  const typed = field(request, 'username').slice(0, 100);
  const outcome = await completeInvitedSignUp(selfServiceContext(request, 'sign_up'), {
    invitationToken: invitation,
    username: typed,
    password: field(request, 'password'),
  });
  if (outcome.kind === 'ended') return endedPage(reply, outcome.why);
  if (outcome.kind !== 'created') {
    const found = await findInvitation(request.server.database.db, invitation);
    if (found.kind !== 'pending') return endedPage(reply, found.kind);
    const again = (error: Errors, status: number) =>
      invitedPage(reply, { invitation, email: found.invitation.email, username: typed, error }, status);
    if (outcome.kind === 'invalid') return again({ [outcome.field]: outcome.message }, 400);
    if (outcome.kind === 'username taken')
      return again(
        {
          username:
            'That username is taken (names differing only in capital letters count as the same). Choose another.',
        },
        409,
      );
    return again({ form: 'An account with this e-mail address exists already. Sign in, or reset its password.' }, 409);
  }
  if (outcome.account) await startBrowserSignIn(request, reply, { kind: 'signed_in', account: outcome.account });
  return reply.code(303).header('location', '/account').header('cache-control', 'no-store').send();
}
