import { randomUUID } from 'node:crypto';
import type { Kysely, QueryCreator } from 'kysely';
import { reusableQuery } from '../db/reusable-query.ts';
import type { Schema } from '../db/schema.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { hashSecret, newSecret } from '../secrets/random-secrets.ts';
import { redirectUriProblem } from './redirect-uris.ts';
import { parseScopes } from './scopes.ts';

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
  /** When an operator suspended it; null when it is not suspended. */
  suspendedAt: number | null;
}

export interface NewApplication {
  name: string;
  redirectUris: string[];
  scopes: string[];
  confidential: boolean;
}

export class InvalidApplicationError extends Error {}

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
    suspendedAt: row.suspended_at === null ? null : Number(row.suspended_at),
  };
}
