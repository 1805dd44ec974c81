/**
 * @simplewebauthn/server with its helpers, loaded on the first passkey ceremony rather than at
 * start: with the X.509 and ASN.1 libraries under it, it is ~1.3 MiB of the server's idle memory,
 * held for nothing by a server whose users do not use passkeys. The first ceremony waits for the
 * load (~50 ms); the rest find it loaded.
 */
export type WebAuthnHelpers = typeof import('@simplewebauthn/server/helpers');
export type WebAuthn = typeof import('@simplewebauthn/server') & WebAuthnHelpers;

let loading: Promise<WebAuthn> | undefined;

export function webauthn(): Promise<WebAuthn> {
  loading ??= Promise.all([import('@simplewebauthn/server'), import('@simplewebauthn/server/helpers')]).then(
    ([server, helpers]) => ({ ...server, ...helpers }),
  );
  return loading;
}
