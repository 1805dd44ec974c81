import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { hashSecret } from '../secrets/random-secrets.ts';
import { type Application, type ClientProof, findApplication } from './clients.ts';
import { InvalidClient, InvalidRequest } from './errors.ts';
import { readParams } from './params.ts';

/** How clients authenticate, as RFC 8414 names the methods; every endpoint that takes a client accepts each. */
export const CLIENT_AUTH_METHODS = ['none', 'client_secret_post', 'client_secret_basic'] as const;

export interface Credentials {
  clientId: string | undefined;
  clientSecret: string | undefined;
  usedBasic: boolean;
}

/** RFC 6749 §2.3.1: Basic credentials are form-encoded before base64. */
function formDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new InvalidClient('The Basic credentials are not form-encoded correctly', true);
  }
}

export function readCredentials(
  authorization: string | undefined,
  params: Record<string, string | undefined>,
): Credentials {
  const basic = authorization?.match(/^Basic\s+([A-Za-z0-9+/=]+)\s*$/i);
  if (authorization && /^Basic\b/i.test(authorization)) {
    if (!basic) throw new InvalidClient('Malformed Basic credentials', true);
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new InvalidClient('Malformed Basic credentials', true);
    if (params.client_secret !== undefined)
      throw new InvalidRequest('Use one client authentication method, not Basic and client_secret together');
    const clientId = formDecode(decoded.slice(0, colon));
    if (params.client_id !== undefined && params.client_id !== clientId)
      throw new InvalidRequest('client_id differs from the Basic credentials');
    return { clientId, clientSecret: formDecode(decoded.slice(colon + 1)), usedBasic: true };
  }
  return { clientId: params.client_id, clientSecret: params.client_secret, usedBasic: false };
}

/**
 * The credentials as a grant's own statement checks them (see authenticatedClient); undefined when
 * the client id is not well formed (authenticateClient then tells why).
 */
export function clientProof(credentials: Credentials): ClientProof | undefined {
  if (!isUuid(credentials.clientId)) return undefined;
  return {
    clientId: normalizeUuid(credentials.clientId),
    secretHash: credentials.clientSecret ? hashSecret(credentials.clientSecret) : null,
  };
}

/**
 * Identifies and authenticates the client: a confidential client must present its secret, a
 * public client must not present one; a suspended one fails until an operator restores it.
 */
export async function authenticateClient(db: Kysely<Schema>, credentials: Credentials): Promise<Application> {
  const app = await checkClientCredentials(db, credentials);
  if (app.suspendedAt !== null)
    throw new InvalidClient('This application is suspended by the operator', credentials.usedBasic);
  return app;
}

async function checkClientCredentials(db: Kysely<Schema>, credentials: Credentials): Promise<Application> {
  if (credentials.clientId === undefined || credentials.clientId === '')
    throw new InvalidRequest('client_id is required');
  const app = await findApplication(db, credentials.clientId);
  if (!app) throw new InvalidClient('Unknown client', credentials.usedBasic);
  if (app.secretHash === null) {
    if (credentials.clientSecret)
      throw new InvalidClient('This is a public client: it has no secret to send', credentials.usedBasic);
    return app;
  }
  if (!credentials.clientSecret)
    throw new InvalidClient('This client must authenticate with its client_secret', credentials.usedBasic);
  const expected = Buffer.from(app.secretHash);
  const actual = Buffer.from(hashSecret(credentials.clientSecret));
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) {
    throw new InvalidClient('Client authentication failed', credentials.usedBasic);
  }
  return app;
}

/** The client id a request claims (Basic or body), when it is a well-formed one: for the security event of a failed authentication. */
export function claimedClientId(request: FastifyRequest): string | undefined {
  try {
    const { clientId } = readCredentials(request.headers.authorization, readParams(request.body));
    return isUuid(clientId) ? normalizeUuid(clientId) : undefined;
  } catch {
    return undefined;
  }
}
