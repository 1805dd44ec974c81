import { randomUUID } from 'node:crypto';
import type { Kysely, QueryCreator } from 'kysely';
import { reusableQuery } from '../db/reusable-query.ts';
import type { Schema } from '../db/schema.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';
import { backchannelLogoutUriProblem, redirectUriProblem } from './redirect-uris.ts';
import { parseScopes } from './scopes.ts';
import { isSigningAlg, SIGNING_ALGS, type SigningAlg } from './signing-algs.ts';

/** A registered application (an OAuth client). */
export interface Application {
  clientId: string;
  name: string;
  redirectUris: string[];
  scopes: string[];
  confidential: boolean;
  secretHash: string | null;
  /** The user who registered it (/account/apps); null for the operator's. */
  ownerId: string | null;
  /** An https URL, or null. */
  website: string | null;
  createdAt: number;
  /** OpenID Connect: where RP-initiated logout may return to (exact URIs, as redirect URIs). */
  postLogoutRedirectUris: string[];
  /** OpenID Connect: where back-channel logout tokens go; null: none. */
  backchannelLogoutUri: string | null;
  /** OpenID Connect: the ID token's algorithm (RS256 unless chosen). */
  idTokenAlg: SigningAlg;
  /** When an operator suspended it; null when it is not suspended. */
  suspendedAt: number | null;
}

export interface NewApplication {
  name: string;
  redirectUris: string[];
  scopes: string[];
  confidential: boolean;
  postLogoutRedirectUris?: string[];
  backchannelLogoutUri?: string | null;
  idTokenAlg?: string | null;
}

export class InvalidApplicationError extends Error {}

/** OpenID Connect's registration fields, as given: each one's problem, or the columns to store. */
export function oidcRegistration(
  input: { postLogoutRedirectUris?: string[]; backchannelLogoutUri?: string | null; idTokenAlg?: string | null },
  registeredBy: 'operator' | 'developer',
):
  | {
      ok: true;
      columns: Pick<
        Schema['applications'],
        'post_logout_redirect_uris' | 'backchannel_logout_uri' | 'id_token_signed_response_alg'
      >;
    }
  | { ok: false; errors: { postLogoutRedirectUris?: string; backchannelLogoutUri?: string; idTokenAlg?: string } } {
  const errors: { postLogoutRedirectUris?: string; backchannelLogoutUri?: string; idTokenAlg?: string } = {};
  const postLogout = [...new Set(input.postLogoutRedirectUris ?? [])];
  for (const uri of postLogout) {
    const problem = redirectUriProblem(uri, registeredBy);
    if (problem) {
      errors.postLogoutRedirectUris = `Post-logout ${problem.charAt(0).toLowerCase()}${problem.slice(1)}`;
      break;
    }
  }
  const backchannel = input.backchannelLogoutUri ? input.backchannelLogoutUri : null;
  if (backchannel !== null) {
    const problem = backchannelLogoutUriProblem(backchannel);
    if (problem) errors.backchannelLogoutUri = problem;
  }
  const alg = input.idTokenAlg ? input.idTokenAlg : null;
  if (alg !== null && !isSigningAlg(alg))
    errors.idTokenAlg = `The ID token algorithm must be one of ${SIGNING_ALGS.join(', ')}`;
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return {
    ok: true,
    columns: {
      post_logout_redirect_uris: postLogout.length === 0 ? null : JSON.stringify(postLogout),
      backchannel_logout_uri: backchannel,
      id_token_signed_response_alg: alg,
    },
  };
}

/** Registers an application; a confidential one gets a secret, returned once and stored hashed. */
export async function createApplication(
  db: Kysely<Schema>,
  app: NewApplication,
): Promise<{ clientId: string; clientSecret: string | null }> {
  if (app.name.trim() === '') throw new InvalidApplicationError('The application needs a name');
  if (app.redirectUris.length === 0)
    throw new InvalidApplicationError('The application needs at least one redirect URI');
  for (const uri of app.redirectUris) {
    const problem = redirectUriProblem(uri, 'operator');
    if (problem) throw new InvalidApplicationError(problem);
  }
  parseScopes(app.scopes.join(' '));
  const oidc = oidcRegistration(app, 'operator');
  if (!oidc.ok) throw new InvalidApplicationError(Object.values(oidc.errors)[0]);
  const clientId = randomUUID();
  const clientSecret = app.confidential ? newSecret() : null;
  await db
    .insertInto('applications')
    .values({
      client_id: clientId,
      name: app.name.trim(),
      redirect_uris: JSON.stringify(app.redirectUris),
      scopes: [...new Set(app.scopes)].join(' '),
      secret_hash: clientSecret === null ? null : hashSecret(clientSecret),
      created_at: Date.now(),
      owner_id: null,
      website: null,
      ...oidc.columns,
    })
    .execute();
  return { clientId, clientSecret };
}

const applicationById = reusableQuery((db: Kysely<Schema>, { clientId }: { clientId: string }) =>
  db.selectFrom('applications').selectAll().where('client_id', '=', clientId),
);

/** A client's credentials as a statement checks them: its id, and the hash its stored secret must equal (null: no secret). */
export type ClientProof = {
  clientId: string;
  secretHash: string | null;
};

/**
 * The application `clientId`, if `secretHash` is the hash of its secret or both are null (a public
 * client that sends none), and it is not suspended: authenticateClient's rule as a subquery, for a grant that checks the
 * client in its own statement (an EXISTS of this). Comparing hashes of the presented secret in SQL
 * tells a timing observer nothing about the stored secret.
 */
export const authenticatedClient = (db: QueryCreator<Schema>, { clientId, secretHash }: ClientProof) =>
  db
    .selectFrom('applications')
    .select('client_id')
    .where('client_id', '=', clientId)
    .where('secret_hash', 'is not distinct from', secretHash)
    .where('suspended_at', 'is', null);

export async function findApplication(db: Kysely<Schema>, clientId: unknown): Promise<Application | undefined> {
  if (!isUuid(clientId)) return undefined;
  const [row] = await applicationById(db, { clientId: normalizeUuid(clientId) });
  return row && toApplication(row);
}

export async function listApplications(db: Kysely<Schema>): Promise<Application[]> {
  const rows = await db.selectFrom('applications').selectAll().orderBy('created_at').orderBy('client_id').execute();
  return rows.map(toApplication);
}

export async function deleteApplication(db: Kysely<Schema>, clientId: string): Promise<boolean> {
  if (!isUuid(clientId)) return false;
  const result = await db
    .deleteFrom('applications')
    .where('client_id', '=', normalizeUuid(clientId))
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export function toApplication(row: Schema['applications']): Application {
  return {
    clientId: row.client_id,
    name: row.name,
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    scopes: row.scopes.split(' ').filter(Boolean),
    confidential: row.secret_hash !== null,
    secretHash: row.secret_hash,
    ownerId: row.owner_id,
    website: row.website,
    createdAt: Number(row.created_at),
    postLogoutRedirectUris:
      row.post_logout_redirect_uris === null ? [] : (JSON.parse(row.post_logout_redirect_uris) as string[]),
    backchannelLogoutUri: row.backchannel_logout_uri,
    idTokenAlg: isSigningAlg(row.id_token_signed_response_alg) ? row.id_token_signed_response_alg : 'RS256',
    suspendedAt: row.suspended_at === null ? null : Number(row.suspended_at),
  };
}
