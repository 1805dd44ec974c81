// What every peer storage module gives bench/peer-oidc-provider.ts: the adapter factory
// node-oidc-provider is configured with, and a close that removes what the run stored.
import type { AdapterFactory } from 'oidc-provider';

export interface PeerStorage {
  adapter: AdapterFactory;
  /** The storage's durability settings as measured, for the row's note. */
  describe: string;
  close(): Promise<void>;
}

/**
 * The model types of the maintainers' contributed knex adapter: the second half of the
 * (id, type) key of the SQL peers' one table.
 */
export const MODEL_TYPES: Record<string, number> = Object.fromEntries(
  [
    'Session',
    'AccessToken',
    'AuthorizationCode',
    'RefreshToken',
    'DeviceCode',
    'ClientCredentials',
    'Client',
    'InitialAccessToken',
    'RegistrationAccessToken',
    'Interaction',
    'ReplayDetection',
    'PushedAuthorizationRequest',
    'Grant',
    'BackchannelAuthenticationRequest',
  ].map((name, index) => [name, index + 1]),
);

/** The model's type number; a model the knex list predates (oidc-provider 9 has a few) gets the next free one. */
export function modelType(name: string): number {
  MODEL_TYPES[name] ??= Object.keys(MODEL_TYPES).length + 1;
  return MODEL_TYPES[name];
}

/** Seconds from now to milliseconds since the epoch, as the SQL peers store expiry. */
export const expiresAt = (expiresIn: number | undefined) => (expiresIn ? Date.now() + expiresIn * 1000 : null);
