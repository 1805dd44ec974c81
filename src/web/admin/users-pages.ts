import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type AccountDetail, describeAccount } from '../../accounts/account-detail.ts';
import {
  type AccountState,
  InvalidListQuery,
  listAccounts,
  MAX_SEARCH_LENGTH,
} from '../../accounts/account-directory.ts';
import {
  endAllSessions,
  eraseAccount,
  type LifecycleContext,
  type LifecycleOutcome,
  lockAccount,
  removeTwoStep,
  sendReset,
  unlockAccount,
} from '../../accounts/lifecycle.ts';
import { isUuid, normalizeUuid } from '../../http/uuid.ts';
import { describeBrowser, networkOf } from '../browser-description.ts';
import { type Confirmation, isConfirmed, sendConfirmation } from '../confirmation.ts';
import { field, sendMessage, sendPage } from '../pages.ts';
import { accountMailer } from '../self-service-support.ts';
import { onlyOnce } from '../single-use-submit.ts';
import { operatorOf, requireFreshOperatorSignIn } from './operator-gate.ts';

const USERS = '/admin/users';
/** A lock's reason: for operators, on one line. */
const REASON_MAX = 500;

/** The account page's buttons (DESIGN: value = the user id), each its notice once done. */
const ACTIONS = {
  lock_account: 'The account is locked: every sign-in, session and token of it ended.',
  unlock_account: 'The account is unlocked: it can sign in again.',
  end_sessions: 'Every browser sign-in and application session of the account ended.',
  remove_two_step: 'Two-step verification is off for the account; its backup codes and device trusts are gone.',
  send_reset: 'A password reset mail went to the account’s address.',
  delete_account: 'The account and everything about it were erased.',
} as const;
type Action = keyof typeof ACTIONS;
const ACTION_NAMES = Object.keys(ACTIONS) as Action[];

/** What a repeated action (done already) says instead. */
const UNCHANGED: Record<Exclude<Action, 'delete_account'>, string> = {
  lock_account: 'The account was locked already.',
  unlock_account: 'The account was not locked.',
  end_sessions: 'The account had no sign-in or session to end.',
  remove_two_step: 'The account had no two-step verification.',
  send_reset:
    'No reset mail was sent: one went out within the last minute, or the account has no address or is locked.',
};

const formatTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
const timeView = (ms: number) => ({ text: formatTime(ms), iso: new Date(ms).toISOString() });

/** One query parameter as a string: missing is '', repeated (an array) is undefined. */
function queryValue(query: unknown, name: string): string | undefined {
  if (typeof query !== 'object' || query === null || !Object.hasOwn(query, name)) return '';
  const value = (query as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

const accountPath = (userId: string) => `${USERS}/${encodeURIComponent(userId)}`;
const deletePath = (userId: string) => `${accountPath(userId)}/delete`;

/**
 * The console's accounts (DESIGN "Operating a public service"): /admin/users lists and searches
 * them, /admin/users/<id> shows one with its buttons. The actions are src/accounts/lifecycle.ts's,
 * which records each with the operator's id; this page parses the forms and renders the outcomes.
 */
export async function adminUsersPages(admin: FastifyInstance): Promise<void> {
  const db = () => admin.database.db;
  const csrf = { preHandler: admin.csrfProtection };

  const lifecycle = (request: FastifyRequest): LifecycleContext => ({
    db: db(),
    applicationSessions: admin.applicationSessions,
    erasers: admin.accountErasers,
    origin: { ip: request.ip, log: request.log },
    via: 'web',
    actorId: operatorOf(request).account.userId,
  });

  const badRequest = (reply: FastifyReply, message: string) =>
    sendMessage(reply, 'The request is not right', message, 400, [{ href: USERS, text: 'Go to the accounts' }]);
  const noSuchAccount = (reply: FastifyReply) =>
    sendMessage(reply, 'No such account', 'There is no account with this id: it may have been deleted.', 404, [
      { href: USERS, text: 'Go to the accounts' },
    ]);

  admin.get(USERS, async (request, reply) => {
    const q = queryValue(request.query, 'q');
    const state = queryValue(request.query, 'state');
    const after = queryValue(request.query, 'after');
    if (q === undefined || state === undefined || after === undefined)
      return badRequest(reply, 'Give each of q, state and after at most once.');
    if (q.length > MAX_SEARCH_LENGTH)
      return badRequest(reply, `Search for at most ${MAX_SEARCH_LENGTH} characters: no username or address is longer.`);
    if (state !== '' && state !== 'active' && state !== 'locked')
      return badRequest(reply, 'The state is active, locked, or left out for every account.');
    let page: Awaited<ReturnType<typeof listAccounts>>;
    try {
      page = await listAccounts(db(), {
        search: q,
        state: state === '' ? undefined : (state as AccountState),
        after,
      });
    } catch (error) {
      if (error instanceof InvalidListQuery)
        return badRequest(reply, 'This page link is damaged or out of date. Start again from the first page.');
      throw error;
    }
    const next =
      page.next === undefined
        ? undefined
        : `${USERS}?${new URLSearchParams({ ...(q ? { q } : {}), ...(state ? { state } : {}), after: page.next })}`;
    return sendPage(reply, 'admin/users', {
      username: operatorOf(request).account.username,
      section: 'users',
      q,
      state,
      paged: after !== '',
      notice: queryValue(request.query, 'done') === 'deleted' ? ACTIONS.delete_account : undefined,
      accounts: page.accounts.map((account) => ({
        userId: account.userId,
        username: account.username,
        email: account.email,
        created: timeView(account.createdAt),
        locked: account.locked,
        operator: account.operator,
        twoStep: account.twoStep,
      })),
      next,
    });
  });

  const showAccount = (
    request: FastifyRequest,
    reply: FastifyReply,
    detail: AccountDetail,
    options: { notice?: string; error?: string; reason?: string; status?: number } = {},
  ) => {
    const { account } = detail;
    // OAuth sessions grouped by application.
    const byApplication = new Map<string, { name: string; clientId: string; sessions: object[] }>();
    for (const session of detail.sessions) {
      const group = byApplication.get(session.clientId) ?? {
        name: session.applicationName,
        clientId: session.clientId,
        sessions: [],
      };
      group.sessions.push({
        scope: session.scope,
        created: timeView(session.createdAt),
        lastUsed: session.lastUsedAt === null ? undefined : timeView(session.lastUsedAt),
      });
      byApplication.set(session.clientId, group);
    }
    return sendPage(
      reply,
      'admin/user',
      {
        username: operatorOf(request).account.username,
        section: 'users',
        self: account.userId === operatorOf(request).account.userId,
        notice: options.notice,
        error: options.error,
        reason: options.reason ?? '',
        reasonMax: REASON_MAX,
        account: {
          userId: account.userId,
          name: account.username ?? account.userId,
          username: account.username,
          email: account.email,
          created: timeView(account.createdAt),
          locked: account.locked,
          lockReason: account.lockReason,
          operator: account.operator,
          twoStep: account.twoStep,
        },
        lastSignIn: detail.lastSignIn && { ...timeView(detail.lastSignIn.at), ip: detail.lastSignIn.ip },
        passkeys: detail.passkeys.map((passkey) => ({
          name: passkey.name,
          created: timeView(passkey.createdAt),
          lastUsed: passkey.lastUsedAt === null ? undefined : timeView(passkey.lastUsedAt),
        })),
        backupCodesLeft: detail.backupCodesLeft,
        browsers: detail.browserSignIns.map((browser) => ({
          ...describeBrowser(browser.userAgent),
          network: networkOf(browser.ip),
          since: timeView(browser.createdAt),
          lastActive: timeView(browser.lastSeenAt),
        })),
        sessionGroups: [...byApplication.values()],
        applications: detail.applications.map((application) => ({
          clientId: application.clientId,
          name: application.name,
          confidential: application.confidential,
          created: timeView(application.createdAt),
          suspended: application.suspended,
        })),
        events: detail.events.map((event) => ({
          kind: event.kind,
          at: timeView(event.createdAt),
          ip: event.ip,
          clientId: event.clientId,
          details: Object.entries(event.details)
            .map(([key, value]) => `${key}: ${value}`)
            .join(', '),
        })),
      },
      options.status ?? 200,
    );
  };

  const notices: Record<string, string> = {
    ...ACTIONS,
    ...Object.fromEntries(Object.entries(UNCHANGED).map(([action, text]) => [`${action}_unchanged`, text])),
  };

  admin.get<{ Params: { userId: string } }>(`${USERS}/:userId`, async (request, reply) => {
    const detail = await describeAccount(db(), admin, request.params.userId);
    if (!detail) return noSuchAccount(reply);
    const shown = queryValue(request.query, 'done');
    const notice = shown && Object.hasOwn(notices, shown) ? notices[shown] : undefined;
    return showAccount(request, reply, detail, notice ? { notice } : {});
  });

  const confirmationOf = (detail: AccountDetail): Confirmation => ({
    title: `Delete ${detail.account.username ?? detail.account.userId}`,
    consequence:
      'The account and every row about it are erased at once: its address, password, two-step, passkeys, sign-ins, sessions, the applications it registered with their sessions, and what it published. Its security events keep only the user id. This cannot be undone.',
    action: USERS,
    name: 'delete_account',
    value: detail.account.userId,
    button: 'Delete the account',
    cancel: { href: accountPath(detail.account.userId), text: 'Cancel' },
  });

  // The deletion's confirmation as a link: where the re-authentication page comes back to.
  admin.get<{ Params: { userId: string } }>(`${USERS}/:userId/delete`, async (request, reply) => {
    const detail = await describeAccount(db(), admin, request.params.userId);
    if (!detail) return noSuchAccount(reply);
    if (!(await requireFreshOperatorSignIn(request, reply, deletePath(detail.account.userId)))) return reply;
    return sendConfirmation(reply, confirmationOf(detail));
  });

  admin.post<{ Body: Record<string, unknown> | undefined }>(USERS, csrf, async (request, reply) => {
    const pressed = ACTION_NAMES.filter((name) => request.body !== undefined && Object.hasOwn(request.body, name));
    if (pressed.length !== 1) return badRequest(reply, 'Press one of the account’s buttons.');
    const action = pressed[0]!;
    const value = field(request.body, action);
    if (!isUuid(value)) return noSuchAccount(reply);
    const userId = normalizeUuid(value);
    let reason = '';
    if (action === 'lock_account') {
      reason = field(request.body, 'reason').trim();
      if (reason === '' || reason.length > REASON_MAX || /[\u0000-\u001f\u007f]/.test(reason)) {
        const detail = await describeAccount(db(), admin, userId);
        if (!detail) return noSuchAccount(reply);
        return showAccount(request, reply, detail, {
          error: `Give the reason for the lock: 1 to ${REASON_MAX} characters on one line (only operators see it).`,
          reason: reason.slice(0, REASON_MAX),
          status: 400,
        });
      }
    }
    const returnTo = action === 'delete_account' ? deletePath(userId) : accountPath(userId);
    if (!(await requireFreshOperatorSignIn(request, reply, returnTo))) return reply;
    if (action === 'delete_account' && !isConfirmed(request.body)) {
      const detail = await describeAccount(db(), admin, userId);
      if (!detail) return noSuchAccount(reply);
      return sendConfirmation(reply, confirmationOf(detail));
    }
    if (await onlyOnce(request, reply)) return reply;
    const ctx = lifecycle(request);
    let outcome: LifecycleOutcome | { kind: 'mail failed' };
    switch (action) {
      case 'lock_account':
        outcome = await lockAccount(ctx, userId, reason);
        break;
      case 'unlock_account':
        outcome = await unlockAccount(ctx, userId);
        break;
      case 'end_sessions':
        outcome = await endAllSessions(ctx, userId);
        break;
      case 'remove_two_step':
        outcome = await removeTwoStep(ctx, userId);
        break;
      case 'send_reset':
        outcome = await sendReset(
          {
            ...ctx,
            send: accountMailer(admin),
            links: { baseUrl: admin.config.baseUrl, signUpOpen: admin.config.signUp === 'open' },
          },
          userId,
        );
        break;
      case 'delete_account':
        outcome = await eraseAccount(ctx, userId);
        break;
    }
    switch (outcome.kind) {
      case 'unknown':
        return noSuchAccount(reply);
      case 'last operator':
        return sendMessage(
          reply,
          'You are the last operator',
          'The last operator can be neither locked, deleted nor demoted: make another account an operator first.',
          409,
          [{ href: accountPath(userId), text: 'Back to the account' }],
        );
      case 'mail failed':
        return sendMessage(
          reply,
          'The mail was not sent',
          'The reset mail could not be sent: the mail server refused it or is down. Try again later.',
          503,
          [{ href: accountPath(userId), text: 'Back to the account' }],
        );
      case 'done':
      case 'unchanged': {
        if (action === 'delete_account') return reply.code(303).header('location', `${USERS}?done=deleted`).send();
        const notice = outcome.kind === 'done' ? action : `${action}_unchanged`;
        const location = `${accountPath(userId)}?done=${notice}`;
        return reply.code(303).header('location', location).header('cache-control', 'no-store').send();
      }
    }
  });
}
