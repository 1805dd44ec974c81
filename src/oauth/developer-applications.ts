/**
 * Applications registered by their developers on /account/apps (DESIGN "Applications registered
 * by their developers"): each belongs to the user who made it, who alone can change, re-key or
 * delete it. Every operation answers an outcome union the page renders; every change is one
 * transaction and records its security event (with the owner and the client id) after it commits.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { type EventOrigin, recordSecurityEvent, type SecurityEventKind } from '../accounts/security-events.ts';
import { lockKey } from '../db/locks.ts';
import type { Schema } from '../db/schema.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';
import { type Application, oidcRegistration, toApplication } from './clients.ts';
import { isRegisteredRedirectUri, redirectUriProblem } from './redirect-uris.ts';
import { isScope, REGISTRABLE_SCOPES } from './scopes.ts';
import { endApplicationSessions, endApplicationSessionsBeyond } from './sessions.ts';

export const MAX_APPLICATIONS_PER_USER = 25;
export const NAME_LENGTH = { min: 3, max: 64 } as const;
const WEBSITE_MAX_LENGTH = 300;
const REDIRECT_URIS_MAX = 10;
const REDIRECT_URI_MAX_LENGTH = 2000;

/** Scopes only an operator grants (ref): a user's application may never ask for them. */
export const OPERATOR_ONLY_SCOPES: readonly string[] = ['users:update', 'users.private_key:read'];
/** The scopes a developer may register, in the order the form lists them; `common` is always included. */
export const DEVELOPER_SCOPES = REGISTRABLE_SCOPES.filter((scope) => !OPERATOR_ONLY_SCOPES.includes(scope));

/** What the form sent, already reduced to strings by the page (a repeated text field is ''). */
export interface ApplicationInput {
  name: string;
  website: string;
  /** The textarea: one URI a line. */
  redirectUris: string;
  scopes: readonly string[];
  confidential: boolean;
  /** OpenID Connect (absent: none): the textarea of post-logout redirect URIs, one a line. */
  postLogoutRedirectUris?: string;
  backchannelLogoutUri?: string;
  /** '' or absent: RS256. */
  idTokenAlg?: string;
}

/** Each refusal belongs to one input of the form. */
export type FieldErrors = Partial<
  Record<
    | 'name'
    | 'website'
    | 'redirect_uri'
    | 'scope'
    | 'post_logout_redirect_uri'
    | 'backchannel_logout_uri'
    | 'id_token_signed_response_alg',
    string
  >
>;

/** The developer: only a user with two-step verification on may register or change applications. */
export interface Owner {
  userId: string;
  twoStepOn: boolean;
}

interface ValidApplication {
  name: string;
  website: string | null;
  redirectUris: string[];
  scopes: string[];
  confidential: boolean;
  /** OpenID Connect's registration, as stored. */
  oidc: Pick<
    Schema['applications'],
    'post_logout_redirect_uris' | 'backchannel_logout_uri' | 'id_token_signed_response_alg'
  >;
}

/** Control characters, line separators and bidirectional overrides (which could make a name read as another on the consent page). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

/** Checks every input at once, so the page can show each error next to its input. */
export function validateApplication(
  input: ApplicationInput,
): { ok: true; value: ValidApplication } | { ok: false; errors: FieldErrors } {
  const errors: FieldErrors = {};

  const name = input.name.trim();
  const nameLength = [...name].length;
  if (CONTROL.test(name)) errors.name = 'The name must not contain control characters.';
  else if (nameLength < NAME_LENGTH.min || nameLength > NAME_LENGTH.max)
    errors.name = `The name must be ${NAME_LENGTH.min} to ${NAME_LENGTH.max} characters long.`;

  let website: string | null = null;
  const typedWebsite = input.website.trim();
  if (typedWebsite !== '') {
    const url =
      URL.canParse(typedWebsite) && !/[\u0000-\u0020\u007f]/.test(typedWebsite) ? new URL(typedWebsite) : undefined;
    if (url?.protocol !== 'https:' || url.hostname === '' || url.username || url.password) {
      errors.website = 'The website must be an https:// address, such as https://example.com.';
    } else if (url.href.length > WEBSITE_MAX_LENGTH) {
      errors.website = `The website address must be at most ${WEBSITE_MAX_LENGTH} characters long.`;
    } else {
      website = url.href;
    }
  }

  const redirectUris = [
    ...new Set(
      input.redirectUris
        .split(/\r\n|\r|\n/)
        .map((line) => line.trim())
        .filter((line) => line !== ''),
    ),
  ];
  if (redirectUris.length > REDIRECT_URIS_MAX) {
    errors.redirect_uri = `At most ${REDIRECT_URIS_MAX} redirect URIs.`;
  } else {
    for (const uri of redirectUris) {
      const problem =
        uri.length > REDIRECT_URI_MAX_LENGTH
          ? `A redirect URI must be at most ${REDIRECT_URI_MAX_LENGTH} characters long`
          : redirectUriProblem(uri, 'developer');
      if (problem) {
        errors.redirect_uri = `${problem}.`;
        break;
      }
    }
  }

  const scopes = new Set<string>(['common']);
  for (const scope of input.scopes) {
    if (OPERATOR_ONLY_SCOPES.includes(scope)) {
      errors.scope = `The scope ${scope} is granted by the operator only.`;
      break;
    }
    if (!isScope(scope)) {
      errors.scope = `There is no scope ${JSON.stringify(scope.slice(0, 40))}.`;
      break;
    }
    scopes.add(scope);
  }

  const postLogoutRedirectUris = (input.postLogoutRedirectUris ?? '')
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  if (postLogoutRedirectUris.length > REDIRECT_URIS_MAX)
    errors.post_logout_redirect_uri = `At most ${REDIRECT_URIS_MAX} post-logout redirect URIs.`;
  if (postLogoutRedirectUris.some((uri) => uri.length > REDIRECT_URI_MAX_LENGTH))
    errors.post_logout_redirect_uri = `A post-logout redirect URI must be at most ${REDIRECT_URI_MAX_LENGTH} characters long.`;
  const backchannelLogoutUri = (input.backchannelLogoutUri ?? '').trim();
  if (backchannelLogoutUri.length > REDIRECT_URI_MAX_LENGTH)
    errors.backchannel_logout_uri = `The back-channel logout URI must be at most ${REDIRECT_URI_MAX_LENGTH} characters long.`;
  const oidc = oidcRegistration(
    { postLogoutRedirectUris, backchannelLogoutUri, idTokenAlg: input.idTokenAlg ?? '' },
    'developer',
  );
  if (!oidc.ok) {
    if (oidc.errors.postLogoutRedirectUris)
      errors.post_logout_redirect_uri ??= `${oidc.errors.postLogoutRedirectUris}.`;
    if (oidc.errors.backchannelLogoutUri) errors.backchannel_logout_uri ??= `${oidc.errors.backchannelLogoutUri}.`;
    if (oidc.errors.idTokenAlg) errors.id_token_signed_response_alg = `${oidc.errors.idTokenAlg}.`;
  }

  if (Object.keys(errors).length > 0 || !oidc.ok) return { ok: false, errors };
  return {
    ok: true,
    value: {
      name,
      website,
      redirectUris,
      scopes: DEVELOPER_SCOPES.filter((scope) => scopes.has(scope)),
      confidential: input.confidential,
      oidc: oidc.columns,
    },
  };
}

export type CreateOutcome =
  | { kind: 'created'; application: Application; clientSecret: string | null }
  | { kind: 'invalid'; errors: FieldErrors }
  | { kind: 'limit_reached' }
  | { kind: 'two_step_required' };

export type UpdateOutcome =
  | {
      kind: 'updated';
      application: Application /** A new secret when the application became confidential. */;
      clientSecret: string | null;
    }
  | { kind: 'invalid'; errors: FieldErrors }
  | { kind: 'not_found' }
  | { kind: 'two_step_required' };

export type RenewOutcome =
  | { kind: 'renewed'; application: Application; clientSecret: string }
  | { kind: 'public' }
  | { kind: 'not_found' }
  | { kind: 'two_step_required' };

export type DeleteOutcome =
  | { kind: 'deleted'; application: Application; sessionsEnded: number }
  | { kind: 'not_found' }
  | { kind: 'two_step_required' };

const ownedQuery = (db: Kysely<Schema>, ownerId: string, clientId: string) =>
  db.selectFrom('applications').selectAll().where('client_id', '=', clientId).where('owner_id', '=', ownerId);

/** The owner's applications, oldest first. */
export async function listOwnedApplications(db: Kysely<Schema>, ownerId: string): Promise<Application[]> {
  const rows = await db
    .selectFrom('applications')
    .selectAll()
    .where('owner_id', '=', ownerId)
    .orderBy('created_at')
    .orderBy('client_id')
    .execute();
  return rows.map(toApplication);
}

/** One application of the owner; undefined for an unknown id and for another user's (the same answer). */
export async function findOwnedApplication(
  db: Kysely<Schema>,
  ownerId: string,
  clientId: unknown,
): Promise<Application | undefined> {
  if (!isUuid(clientId)) return undefined;
  const row = await ownedQuery(db, ownerId, normalizeUuid(clientId)).executeTakeFirst();
  return row && toApplication(row);
}

/**
 * Registers an application for the owner. The count of the owner's applications and the insert
 * run in one transaction under a lock on the owner, so a burst of simultaneous creates never
 * passes the limit.
 */
export async function createOwnedApplication(
  db: Kysely<Schema>,
  origin: EventOrigin,
  owner: Owner,
  input: ApplicationInput,
): Promise<CreateOutcome> {
  if (!owner.twoStepOn) return { kind: 'two_step_required' };
  const checked = validateApplication(input);
  if (!checked.ok) return { kind: 'invalid', errors: checked.errors };
  const app = checked.value;
  const clientSecret = app.confidential ? newSecret() : null;
  const row: Schema['applications'] = {
    client_id: randomUUID(),
    name: app.name,
    redirect_uris: JSON.stringify(app.redirectUris),
    scopes: app.scopes.join(' '),
    secret_hash: clientSecret === null ? null : hashSecret(clientSecret),
    created_at: Date.now(),
    owner_id: owner.userId,
    website: app.website,
    ...app.oidc,
    suspended_at: null,
  };
  const created = await db.transaction().execute(async (trx) => {
    await lockKey(trx, `applications-of:${owner.userId}`);
    const { count } = await trx
      .selectFrom('applications')
      .select((eb) => eb.fn.countAll().as('count'))
      .where('owner_id', '=', owner.userId)
      .executeTakeFirstOrThrow();
    if (Number(count) >= MAX_APPLICATIONS_PER_USER) return false;
    await trx.insertInto('applications').values(row).execute();
    return true;
  });
  if (!created) return { kind: 'limit_reached' };
  await record(db, origin, 'application_created', owner, row.client_id, {
    name: app.name,
    confidential: app.confidential,
    via: 'account',
  });
  return { kind: 'created', application: toApplication(row), clientSecret };
}

/**
 * Changes an application of the owner. What it no longer allows ends at once: sessions holding a
 * scope taken away, every session when it changes kind (public ⇄ confidential), and pending
 * sign-ins and unused codes bound to a redirect URI taken away. Becoming confidential gives it a
 * secret (shown once); becoming public drops the secret.
 */
export async function updateOwnedApplication(
  db: Kysely<Schema>,
  origin: EventOrigin,
  owner: Owner,
  clientId: unknown,
  input: ApplicationInput,
): Promise<UpdateOutcome> {
  if (!owner.twoStepOn) return { kind: 'two_step_required' };
  if (!isUuid(clientId)) return { kind: 'not_found' };
  const id = normalizeUuid(clientId);
  const checked = validateApplication(input);
  if (!checked.ok) return { kind: 'invalid', errors: checked.errors };
  const app = checked.value;
  const outcome = await db.transaction().execute(async (trx) => {
    await lockKey(trx, `application:${id}`);
    const current = await ownedQuery(trx, owner.userId, id).executeTakeFirst();
    if (!current) return undefined;
    const wasConfidential = current.secret_hash !== null;
    const clientSecret = app.confidential && !wasConfidential ? newSecret() : null;
    const secretHash = !app.confidential
      ? null
      : clientSecret !== null
        ? hashSecret(clientSecret)
        : current.secret_hash;
    const changes = {
      name: app.name,
      website: app.website,
      redirect_uris: JSON.stringify(app.redirectUris),
      scopes: app.scopes.join(' '),
      ...app.oidc,
      secret_hash: secretHash,
    };
    await trx.updateTable('applications').set(changes).where('client_id', '=', id).execute();
    const sessionsEnded =
      wasConfidential !== app.confidential
        ? await endApplicationSessions(trx, id)
        : await endApplicationSessionsBeyond(trx, id, app.scopes);
    await endAuthorizationsOutside(trx, id, app.redirectUris);
    return { application: toApplication({ ...current, ...changes }), clientSecret, sessionsEnded };
  });
  if (!outcome) return { kind: 'not_found' };
  await record(db, origin, 'application_updated', owner, id, {
    name: app.name,
    confidential: app.confidential,
    sessions_ended: outcome.sessionsEnded,
    via: 'account',
  });
  if (outcome.clientSecret !== null)
    await record(db, origin, 'application_secret_renewed', owner, id, {
      via: 'account',
      reason: 'became_confidential',
    });
  return { kind: 'updated', application: outcome.application, clientSecret: outcome.clientSecret };
}

/** Gives a confidential application of the owner a new secret; the old one stops working at once. */
export async function renewOwnedApplicationSecret(
  db: Kysely<Schema>,
  origin: EventOrigin,
  owner: Owner,
  clientId: unknown,
): Promise<RenewOutcome> {
  if (!owner.twoStepOn) return { kind: 'two_step_required' };
  const current = await findOwnedApplication(db, owner.userId, clientId);
  if (!current) return { kind: 'not_found' };
  if (!current.confidential) return { kind: 'public' };
  const clientSecret = newSecret();
  const result = await db
    .updateTable('applications')
    .set({ secret_hash: hashSecret(clientSecret) })
    .where('client_id', '=', current.clientId)
    .where('owner_id', '=', owner.userId)
    .where('secret_hash', 'is not', null)
    .executeTakeFirst();
  // Deleted or made public in between: nothing was renewed.
  if (result.numUpdatedRows === 0n) return { kind: 'not_found' };
  await record(db, origin, 'application_secret_renewed', owner, current.clientId, { via: 'account' });
  return { kind: 'renewed', application: current, clientSecret };
}

/** Deletes an application of the owner with every session, pending sign-in and code issued to it, in one transaction. */
export async function deleteOwnedApplication(
  db: Kysely<Schema>,
  origin: EventOrigin,
  owner: Owner,
  clientId: unknown,
): Promise<DeleteOutcome> {
  if (!owner.twoStepOn) return { kind: 'two_step_required' };
  if (!isUuid(clientId)) return { kind: 'not_found' };
  const id = normalizeUuid(clientId);
  const outcome = await db.transaction().execute(async (trx) => {
    await lockKey(trx, `application:${id}`);
    const current = await ownedQuery(trx, owner.userId, id).executeTakeFirst();
    if (!current) return undefined;
    const sessionsEnded = await endApplicationSessions(trx, id);
    await trx.deleteFrom('interactions').where('client_id', '=', id).execute();
    await trx.deleteFrom('authorization_codes').where('client_id', '=', id).execute();
    await trx.deleteFrom('device_authorizations').where('client_id', '=', id).execute();
    await trx.deleteFrom('applications').where('client_id', '=', id).execute();
    return { application: toApplication(current), sessionsEnded };
  });
  if (!outcome) return { kind: 'not_found' };
  await record(db, origin, 'application_deleted', owner, id, {
    name: outcome.application.name,
    sessions_ended: outcome.sessionsEnded,
    via: 'account',
  });
  return { kind: 'deleted', ...outcome };
}

/** Ends the pending browser sign-ins and unused codes of an application whose redirect URI is not (any more) among `redirectUris`. */
async function endAuthorizationsOutside(
  trx: Transaction<Schema>,
  clientId: string,
  redirectUris: readonly string[],
): Promise<void> {
  const interactions = await trx
    .selectFrom('interactions')
    .select(['interaction_hash', 'redirect_uri'])
    .where('client_id', '=', clientId)
    .where('redirect_uri', 'is not', null)
    .execute();
  const staleInteractions = interactions
    .filter((row) => !isRegisteredRedirectUri(redirectUris, row.redirect_uri!))
    .map((row) => row.interaction_hash);
  if (staleInteractions.length > 0)
    await trx.deleteFrom('interactions').where('interaction_hash', 'in', staleInteractions).execute();
  const codes = await trx
    .selectFrom('authorization_codes')
    .select(['code_hash', 'redirect_uri'])
    .where('client_id', '=', clientId)
    .where('used_at', 'is', null)
    .execute();
  const staleCodes = codes
    .filter((row) => !isRegisteredRedirectUri(redirectUris, row.redirect_uri))
    .map((row) => row.code_hash);
  if (staleCodes.length > 0) await trx.deleteFrom('authorization_codes').where('code_hash', 'in', staleCodes).execute();
}

function record(
  db: Kysely<Schema>,
  origin: EventOrigin,
  kind: SecurityEventKind,
  owner: Owner,
  clientId: string,
  details: Record<string, string | number | boolean>,
) {
  return recordSecurityEvent(db, origin, { kind, userId: owner.userId, clientId, details });
}
