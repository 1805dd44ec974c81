/** The algorithms ID tokens are signed with: RS256 is every OpenID Provider's; ES256 and EdDSA an application may choose. */
export const SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];
export const isSigningAlg = (value: unknown): value is SigningAlg =>
  typeof value === 'string' && (SIGNING_ALGS as readonly string[]).includes(value);
