import type { Kysely } from 'kysely';
import type { EventOrigin } from '../../accounts/security-events.ts';
import type { Schema } from '../../db/schema.ts';
import type { Application, ClientProof } from '../clients.ts';
import { InvalidRequest } from '../errors.ts';

/** What every grant gets: the database, the request's parameters and the authenticated client. */
export interface GrantContext {
  db: Kysely<Schema>;
  params: Record<string, string | undefined>;
  client: Application;
  now: number;
  /** The request, for security events (its IP and logger). */
  origin?: EventOrigin;
}

/**
 * What a grant that authenticates the client in its own first statement gets (see
 * token-endpoint.ts): the client's credentials instead of the authenticated client.
 */
export interface FoldedGrantContext extends Omit<GrantContext, 'client' | 'origin'> {
  client: ClientProof;
}

export function required(params: GrantContext['params'], name: string): string {
  const value = params[name];
  if (value === undefined || value === '') throw new InvalidRequest(`${name} is required`);
  return value;
}
