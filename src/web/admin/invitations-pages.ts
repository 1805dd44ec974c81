import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkEmailAddress, EMAIL_RULE } from '../../accounts/account-names.ts';
import {
  INVITATION_TTL_MS,
  inviteAddress,
  listPendingInvitations,
  revokeInvitation,
} from '../../accounts/invitations.ts';
import { field, sendPage } from '../pages.ts';
import { accountMailer } from '../self-service-support.ts';
import { onlyOnce } from '../single-use-submit.ts';
import { operatorOf, requireFreshOperatorSignIn } from './operator-gate.ts';

/**
 * The console's invitations, /admin/invitations (DESIGN "Operating a public service"): a form with
 * input `email` invites an address (a mail with a single-use link, 7 days), the pending
 * invitations are listed, and button `revoke_invitation` (value = the invitation's id) revokes
 * one. Both actions need a sign-in within the last 10 minutes and carry a submit token.
 */

const INVITATIONS = '/admin/invitations';
const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DAY_MS = 24 * 60 * 60 * 1000;

type FormRequest = FastifyRequest<{ Body: Record<string, unknown> | undefined }>;

interface View {
  email?: string;
  error?: { email?: string; form?: string };
  notice?: string;
}

const when = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

export async function invitationsPages(admin: FastifyInstance): Promise<void> {
  const db = () => admin.database.db;

  async function page(request: FastifyRequest, reply: FastifyReply, view: View, status = 200) {
    const pending = await listPendingInvitations(db());
    return sendPage(
      reply,
      'admin/invitations',
      {
        username: operatorOf(request).account.username,
        section: 'invitations',
        signUp: admin.config.signUp,
        days: INVITATION_TTL_MS / DAY_MS,
        emailRule: EMAIL_RULE,
        error: {},
        email: '',
        notice: null,
        pending: pending.map((invitation) => ({
          id: invitation.invitationId,
          email: invitation.email,
          by: invitation.invitedByUsername ?? 'an erased operator',
          sent: when(invitation.createdAt),
          sentIso: new Date(invitation.createdAt).toISOString(),
          expires: when(invitation.expiresAt),
          expiresIso: new Date(invitation.expiresAt).toISOString(),
        })),
        ...view,
      },
      status,
    );
  }

  admin.get(INVITATIONS, async (request, reply) => page(request, reply, {}));

  admin.post<{ Body: Record<string, unknown> | undefined }>(
    INVITATIONS,
    { preHandler: admin.csrfProtection },
    async (request: FormRequest, reply) => {
      if (await onlyOnce(request, reply)) return reply;
      if (!(await requireFreshOperatorSignIn(request, reply, INVITATIONS))) return reply;
      if (Object.hasOwn(request.body ?? {}, 'revoke_invitation')) return revoke(request, reply);
      return invite(request, reply);
    },
  );

  async function revoke(request: FormRequest, reply: FastifyReply) {
    const id = field(request.body, 'revoke_invitation');
    if (!ID.test(id)) return page(request, reply, { error: { form: 'This form is damaged: reload the page.' } }, 400);
    // A second press (a double submit) finds it revoked already: the same page, nothing changed.
    await revokeInvitation(db(), id);
    return page(request, reply, { notice: 'The invitation was revoked: its link no longer works.' });
  }

  async function invite(request: FormRequest, reply: FastifyReply) {
    const typed = field(request.body, 'email');
    if (admin.config.signUp === 'closed')
      return page(
        request,
        reply,
        {
          email: typed,
          error: { form: 'Sign-up is closed on this service (SIGN_UP=closed), so an invitation could not be used.' },
        },
        409,
      );
    const email = checkEmailAddress(typed);
    if (!email.ok) return page(request, reply, { email: typed, error: { email: email.reason } }, 400);
    const outcome = await inviteAddress(
      {
        db: db(),
        send: accountMailer(admin),
        baseUrl: admin.config.baseUrl,
        origin: { ip: request.ip, log: request.log },
        operatorId: operatorOf(request).account.userId,
      },
      email.value,
    );
    if (outcome.kind === 'has account')
      return page(
        request,
        reply,
        { email: email.value, error: { email: 'An account with this e-mail address exists already.' } },
        409,
      );
    if (outcome.kind === 'mail failed')
      return page(
        request,
        reply,
        {
          email: email.value,
          error: {
            email: 'The invitation could not be mailed just now. Nothing was kept: try again in a few minutes.',
          },
        },
        503,
      );
    return page(request, reply, { notice: `An invitation was sent to ${email.value}.` });
  }
}
