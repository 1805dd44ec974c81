import { InvalidScope } from './errors.ts';

/** Every scope, with the words the consent page uses for it. */
export const SCOPES = {
  openid: 'Sign you in to it with your account here (it learns your user id and when you signed in)',
  profile: 'See your username',
  email: 'See your e-mail address',
  common: 'Use common features, such as game information',
  'users:read': 'See your account and other users',
  'users:update': 'Change your username and public key',
  'users.private_key:read': 'Read your private key, which unlocks your encrypted project parts and cloud files',
  'monitor:read': 'See your server-monitoring data',
  'monitor:write': 'Change your server-monitoring data: servers, groups, bans and scripts',
} as const;

export type Scope = keyof typeof SCOPES;

export const isScope = (value: string): value is Scope => Object.hasOwn(SCOPES, value);

/**
 * OpenID Connect's scopes: who the person is, nothing of their data here. Any application may ask
 * for them (as for common), so every standard relying party signs people in unchanged.
 */
export const IDENTITY_SCOPES: readonly string[] = ['openid', 'profile', 'email'];
/** The scopes an application registers for: every other one. */
export const REGISTRABLE_SCOPES = (Object.keys(SCOPES) as Scope[]).filter((scope) => !IDENTITY_SCOPES.includes(scope));

/** Splits a space-separated scope string; unknown scopes are invalid_scope. */
export function parseScopes(text: string): Scope[] {
  const scopes = text.split(' ').filter(Boolean);
  const unknown = scopes.find((scope) => !isScope(scope));
  if (unknown !== undefined) throw new InvalidScope(`Unknown scope ${unknown}`);
  return scopes as Scope[];
}

/**
 * The scope to grant: what was asked (plus common, always granted), each one registered for
 * the application (or an identity scope). Sorted so equal sets compare equal as strings.
 */
export function grantableScope(requested: string, registered: readonly string[]): string {
  const scopes = new Set<string>(parseScopes(requested));
  const notAllowed = [...scopes].find(
    (scope) => scope !== 'common' && !IDENTITY_SCOPES.includes(scope) && !registered.includes(scope),
  );
  if (notAllowed !== undefined)
    throw new InvalidScope(`This application is not registered for the scope ${notAllowed}`);
  scopes.add('common');
  return [...scopes].sort().join(' ');
}

export const scopeList = (scope: string) => scope.split(' ').filter(Boolean);
