import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Account, findAccount } from '../accounts/accounts.ts';
import type { Application } from '../oauth/clients.ts';
import {
  type ApplicationInput,
  createOwnedApplication,
  DEVELOPER_SCOPES,
  deleteOwnedApplication,
  type FieldErrors,
  findOwnedApplication,
  listOwnedApplications,
  MAX_APPLICATIONS_PER_USER,
  NAME_LENGTH,
  type Owner,
  renewOwnedApplicationSecret,
  updateOwnedApplication,
} from '../oauth/developer-applications.ts';
import { isScope, SCOPES } from '../oauth/scopes.ts';
import { SIGNING_ALGS } from '../oauth/signing-algs.ts';
import { type Confirmation, isConfirmed, sendConfirmation } from './confirmation.ts';
import { sendPage } from './pages.ts';
import { requireRecentSignIn } from './recent-sign-in.ts';
import { onlyOnce } from './single-use-submit.ts';
import { readWebSession } from './web-sessions.ts';

const APPS = '/account/apps';
const SIGN_IN = '/account/sign-in';
/** Where the account page sends a browser that was sent to sign in from here (see returnAfterSignIn). */
const RETURN_COOKIE = 'after_sign_in';
const RETURN_TARGETS: Record<string, string> = { apps: APPS };

type FormRequest = FastifyRequest<{ Body: Record<string, unknown> | undefined }>;

/** A text field as one string: a missing or repeated field is ''. */
const field = (request: FormRequest, name: string): string => {
  const value = request.body?.[name];
  return typeof value === 'string' ? value : '';
};

/** The form's inputs, as the service takes them. Checkboxes may repeat (scope); a checkbox is on when sent at all. */
function readApplicationForm(request: FormRequest): ApplicationInput {
  const scope = request.body?.scope;
  const scopes =
    typeof scope === 'string'
      ? [scope]
      : Array.isArray(scope)
        ? scope.map((value) => (typeof value === 'string' ? value : ''))
        : [];
  return {
    name: field(request, 'name'),
    website: field(request, 'website'),
    redirectUris: field(request, 'redirect_uri'),
    scopes,
    confidential: request.body?.confidential !== undefined,
    postLogoutRedirectUris: field(request, 'post_logout_redirect_uri'),
    backchannelLogoutUri: field(request, 'backchannel_logout_uri'),
    idTokenAlg: field(request, 'id_token_signed_response_alg'),
  };
}

const NOTICES: Record<string, string> = {
  updated: 'The application was saved.',
  deleted: 'The application was deleted. Every sign-in to it has ended.',
};

const scopeWords = (scope: string) => (isScope(scope) ? SCOPES[scope] : scope);

/** The form's values: what was typed (after a refusal) or the application's (editing), else the defaults. */
function formValues(source: ApplicationInput | Application | undefined) {
  if (!source)
    return {
      name: '',
      website: '',
      redirectUris: '',
      scopes: ['common'],
      confidential: false,
      postLogoutRedirectUris: '',
      backchannelLogoutUri: '',
      idTokenAlg: '',
    };
  if ('clientId' in source)
    return {
      name: source.name,
      website: source.website ?? '',
      redirectUris: source.redirectUris.join('\n'),
      scopes: source.scopes,
      confidential: source.confidential,
      postLogoutRedirectUris: source.postLogoutRedirectUris.join('\n'),
      backchannelLogoutUri: source.backchannelLogoutUri ?? '',
      idTokenAlg: source.idTokenAlg,
    };
  return {
    name: source.name,
    website: source.website,
    redirectUris: source.redirectUris,
    scopes: [...source.scopes],
    confidential: source.confidential,
    postLogoutRedirectUris: source.postLogoutRedirectUris ?? '',
    backchannelLogoutUri: source.backchannelLogoutUri ?? '',
    idTokenAlg: source.idTokenAlg ?? '',
  };
}

const scopeChoices = () => DEVELOPER_SCOPES.map((scope) => ({ scope, words: scopeWords(scope) }));

/**
 * /account/apps (DESIGN "Applications registered by their developers"): a signed-in user with
 * two-step verification on registers, edits, re-keys and deletes their own applications. The
 * page parses forms and renders the outcomes of src/oauth/developer-applications.ts.
 */
export async function appsPages(web: FastifyInstance): Promise<void> {
  const db = () => web.database.db;
  const csrf = { preHandler: web.csrfProtection };
  const secureCookie = web.config.baseUrl.startsWith('https:');

  /** The fully signed-in account; otherwise sends the browser to sign in (and back here afterwards) and answers undefined. */
  async function signedIn(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<{ account: Account; owner: Owner } | undefined> {
    const session = await readWebSession(request);
    const account = session && !session.mfaPending ? await findAccount(db(), session.userId) : undefined;
    if (!account) {
      reply.setCookie(RETURN_COOKIE, 'apps', {
        path: '/account',
        httpOnly: true,
        sameSite: 'lax',
        secure: secureCookie,
        maxAge: 15 * 60,
      });
      reply.code(303).header('location', SIGN_IN).header('cache-control', 'no-store').send();
      return undefined;
    }
    return { account, owner: { userId: account.userId, twoStepOn: account.totpSecret !== null } };
  }

  async function showList(
    reply: FastifyReply,
    account: Account,
    options: { notice?: string; error?: string; form?: ApplicationInput; errors?: FieldErrors; status?: number } = {},
  ) {
    const apps = await listOwnedApplications(db(), account.userId);
    return sendPage(
      reply,
      'apps',
      {
        username: account.username,
        twoStepOn: account.totpSecret !== null,
        notice: options.notice,
        error: options.error,
        apps: apps.map((app) => ({
          clientId: app.clientId,
          name: app.name,
          website: app.website,
          redirectUris: app.redirectUris,
          scopes: app.scopes,
          confidential: app.confidential,
        })),
        max: MAX_APPLICATIONS_PER_USER,
        atLimit: apps.length >= MAX_APPLICATIONS_PER_USER,
        form: {
          action: APPS,
          values: formValues(options.form),
          errors: options.errors ?? {},
          submit: 'Register application',
          nameLength: NAME_LENGTH,
          scopeChoices: scopeChoices(),
          idTokenAlgs: SIGNING_ALGS,
        },
      },
      options.status ?? 200,
    );
  }

  const showEdit = (
    reply: FastifyReply,
    app: Application,
    options: { form?: ApplicationInput; errors?: FieldErrors; status?: number } = {},
  ) =>
    sendPage(
      reply,
      'app-edit',
      {
        app: { clientId: app.clientId, name: app.name },
        form: {
          action: `${APPS}/${app.clientId}`,
          values: formValues(options.form ?? app),
          errors: options.errors ?? {},
          submit: 'Save changes',
          nameLength: NAME_LENGTH,
          scopeChoices: scopeChoices(),
          idTokenAlgs: SIGNING_ALGS,
        },
      },
      options.status ?? 200,
    );

  /** The page that shows the client id and, once, the secret, with what a developer needs to use them. */
  const showCredentials = (reply: FastifyReply, app: Application, clientSecret: string | null, title: string) =>
    sendPage(reply, 'app-credentials', {
      title,
      app: {
        clientId: app.clientId,
        name: app.name,
        confidential: app.confidential,
        redirectUris: app.redirectUris,
        scopes: app.scopes.join(' '),
      },
      clientSecret,
      baseUrl: web.config.baseUrl,
    });

  const notFound = (reply: FastifyReply, account: Account) =>
    showList(reply, account, { error: 'You have no application with that client id.', status: 404 });
  const twoStepRequired = (reply: FastifyReply, account: Account) =>
    showList(reply, account, { error: 'Turn on two-step verification on your account page first.', status: 403 });

  web.get<{ Querystring: { done?: unknown } }>(APPS, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const done = request.query.done;
    const notice = typeof done === 'string' && Object.hasOwn(NOTICES, done) ? NOTICES[done] : undefined;
    return showList(reply, current.account, notice ? { notice } : {});
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(APPS, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    if (await onlyOnce(request, reply)) return reply;
    const form = readApplicationForm(request);
    const outcome = await createOwnedApplication(db(), request, current.owner, form);
    switch (outcome.kind) {
      case 'two_step_required':
        return twoStepRequired(reply, current.account);
      case 'invalid':
        return showList(reply, current.account, { form, errors: outcome.errors, status: 400 });
      case 'limit_reached':
        return showList(reply, current.account, {
          form,
          error: `You have ${MAX_APPLICATIONS_PER_USER} applications, the most one account may register. Delete one first.`,
          status: 409,
        });
      case 'created':
        return showCredentials(reply, outcome.application, outcome.clientSecret, 'Application registered');
    }
  });

  /**
   * The steps before a new secret or a deletion, which cannot be undone: a recent sign-in (else
   * the re-authentication page, which comes back to `confirmPage`), then the confirmation page
   * unless this is its form. Answers the application when the action is to go ahead.
   */
  async function readyToAct(
    request: FastifyRequest,
    reply: FastifyReply,
    current: { account: Account; owner: Owner },
    clientId: string,
    kind: 'new_secret' | 'delete_app',
  ): Promise<Application | undefined> {
    if (!current.owner.twoStepOn) {
      await twoStepRequired(reply, current.account);
      return undefined;
    }
    const app = await findOwnedApplication(db(), current.account.userId, clientId);
    if (!app) {
      await notFound(reply, current.account);
      return undefined;
    }
    if (kind === 'new_secret' && !app.confidential) {
      await showList(reply, current.account, {
        error: 'That application is public: it has no secret. Edit it to make it confidential.',
        status: 400,
      });
      return undefined;
    }
    const confirmPage = `${APPS}/${encodeURIComponent(app.clientId)}/${kind === 'new_secret' ? 'new-secret' : 'delete'}`;
    if (!(await requireRecentSignIn(request, reply, { returnTo: confirmPage, cancel: APPS }))) return undefined;
    if (!isConfirmed(request.body)) {
      await sendConfirmation(reply, confirmationOf(app, kind));
      return undefined;
    }
    return app;
  }

  const confirmationOf = (app: Application, kind: 'new_secret' | 'delete_app'): Confirmation =>
    kind === 'new_secret'
      ? {
          title: `New secret for ${app.name}`,
          consequence:
            'The current secret stops working at once: every server using it fails to sign in until you give it the new one. This cannot be undone.',
          action: `${APPS}/secret`,
          name: 'new_secret',
          value: app.clientId,
          button: 'Make a new secret',
          cancel: { href: APPS, text: 'Cancel' },
        }
      : {
          title: `Delete ${app.name}`,
          consequence:
            'The application is deleted and every sign-in to it ends at once: people using it are signed out, and its client id never works again. This cannot be undone.',
          action: `${APPS}/delete`,
          name: 'delete_app',
          value: app.clientId,
          button: 'Delete the application',
          cancel: { href: APPS, text: 'Cancel' },
        };

  web.post<{ Body: Record<string, unknown> | undefined }>(`${APPS}/secret`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const app = await readyToAct(request, reply, current, field(request, 'new_secret'), 'new_secret');
    if (!app || (await onlyOnce(request, reply))) return reply;
    const outcome = await renewOwnedApplicationSecret(db(), request, current.owner, app.clientId);
    switch (outcome.kind) {
      case 'two_step_required':
        return twoStepRequired(reply, current.account);
      case 'not_found':
        return notFound(reply, current.account);
      case 'public':
        return showList(reply, current.account, {
          error: 'That application is public: it has no secret. Edit it to make it confidential.',
          status: 400,
        });
      case 'renewed':
        return showCredentials(reply, outcome.application, outcome.clientSecret, 'New secret');
    }
  });

  web.post<{ Body: Record<string, unknown> | undefined }>(`${APPS}/delete`, csrf, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    const app = await readyToAct(request, reply, current, field(request, 'delete_app'), 'delete_app');
    if (!app || (await onlyOnce(request, reply))) return reply;
    const outcome = await deleteOwnedApplication(db(), request, current.owner, app.clientId);
    switch (outcome.kind) {
      case 'two_step_required':
        return twoStepRequired(reply, current.account);
      case 'not_found':
        return notFound(reply, current.account);
      case 'deleted':
        return reply.code(303).header('location', `${APPS}?done=deleted`).send();
    }
  });

  // The confirmation pages as links: where the re-authentication page comes back to.
  for (const [path, kind] of [
    ['new-secret', 'new_secret'],
    ['delete', 'delete_app'],
  ] as const) {
    web.get<{ Params: { clientId: string } }>(`${APPS}/:clientId/${path}`, async (request, reply) => {
      const current = await signedIn(request, reply);
      if (!current) return reply;
      await readyToAct(request, reply, current, request.params.clientId, kind);
      return reply;
    });
  }

  web.get<{ Params: { clientId: string } }>(`${APPS}/:clientId`, async (request, reply) => {
    const current = await signedIn(request, reply);
    if (!current) return reply;
    if (!current.owner.twoStepOn) return twoStepRequired(reply, current.account);
    const app = await findOwnedApplication(db(), current.account.userId, request.params.clientId);
    if (!app) return notFound(reply, current.account);
    return showEdit(reply, app);
  });

  web.post<{ Params: { clientId: string }; Body: Record<string, unknown> | undefined }>(
    `${APPS}/:clientId`,
    csrf,
    async (request, reply) => {
      const current = await signedIn(request, reply);
      if (!current) return reply;
      if (await onlyOnce(request, reply)) return reply;
      const form = readApplicationForm(request);
      const outcome = await updateOwnedApplication(db(), request, current.owner, request.params.clientId, form);
      switch (outcome.kind) {
        case 'two_step_required':
          return twoStepRequired(reply, current.account);
        case 'not_found':
          return notFound(reply, current.account);
        case 'invalid': {
          const app = await findOwnedApplication(db(), current.account.userId, request.params.clientId);
          return app
            ? showEdit(reply, app, { form, errors: outcome.errors, status: 400 })
            : notFound(reply, current.account);
        }
        case 'updated':
          if (outcome.clientSecret !== null)
            return showCredentials(reply, outcome.application, outcome.clientSecret, 'Application saved');
          return reply.code(303).header('location', `${APPS}?done=updated`).send();
      }
    },
  );
}

/**
 * For the account page, once the browser is signed in: when it was sent to sign in from
 * /account/apps, sends it back there (303) and answers true. The cookie names a target from a
 * fixed list, never an address, so it cannot redirect anywhere else.
 */
export function returnAfterSignIn(request: FastifyRequest, reply: FastifyReply): boolean {
  const target = request.cookies[RETURN_COOKIE];
  if (target === undefined) return false;
  reply.clearCookie(RETURN_COOKIE, { path: '/account' });
  if (!Object.hasOwn(RETURN_TARGETS, target)) return false;
  reply.code(303).header('location', RETURN_TARGETS[target]!).header('cache-control', 'no-store').send();
  return true;
}
